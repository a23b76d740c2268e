#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# je-syscalls.sh: stock and patched jemalloc on one workload: purge system calls
# (madvise + process_madvise, perf's syscall tracepoints: counted in the
# kernel, no slowdown), average and peak RSS (/proc/PID/statm every 100 ms)
# and the workload's own last output line.  A small, quick comparison; the
# full picture with medians is bench/frontier/frontier.sh.
#
# usage: je-syscalls.sh -P PATCHED_LIB -J STOCK_LIB [-r REPS] -- PROGRAM ARGS...
#   configurations, in this order, every repetition rotated:
#     stock-d0      stock, dirty_decay_ms:0
#     stock-d1000   stock, dirty_decay_ms:1000
#     stock-d10000  stock, its defaults
#     jep-d0        patched, dirty_decay_ms:0 (libpurge defaults)
#     jep-d0-bg     patched, dirty_decay_ms:0,background_thread:true
#     jep-d1000-bg  patched, dirty_decay_ms:1000,background_thread:true
#   output: CONFIG purges=N rss_avg_mib=X rss_peak_mib=Y | last line of the program
set -u
plib="" slib="" reps=1
while [ $# -gt 0 ]; do
	case $1 in
	-P) plib=$2; shift 2 ;;
	-J) slib=$2; shift 2 ;;
	-r) reps=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) sed -n '/^# usage:/,/^#   output/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
if [ ! -f "$plib" ] || [ ! -f "$slib" ] || [ $# -eq 0 ]; then
	"$0" -h
	exit 2
fi
command -v perf >/dev/null || { echo "je-syscalls.sh: needs perf" >&2; exit 77; }
configs=(
	"stock-d0 $slib dirty_decay_ms:0"
	"stock-d1000 $slib dirty_decay_ms:1000"
	"stock-d10000 $slib "
	"jep-d0 $plib dirty_decay_ms:0"
	"jep-d0-bg $plib dirty_decay_ms:0,background_thread:true"
	"jep-d1000-bg $plib dirty_decay_ms:1000,background_thread:true"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
page=$(getconf PAGESIZE)
one() { # NAME LIB CONF -- PROGRAM...
	local name=$1 lib=$2 conf=$3
	shift 3
	LD_PRELOAD=$lib MALLOC_CONF=$conf perf stat -x, -o "$tmp/perf" \
		-e syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise \
		"$@" >"$tmp/out" 2>&1 &
	local pid=$! child="" n=0 sum=0 peak=0 r
	while kill -0 $pid 2>/dev/null; do
		# perf's child, the workload, once it is there
		[ -n "$child" ] || child=$(pgrep -P $pid | head -1)
		if [ -n "$child" ] && { read -r _ r _ <"/proc/$child/statm"; } 2>/dev/null; then
			n=$((n + 1)) sum=$((sum + r))
			[ "$r" -gt "$peak" ] && peak=$r
		fi
		sleep 0.1
	done
	wait $pid
	local purges
	purges=$(awk -F, '/sys_enter_(madvise|process_madvise)/ {s += $1} END {print s + 0}' "$tmp/perf")
	awk -v n="$name" -v p="$purges" -v c="$n" -v s="$sum" -v k="$peak" -v pg="$page" 'BEGIN {
		printf "%-13s purges=%-8d rss_avg_mib=%-7.1f rss_peak_mib=%-7.1f | ", n, p,
			c ? s / c * pg / 1048576 : 0, k * pg / 1048576 }'
	tail -1 "$tmp/out"
}
for ((rep = 0; rep < reps; rep++)); do
	for ((i = 0; i < ${#configs[@]}; i++)); do
		c=${configs[$(((i + rep) % ${#configs[@]}))]}
		read -r name lib conf <<<"$c"
		one "$name" "$lib" "${conf:-}" "$@"
	done
done
