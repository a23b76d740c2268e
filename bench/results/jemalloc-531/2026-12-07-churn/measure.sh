#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# measure.sh: patch 0014 (opt.purge_populate_max) on churn and ebizzy-lite.
# Stock 5.3.1 at its defaults and at decay 0, the patched 5.3.1 (0001-0014)
# at decay 0 without populate (0014's default, the series before it) and
# with purge_populate_max:131072; interleaved, rotated every repetition.
# Counts page faults and task clock (perf stat), purge calls (syscall
# tracepoints); the workload prints records/s and RSS.
#
# usage: measure.sh PATCHED_LIB STOCK_LIB REPS MESON_BUILD
set -u
plib=$1 slib=$2 reps=$3 b=$4
d0=dirty_decay_ms:0,muzzy_decay_ms:0
configs=(
	"stock-defaults $slib "
	"stock-d0 $slib $d0"
	"pat-d0 $plib $d0"
	"pat-d0-pop128K $plib $d0,purge_populate_max:131072"
)
workloads=(
	"churn-d3 $b/workloads/churn -m 256M -d 3"
	"churn-n1 $b/workloads/churn -m 256M -n 1"
	"ebizzy5M $b/workloads/ebizzy-lite -t 2 -s 5M -d 3"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((rep = 0; rep < reps; rep++)); do
	for w in "${workloads[@]}"; do
		read -r wname prog <<<"$w"
		for ((i = 0; i < ${#configs[@]}; i++)); do
			c=${configs[$(((i + rep) % ${#configs[@]}))]}
			read -r cname lib conf <<<"$c"
			load=$(cut -d' ' -f1 /proc/loadavg)
			LD_PRELOAD=$lib MALLOC_CONF=${conf:-} perf stat -x, -o "$tmp/perf" \
				-e page-faults,task-clock,syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise \
				$prog >"$tmp/out" 2>&1
			pf=$(awk -F, '/page-faults/ {print $1 + 0}' "$tmp/perf")
			tc=$(awk -F, '/task-clock/ {printf "%.0f", $1}' "$tmp/perf")
			madv=$(awk -F, '/sys_enter_madvise/ {print $1 + 0}' "$tmp/perf")
			pmadv=$(awk -F, '/sys_enter_process_madvise/ {print $1 + 0}' "$tmp/perf")
			printf '%s %s rep=%d load=%s faults=%d task_ms=%s madv=%d pmadv=%d | %s\n' "$wname" "$cname" \
				"$rep" "$load" "$pf" "$tc" "$madv" "$pmadv" "$(grep '^RESULT' "$tmp/out" | tail -1)"
		done
	done
done
