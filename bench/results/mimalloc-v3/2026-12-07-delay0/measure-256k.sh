#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-256k.sh BUILD STOCK_LIB PATCHED_LIB [ROUNDS] > 256k.csv: goal (b)
# of issue 38 only, ebizzy-lite -t 2 -s 256K -d 3, stock and patched at
# MIMALLOC_PURGE_DELAY 0 and 1000, interleaved (the four once per round,
# ROUNDS rounds, default 11), as measure-delay0.sh runs it (perf stat counts
# the madvise and process_madvise calls), keeping the run's own seconds
# so that records per CPU second (records_per_s * seconds / (user_s + sys_s))
# can be set beside records/s: on this shared VM a run gets well under its
# 2 CPUs, and records/s follows the share it gets.
set -u
build=$1 stock=$2 patched=$3 rounds=${4:-11}
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "config,round,load,calls,records_per_s,seconds,user_s,sys_s,avg_rss_kib,records_per_cpu_s"
for r in $(seq 1 "$rounds"); do
	for c in stock-0 patched-0 stock-1000 patched-1000; do
		l=$stock
		[ "${c%-*}" = patched ] && l=$patched
		ld=$(load)
		o=$(MIMALLOC_PURGE_DELAY=${c#*-} LD_PRELOAD=$l perf stat -x, -e $ev "$build/workloads/ebizzy-lite" -t 2 -s 256K -d 3 2>&1)
		n=$(grep -a sys_enter_ <<<"$o" | awk -F, '{s += $1} END {print s}')
		v() { grep -aoE "$1=[0-9.]+" <<<"$o" | tail -1 | cut -d= -f2; }
		t=$(v records_per_s) s=$(v seconds) u=$(v user_s) y=$(v sys_s)
		echo "$c,$r,\"$ld\",$n,$t,$s,$u,$y,$(v avg_rss_kib),$(awk -v t=$t -v s=$s -v u=$u -v y=$y 'BEGIN {printf "%.0f", t * s / (u + y)}')"
	done
done
