#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-lifetime.sh LIFETIME: a program preloaded with the patched jemalloc
# ends when, and with the status, it ends under jemalloc without the
# patches, however its last thread ends (../../workloads/lifetime.c:
# return, exit, _exit, exec, pthread_exit, from main or another thread, in
# a fork child too), and the same thread runs its atexit handlers.  Each
# case runs under both, with MALLOC_CONF unset and with
# background_thread:true (the only setting under which jemalloc runs a
# thread; patches 0009 and 0010 do their work on it).
#
# Under background_thread:true, jemalloc (with or without the patches)
# keeps a process alive after its last thread of the program's own ends
# through pthread_exit: glibc counts the background thread among the
# process's threads.  Those cases (pthread_exit, pthread_exit-now,
# last-return, last-pthread-exit, main-last) get 3 s and must be killed
# under both; the test says so.  The retired preload shim hid its thread
# from glibc's count through glibc's internals; the patches do not.
# Exit 0 pass, 77 skip (no patched build, or no unpatched jemalloc to
# compare with), 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
life=$1
need_stock=1
# shellcheck source=find-libs.sh
. "$here/find-libs.sh"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0 runs=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
# one CONF WAIT MODE [N]: the case under both libraries
one() {
	conf=$1 wait=$2
	shift 2
	runs=$((runs + 1))
	timeout -s KILL "$wait" env LD_PRELOAD="$stock" MALLOC_CONF="$conf" "$life" "$@" \
		>"$tmp/stock.log" 2>&1
	want=$?
	timeout -s KILL "$wait" env LD_PRELOAD="$lib" MALLOC_CONF="$conf" "$life" "$@" \
		>"$tmp/patched.log" 2>&1
	rc=$?
	threads=$(grep -c 'allocator thread: yes' "$tmp/patched.log")
	echo "== MALLOC_CONF=$conf lifetime $*: status $rc (unpatched: $want);" \
		"processes with jemalloc's thread: $threads"
	[ "$rc" = "$want" ] || { cat "$tmp/patched.log"; fail "$conf $*: status $rc, unpatched $want (137: killed)"; }
	for f in stock patched; do
		sed -n 's/^lifetime\[[0-9]*\]: atexit/atexit/p' "$tmp/$f.log" >"$tmp/$f.atexit"
	done
	cmp -s "$tmp/stock.atexit" "$tmp/patched.atexit" ||
		fail "$conf $*: atexit ran elsewhere: $(tr '\n' ' ' <"$tmp/patched.atexit")" \
			"(unpatched: $(tr '\n' ' ' <"$tmp/stock.atexit"))"
}
for conf in "" background_thread:true; do
	one "$conf" 30 return 3
	for m in fork-return fork-pthread_exit; do
		one "$conf" 30 "$m"
	done
	one "$conf" 30 exit 7
	one "$conf" 30 _exit 9
	one "$conf" 30 exec 5
	one "$conf" 30 fork-exit 4
	one "$conf" 30 fork-_exit 6
	one "$conf" 30 fork-exec 8
	if [ -z "$conf" ]; then
		w=30
	else
		w=3 # kept alive by the background thread, patched or not
	fi
	for m in pthread_exit pthread_exit-now last-return last-pthread-exit main-last; do
		one "$conf" "$w" "$m"
		if [ -n "$conf" ] && [ "$rc" = 137 ]; then
			echo "   (kept alive by jemalloc's background thread, as without the patches)"
		fi
	done
done
# the thread the setting promises runs in the patched build
LIFETIME_WAIT_THREAD_MS=5000 LD_PRELOAD="$lib" MALLOC_CONF=background_thread:true "$life" return 0 2>&1 |
	grep -q 'allocator thread: yes' || fail "no background thread under background_thread:true"
echo "$((runs - fails))/$runs cases as without the patches"
[ $fails -eq 0 ]
