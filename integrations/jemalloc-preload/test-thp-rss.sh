#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test-thp-rss.sh SHIM WORKLOAD: under MALLOC_CONF=thp:always, 200 live
# 1 MiB chunks (ebizzy-lite) must peak within 10% of jemalloc alone's RSS
# (the median of 3 runs each).  Each such chunk is a 1 MiB + 4 KiB
# extent; with fresh mappings of 2 MiB each had a huge page of its own,
# and the shim peaked 36% above jemalloc (CPython's 1 MiB bytearrays:
# 53%).  A ratio, no time.  Exit 77 (meson: skipped) without
# libjemalloc.so.2, or where transparent huge pages are off or absent
# (then nothing is faulted in as a huge page and there is nothing to
# compare).  Where the kernel finds no free huge page the two peaks are
# alike and the test passes without having tested anything.
set -u

shim=$1
work=$2
# shellcheck source=find-jemalloc.sh
. "${0%/*}/find-jemalloc.sh"

mode=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
case $mode in
*"[always]"* | *"[madvise]"*) ;;
*)
	echo "SKIP: transparent huge pages are off or absent here (${mode:-no /sys/kernel/mm/transparent_hugepage})"
	exit 77
	;;
esac

# peak PRELOAD: the workload's maxrss_kib
peak() {
	env MALLOC_CONF=thp:always LD_PRELOAD="$1" "$work" -t 1 -s 1M -l 200 -j 0 -n 200 -r 1 2>&1 |
		sed -n 's/.*maxrss_kib=\([0-9][0-9]*\).*/\1/p'
}
median3() {
	printf '%s\n' "$@" | sort -n | sed -n 2p
}
a1=$(peak "$je") s1=$(peak "$shim $je")
a2=$(peak "$je") s2=$(peak "$shim $je")
a3=$(peak "$je") s3=$(peak "$shim $je")
alone=$(median3 "$a1" "$a2" "$a3")
under=$(median3 "$s1" "$s2" "$s3")
echo "peak RSS (KiB): jemalloc alone $a1 $a2 $a3, under the shim $s1 $s2 $s3"
if [ -z "$alone" ] || [ -z "$under" ] || [ "$alone" -le 0 ]; then
	echo "FAIL: no maxrss_kib from $work"
	exit 1
fi
ratio=$((under * 100 / alone))
echo "median: $under / $alone = $ratio%"
if [ "$ratio" -gt 110 ]; then
	echo "FAIL: the shim's peak is $ratio% of jemalloc alone's (at most 110%)"
	exit 1
fi
exit 0
