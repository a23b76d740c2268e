#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-fork.sh SHIM FORK-STORM: the fork stress variant under the shim.
# Two threads fork 1,000 times in all while four threads allocate and
# free 64 KiB to 4 MiB; each child makes 20 more allocations.  Fails when
#  - a child hangs (20 s, the stress variant's own count: hung=) or fails,
#  - the forks grow the process's address space by more than 256 MiB from
#    the first tenth of the run to its end (vm_grew_mib=).  That growth is
#    what hung children inside jemalloc: each new gigabyte of address
#    space needs a new leaf of jemalloc's radix tree, made under a lock
#    its atfork handlers leave out, and the hooks the fork gate turned
#    away made it grow at forks (hooks.c, "Forks and jemalloc's radix
#    tree").  Before the fix the address space grew by about 650 MiB per
#    1,000 forks of this run and a child hung about once in 5,000 forks;
#    jemalloc alone and the shim now grow by 0.
# Exit 77 (meson: skipped) without libjemalloc.so.2.
set -u

shim=$1
storm=$2
# shellcheck source=find-jemalloc.sh
. "${0%/*}/find-jemalloc.sh"

args="-t 4 -f 2 -n 1000 -a 20 -w 20"
echo "== LD_PRELOAD='$shim $je' $storm $args"
# shellcheck disable=SC2086 # $args is a list of words
out=$(env LD_PRELOAD="$shim $je" timeout 200 "$storm" $args 2>&1)
rc=$?
echo "$out"
val() {
	echo "$out" | sed -n "s/^fork-storm: .*[ :]$1=\([0-9][0-9]*\).*/\1/p" | tail -n 1
}
failed=0
fail() {
	echo "FAIL: $*"
	failed=1
}
[ "$rc" = 0 ] || fail "exit status $rc (124: the parent hung)"
[ "$(val forks)" = 1000 ] || fail "forks=$(val forks), expected 1000"
[ "$(val hung)" = 0 ] || fail "hung=$(val hung) children, expected 0"
[ "$(val failed)" = 0 ] || fail "failed=$(val failed) children, expected 0"
grew=$(val vm_grew_mib)
if [ -z "$grew" ] || [ "$grew" -gt 256 ]; then
	fail "the address space grew by ${grew:-?} MiB during the forks (at most 256)"
fi
exit $failed
