#!/bin/sh
# SPDX-License-Identifier: MIT
# Every tool answers --help with its own usage and nothing else: exit
# status 0, a first line "usage: NAME ..." on stdout where NAME is the
# program's own name (a path ending in it), and nothing written to the
# working directory (no run, no results/).
# usage: test-help.sh PROGRAM...
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "test-help: $prog --help: $*" >&2; fail=1; }

for prog in "$@"; do
	case $prog in /*) ;; *) prog=$PWD/$prog ;; esac
	name=$(basename "$prog")
	rm -rf "$tmp/cwd" && mkdir "$tmp/cwd"
	rc=0
	(cd "$tmp/cwd" && exec "$prog" --help) >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	# shellcheck disable=SC2046 # the first line's words
	set -- $(head -n 1 "$tmp/out")
	if [ "$rc" -ne 0 ]; then
		bad "exit status $rc, not 0 ($(head -n 1 "$tmp/err"))"
	elif [ "${1-}" != usage: ] || [ "$(basename "${2-}")" != "$name" ]; then
		bad "the first line is not its usage: '$(head -n 1 "$tmp/out")'"
	elif [ -n "$(ls -A "$tmp/cwd")" ]; then
		bad "it wrote $(ls -A "$tmp/cwd" | tr '\n' ' ')"
	else
		echo "test-help: $name: $(head -n 1 "$tmp/out")"
	fi
done
exit $fail
