#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-fork.sh FORK-STORM: fork() under the patched jemalloc while other
# threads allocate (ported from the retired preload shim's stress test).
# Two threads fork 1,000 times in all while four threads allocate and free
# 64 KiB to 4 MiB; each child makes 20 more allocations.  Once with
# MALLOC_CONF unset, once with dirty_decay_ms:0,background_thread:true
# (the queues busy, and the background thread in its poll() on the
# pressure trigger, patch 0010).  Fails when
#  - a child hangs (20 s, the stress variant's own count: hung=) or fails,
#    or the parent hangs (200 s);
#  - the forks grow the process's address space by more than 256 MiB from
#    the first tenth of the run to its end (vm_grew_mib=): each new
#    gigabyte of address space needs a new leaf of jemalloc's radix tree,
#    made under a lock jemalloc's atfork handlers leave out; growth at
#    forks is what hung children under the shim.
# Exit 0 pass, 77 skip (no patched build), 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
storm=$1
# shellcheck source=find-libs.sh
. "$here/find-libs.sh"

failed=0
fail() {
	echo "FAIL: $*"
	failed=1
}
args="-t 4 -f 2 -n 1000 -a 20 -w 20"
for conf in "" dirty_decay_ms:0,background_thread:true; do
	echo "== MALLOC_CONF=$conf LD_PRELOAD=$lib $storm $args"
	# shellcheck disable=SC2086 # $args is a list of words
	out=$(env LD_PRELOAD="$lib" MALLOC_CONF="$conf" timeout 200 "$storm" $args 2>&1)
	rc=$?
	echo "$out"
	val() {
		echo "$out" | sed -n "s/^fork-storm: .*[ :]$1=\([0-9][0-9]*\).*/\1/p" | tail -n 1
	}
	[ "$rc" = 0 ] || fail "$conf: exit status $rc (124: the parent hung)"
	[ "$(val forks)" = 1000 ] || fail "$conf: forks=$(val forks), expected 1000"
	[ "$(val hung)" = 0 ] || fail "$conf: hung=$(val hung) children, expected 0"
	[ "$(val failed)" = 0 ] || fail "$conf: failed=$(val failed) children, expected 0"
	grew=$(val vm_grew_mib)
	if [ -z "$grew" ] || [ "$grew" -gt 256 ]; then
		fail "$conf: the address space grew by ${grew:-?} MiB during the forks (at most 256)"
	fi
done
exit $failed
