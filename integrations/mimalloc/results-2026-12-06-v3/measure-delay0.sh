#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-delay0.sh BUILD STOCK_LIB PATCHED_LIB [REPS] [OUTDIR]: purge_delay 0
# against the default delay (1000), stock v3.4.3 and the series, interleaved
# (every configuration once per round, REPS rounds, default 3), with the load
# average before each run:
#   delay0.csv  workload,config,round,load,calls,throughput,avg_rss_kib,peak_rss_kib,user_s,sys_s
#               calls: madvise + process_madvise of the whole process
#               (perf stat, syscall tracepoints); throughput: records/s
#   idle.txt    tests/idle.c: RSS 1 s after freeing 320 MiB at once or 2 ms
#               apart, at delay 0 and the default, stock and patched
# and prints medians (summary-delay0.py).
set -u
build=$1 stock=$2 patched=$3 reps=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=${5:-$here}
mkdir -p "$out"
w=$build/workloads
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
load() { cut -d' ' -f1-3 /proc/loadavg; }
f=$out/delay0.csv
echo "workload,config,round,load,calls,throughput,avg_rss_kib,peak_rss_kib,user_s,sys_s" >"$f"
for r in $(seq 1 "$reps"); do
	for wl in "ebizzy-lite -t 2 -s 1M -d 3" "ebizzy-lite -t 2 -s 5M -d 3" "ebizzy-lite -t 2 -s 256K -d 3" "churn -n 3"; do
		read -ra cmd <<<"$wl"
		for c in stock-0 patched-0 stock-1000 patched-1000; do
			l=$stock
			[ "${c%-*}" = patched ] && l=$patched
			ld=$(load)
			o=$(MIMALLOC_PURGE_DELAY=${c#*-} LD_PRELOAD=$l perf stat -x, -e $ev "$w/${cmd[0]}" "${cmd[@]:1}" 2>&1)
			n=$(grep -a sys_enter_ <<<"$o" | awk -F, '{s += $1} END {print s}')
			v() { grep -aoE "$1=[0-9.]+" <<<"$o" | tail -1 | cut -d= -f2; }
			echo "\"$wl\",$c,$r,\"$ld\",$n,$(v records_per_s),$(v avg_rss_kib),$(v peak_rss_kib),$(v user_s),$(v sys_s)" >>"$f"
		done
	done
done
idle=$build/mimalloc/mimalloc-idle
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); nproc $(nproc), uname -r $(uname -r); load average $(load)"
	echo "command: MIMALLOC_PURGE_DELAY=d LD_PRELOAD=LIB $idle -g G   (RSS in KiB, /proc/self/statm; 3 runs each, interleaved)"
	for d in 0 1000; do
		for g in 0 2; do
			for i in 1 2 3; do
				s=$(MIMALLOC_PURGE_DELAY=$d LD_PRELOAD=$stock "$idle" -g $g)
				p=$(MIMALLOC_PURGE_DELAY=$d LD_PRELOAD=$patched "$idle" -g $g)
				q=$(MIMALLOC_PURGE_BATCH_SIZE=8M MIMALLOC_PURGE_DELAY=$d LD_PRELOAD=$patched "$idle" -g $g)
				printf 'delay %-4s gap %s ms run %d: stock [%s]  patched [%s]  patched, PURGE_BATCH_SIZE=8M [%s]\n' \
					$d $g $i "${s#idle: }" "${p#idle: }" "${q#idle: }"
			done
		done
	done
	echo "load average after: $(load)"
} >"$out/idle.txt"
cat "$out/idle.txt"
python3 "$here/summary-delay0.py" "$f" | tee "$out/summary-delay0.txt"
