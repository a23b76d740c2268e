#!/bin/sh
# SPDX-License-Identifier: MIT
# Every integrations/*/build.sh takes the same command line (the parser in
# common/build-args.sh): --help exits 0 with a usage of the same shape (the
# same option lines and exit statuses once the allocator's name is taken
# out; its default source is its own), and a bad option, a missing value, a bad job count (-j or $JOBS),
# a source that does not exist or a second OUTDIR exit 2 before anything
# is built: nothing on stdout, no OUTDIR made.  Builds nothing: no network,
# well under a second.
# usage: test-build-args.sh BUILD_SH...
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "test-build-args: $script: $*" >&2; fail=1; }

first=""
for script in "$@"; do
	alloc=$(basename "$(dirname "$script")")
	rc=0
	"$script" --help >"$tmp/help" 2>"$tmp/err" </dev/null || rc=$?
	if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then
		bad "--help: exit status $rc, stderr '$(head -n 1 "$tmp/err")'"
		continue
	fi
	# the shape: the usage line, the shared options, the exit statuses
	# (the default source, the -s line's continuation, is each one's own)
	sed -n '1,/^  -h, --help /p' "$tmp/help" | sed '/^  -s, --source /,/^  -l, /{/^  -[sl], /!d}' |
		sed "s/$alloc/ALLOC/g; 1s/\[-- [A-Z_]*\.\.\.\]/[-- ARGS...]/" >"$tmp/shape.$alloc"
	sed -n '/^Exit status:/,$p' "$tmp/help" >>"$tmp/shape.$alloc"
	head -n 1 "$tmp/shape.$alloc" | grep -q '^usage: build.sh \[OPTIONS\] \[OUTDIR\] \[-- ARGS...\]$' ||
		bad "the first line is not the shared usage: '$(head -n 1 "$tmp/help")'"
	for opt in '-s, --source SOURCE' '-l, --libpurge DIR' '-o, --out OUTDIR' \
		'-j, --jobs JOBS' '    --stock' '    --install PREFIX' '-h, --help'; do
		grep -qF -- "  $opt " "$tmp/shape.$alloc" || bad "--help does not list '$opt'"
	done
	grep -q '^Exit status: 0 built; 1 .*; 2 bad$' "$tmp/shape.$alloc" ||
		bad "no exit status paragraph"
	if [ -z "$first" ]; then
		first=$alloc
	elif ! diff -u "$tmp/shape.$first" "$tmp/shape.$alloc" >"$tmp/diff"; then
		bad "its usage differs from $first's build.sh:"
		cat "$tmp/diff" >&2
	fi

	# bad usage: exit status 2, a message, nothing on stdout, no OUTDIR
	out=$tmp/out.$alloc
	# a source with nothing in it: should a case be taken for a build, it
	# fails at once instead of downloading or building anything
	mkdir -p "$tmp/empty"
	for args in "--no-such-option" "-j x" "--jobs=0" "-j" "--source" \
		"--source $tmp/no/such/source" "--install=" "$out.a $out.b"; do
		rc=0
		# shellcheck disable=SC2086 # the words of $args
		"$script" -s "$tmp/empty" -o "$out" $args >"$tmp/stdout" 2>"$tmp/err" </dev/null || rc=$?
		if [ "$rc" -ne 2 ]; then
			bad "'$args': exit status $rc, not 2"
		elif [ -s "$tmp/stdout" ] || [ ! -s "$tmp/err" ]; then
			bad "'$args': something on stdout, or no message on stderr"
		elif [ -e "$out" ] || [ -e "$out.a" ]; then
			bad "'$args': it made its OUTDIR before refusing"
		fi
	done
	rc=0
	JOBS=many "$script" -s "$tmp/empty" -o "$out" >/dev/null 2>&1 </dev/null || rc=$?
	[ "$rc" -eq 2 ] || bad "JOBS=many: exit status $rc, not 2"
	[ $fail -ne 0 ] || echo "test-build-args: $alloc: --help and bad usage as shared"
done
[ -n "$first" ] || { echo "test-build-args: no build.sh given" >&2; exit 1; }

# build_key and build_reuse (sourced from build-args.sh beside this script,
# in a bash, as build.sh does): a build is taken as it is only when nothing
# it is made of changed, and never with --rebuild
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$tmp/in" && echo a >"$tmp/in/f" && echo lib >"$tmp/lib"
if ! HERE=$here T=$tmp bash -c '
	set -eu; . "$HERE/build-args.sh"; rebuild=0 prefix=""
	k1=$(build_key w -- "$T/in"); build_stamp "$T/stamp" "$k1"
	[ "$(build_key w -- "$T/in")" = "$k1" ] || { echo "the same inputs, another key"; exit 1; }
	[ "$(build_key w2 -- "$T/in")" != "$k1" ] || { echo "another option, the same key"; exit 1; }
	[ "$(CC=clang build_key w -- "$T/in")" != "$k1" ] || { echo "another CC, the same key"; exit 1; }
	echo b >"$T/in/f"
	[ "$(build_key w -- "$T/in")" != "$k1" ] || { echo "a changed file, the same key"; exit 1; }
	[ "$(build_reuse "$T/stamp" "$T/lib" "$k1" 2>/dev/null; echo no)" = "$T/lib" ] ||
		{ echo "the same key: not reused"; exit 1; }
	rebuild=1; [ "$(build_reuse "$T/stamp" "$T/lib" "$k1" 2>/dev/null; echo no)" = no ] ||
		{ echo "--rebuild: reused"; exit 1; }
	[ ! -e "$T/stamp" ] || { echo "--rebuild left the stamp"; exit 1; }
' >"$tmp/reuse" 2>&1; then
	echo "test-build-args: build_reuse: $(cat "$tmp/reuse")" >&2
	fail=1
else
	echo "test-build-args: build_key and build_reuse: a changed input, option, CC or --rebuild builds again"
fi
exit $fail
