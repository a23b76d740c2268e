#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-cpython.sh: CPython's own test_threading, the cases that fork from a
# thread and end threads while the process goes on (ThreadJoinOnShutdown
# and the *fork* tests: each ends a thread with pthread_exit, and a child
# forked from a thread ends when that thread ends), under jemalloc without
# the patches and under the patched one, both preloaded with
# MALLOC_CONF=dirty_decay_ms:1000,background_thread:true (the setting the
# README recommends for latency; the background thread watches the
# pressure trigger).  Ported from the retired preload shim.  Fails when the
# run under the patched jemalloc hangs (a child that never ends:
# support.wait_process gives up after 30 s) or any test ends otherwise
# than unpatched.  A few seconds each.
# Exit 0 pass; 77 skip (no patched build; no unpatched libjemalloc.so.2;
# no python3 with its test package, Debian: python3 and
# libpython3.11-testsuite; $PYTHON names one to use); 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
need_stock=1
# shellcheck source=find-libs.sh
. "$here/find-libs.sh"
# shellcheck source=../../common/cpython-lib.sh
. "$here/../../common/cpython-lib.sh"

cpython_find
py=$cpython_py
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
conf=dirty_decay_ms:1000,background_thread:true

# The patched jemalloc must serve this python, with its queues on.
on=$(env LD_PRELOAD="$lib" MALLOC_CONF="$conf" "$py" -c '
import ctypes
v = ctypes.c_bool()
n = ctypes.c_size_t(1)
f = ctypes.CDLL(None).mallctl
print(f(b"opt.libpurge", ctypes.byref(v), ctypes.byref(n), None, 0) == 0 and v.value)' 2>&1)
[ "$on" = True ] || { echo "FAIL: the patched jemalloc does not serve $py (opt.libpurge: $on)"; exit 1; }

# run NAME LIB: the subset, verbose; its status, and the outcome of each
# test (name and result) in NAME.res (cpython_run; 300 s the backstop of
# regrtest's own timeout).
run() {
	cpython_run "$tmp" "$1" 300 LD_PRELOAD="$2" MALLOC_CONF="$conf" -- test_threading \
		-v --timeout 60 -m ThreadJoinOnShutdown -m '*fork*'
	rc=$cpython_rc
	echo "== $1: $py test_threading subset: status $rc, $(grep -c ' ok$' "$tmp/$1.res") ok of $(grep -c . "$tmp/$1.res")"
}
run unpatched "$stock"
want=$rc
run patched "$lib"
if [ "$rc" != "$want" ] || ! cmp -s "$tmp/unpatched.res" "$tmp/patched.res"; then
	echo "FAIL: under the patched jemalloc status $rc (unpatched: $want), outcomes:"
	diff "$tmp/unpatched.res" "$tmp/patched.res"
	tail -n 40 "$tmp/patched.log"
	failed=1
fi
if [ "$(grep -c ' ok$' "$tmp/unpatched.res")" -lt 5 ]; then
	echo "FAIL: fewer than 5 tests passed unpatched: the subset did not run"
	cat "$tmp/unpatched.log"
	failed=1
fi
[ "$failed" = 0 ] && echo PASS
exit "$failed"
