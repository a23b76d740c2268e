#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-frontier.sh BUILD STOCK_LIB PATCHED_LIB [REPS] [OUTDIR]: the v3
# frontier (issue 38): stock v3.4.3 at MIMALLOC_PURGE_DELAY 0, 10, 1000 and
# with MIMALLOC_ARENA_PURGE_MULT 10 (at delay 10 and 1000), against the
# series at delay 0, 10, 1000 (its own knobs at their defaults), on
# ebizzy-lite (1 MiB, 5 MiB, 256 KiB chunks) and churn; from round 6 on
# also the series with MIMALLOC_ARENA_PURGE_MULT 10 at delay 10 and 1000.
# Rounds already in OUTDIR/frontier.csv are kept and counted on from.  Every
# configuration once per round; the order of the configurations rotates by
# one every round (rounds 1-14), or is shuffled per round and workload (15 on).  Rows are appended as they are measured:
#   frontier.csv  workload,config,round,load,calls,throughput,avg_rss_kib,peak_rss_kib,user_s,sys_s
#                 calls: madvise + process_madvise of the whole process
#                 (perf stat, syscall tracepoints); throughput: records/s;
#                 load: /proc/loadavg before the run
# Then summary-frontier.py prints medians and, for every stock point,
# whether a patched point dominates it.
set -u
build=$1 stock=$2 patched=$3 reps=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=${5:-$here}
mkdir -p "$out"
w=$build/workloads
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
load() { cut -d' ' -f1-3 /proc/loadavg; }
# NAME LIB DELAY MULT
configs=(
	"stock-d0 $stock 0 1"
	"stock-d10 $stock 10 1"
	"stock-d10-m10 $stock 10 10"
	"stock-d1000 $stock 1000 1"
	"stock-d1000-m10 $stock 1000 10"
	"patched-d0 $patched 0 1"
	"patched-d10 $patched 10 1"
	"patched-d1000 $patched 1000 1"
	# added from round 6 on (2026-12-06 21:30): the series at the stock
	# points' arena_purge_mult, so that each stock point has its pair
	"patched-d10-m10 $patched 10 10"
	"patched-d1000-m10 $patched 1000 10"
)
workloads=("ebizzy-lite -t 2 -s 1M -d 3" "ebizzy-lite -t 2 -s 5M -d 3"
	"ebizzy-lite -t 2 -s 256K -d 3" "churn -n 3")
n=${#configs[@]}
f=$out/frontier.csv
[ -s "$f" ] || echo "workload,config,round,load,calls,throughput,avg_rss_kib,peak_rss_kib,user_s,sys_s" >"$f"
r0=$(($(tail -n +2 "$f" | cut -d, -f3 | sort -n | tail -1) + 0))
for r in $(seq $((r0 + 1)) $((r0 + reps))); do
	for wl in "${workloads[@]}"; do
		read -ra cmd <<<"$wl"
		# rounds 1-14 rotated a fixed cycle (every configuration always ran
		# right after the same one); from round 15 on a permutation of its own
		# per round and workload (seeded by both: repeatable)
		if [ "$r" -le 14 ]; then
			order=$(for i in $(seq 0 $((n - 1))); do echo $(((i + r) % n)); done)
		else
			order=$(shuf -i 0-$((n - 1)) --random-source=<(yes "$r $wl"))
		fi
		for i in $order; do
			read -r name lib delay mult <<<"${configs[$i]}"
			ld=$(load)
			o=$(MIMALLOC_PURGE_DELAY=$delay MIMALLOC_ARENA_PURGE_MULT=$mult LD_PRELOAD=$lib \
				perf stat -x, -e $ev "$w/${cmd[0]}" "${cmd[@]:1}" 2>&1)
			c=$(grep -a sys_enter_ <<<"$o" | awk -F, '{s += $1} END {print s}')
			v() { grep -aoE "$1=[0-9.]+" <<<"$o" | tail -1 | cut -d= -f2; }
			echo "\"$wl\",$name,$r,\"$ld\",$c,$(v records_per_s),$(v avg_rss_kib),$(v peak_rss_kib),$(v user_s),$(v sys_s)" >>"$f"
		done
	done
	echo "round $r done $(date -u +%H:%M:%S) load $(load)"
done
python3 "$here/summary-frontier.py" "$f" | tee "$out/summary-frontier.txt"
