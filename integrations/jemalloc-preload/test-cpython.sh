#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-cpython.sh SHIM: CPython's own test_threading, the cases that fork
# from a thread and end threads while the process goes on (ThreadJoinOnShutdown
# and the *fork* tests: each ends a thread with pthread_exit, and a child
# forked from a thread ends when that thread ends), under jemalloc alone
# and under the shim.  Fails when the run under the shim hangs (a child
# that never ends: support.wait_process gives up after 30 s) or any test
# ends otherwise than under jemalloc alone.  A few seconds each.
# Exit 77 (meson: skipped) without libjemalloc.so.2, or without a python3
# that has its test package (Debian: python3 and libpython3.11-testsuite);
# $PYTHON names one to use.
set -u

# absolute: regrtest runs its tests in a directory of its own
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
# shellcheck source=find-jemalloc.sh
. "${0%/*}/find-jemalloc.sh"

py=
for p in ${PYTHON:-} /usr/bin/python3 python3; do
	if "$p" -c 'import test.support, test.test_threading' >/dev/null 2>&1; then
		py=$p
		break
	fi
done
if [ -z "$py" ]; then
	echo "SKIP: no python3 with CPython's test package (Debian: apt-get install python3 libpython3.11-testsuite; or set PYTHON)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

# The shim must serve this python (a non-PIE one takes malloc's address).
out=$(env LD_PRELOAD="$shim $je" PURGE_JEMALLOC_VERBOSE=1 "$py" -c pass 2>&1)
echo "$out" | grep -q 'shim active' || { echo "FAIL: the shim is not active in $py: $out"; exit 1; }

# run NAME PRELOAD: the subset, verbose; its status, and the outcome of
# each test (name and result) in NAME.res.  regrtest's own timeout dumps
# the stacks of a hung test and ends the run; the outer one is a backstop.
# timeout(1) runs it in a process group of its own: what is left of that
# group afterwards (a hung child) is killed.
run() {
	timeout -s KILL 300 env LD_PRELOAD="$2" "$py" -m test test_threading -v --timeout 60 \
		-m ThreadJoinOnShutdown -m '*fork*' >"$tmp/$1.log" 2>&1 &
	pid=$!
	wait "$pid"
	rc=$?
	kill -KILL -- -"$pid" 2>/dev/null
	sed -n 's/^\(test_[a-zA-Z0-9_]*\) (\([^)]*\)) \.\.\. \(.*\)$/\2 \3/p' "$tmp/$1.log" |
		sort >"$tmp/$1.res"
	echo "== $1: $py test_threading subset: status $rc, $(grep -c ' ok$' "$tmp/$1.res") ok of $(grep -c . "$tmp/$1.res")"
}
run jemalloc "$je"
want=$rc
run shim "$shim $je"
if [ "$rc" != "$want" ] || ! cmp -s "$tmp/jemalloc.res" "$tmp/shim.res"; then
	echo "FAIL: under the shim status $rc (jemalloc alone: $want), outcomes:"
	diff "$tmp/jemalloc.res" "$tmp/shim.res"
	tail -n 40 "$tmp/shim.log"
	failed=1
fi
if [ "$(grep -c ' ok$' "$tmp/jemalloc.res")" -lt 5 ]; then
	echo "FAIL: fewer than 5 tests passed under jemalloc alone: the subset did not run"
	cat "$tmp/jemalloc.log"
	failed=1
fi
[ "$failed" = 0 ] && echo PASS
exit "$failed"
