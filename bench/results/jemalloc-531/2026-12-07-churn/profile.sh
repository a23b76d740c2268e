#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# profile.sh: where patched jemalloc 5.3.1's refaults on churn come from.
# Each configuration runs churn under perf stat (page faults, task clock,
# purge system calls), with stats_print:true so that the series' libpurge
# counters (enqueued, cancelled, purged bytes) come out at exit.  The
# configurations run interleaved, rotated every repetition.
#
# usage: profile.sh PATCHED_LIB STOCK_LIB REPS -- PROGRAM ARGS...
# output, one line a run:
#   CONFIG rep=R load=L faults=F task_ms=T purges=N enq=E canc=C purged=P | RESULT ...
set -u
plib=$1 slib=$2 reps=$3
shift 3
[ "$1" = -- ] && shift
configs=(
	"stock-defaults $slib "
	"stock-d0 $slib dirty_decay_ms:0,muzzy_decay_ms:0"
	"pat-d0 $plib dirty_decay_ms:0,muzzy_decay_ms:0"
	"pat-d0-noage $plib dirty_decay_ms:0,muzzy_decay_ms:0,purge_max_delay_ms:-1"
	"pat-d0-noage-256M $plib dirty_decay_ms:0,muzzy_decay_ms:0,purge_max_delay_ms:-1,purge_max_pending:268435456"
	"pat-d0-256M $plib dirty_decay_ms:0,muzzy_decay_ms:0,purge_max_pending:268435456"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((rep = 0; rep < reps; rep++)); do
	for ((i = 0; i < ${#configs[@]}; i++)); do
		c=${configs[$(((i + rep) % ${#configs[@]}))]}
		read -r cname lib conf <<<"$c"
		load=$(cut -d' ' -f1 /proc/loadavg)
		sp=
		[ "$lib" = "$plib" ] && sp=stats_print:true,stats_print_opts:gblxe
		conf=${conf:+$conf,}$sp
		LD_PRELOAD=$lib MALLOC_CONF=${conf%,} perf stat -x, -o "$tmp/perf" \
			-e page-faults,task-clock,syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise \
			"$@" >"$tmp/out" 2>&1
		pf=$(awk -F, '/page-faults/ {print $1 + 0}' "$tmp/perf")
		tc=$(awk -F, '/task-clock/ {printf "%.0f", $1}' "$tmp/perf")
		madv=$(awk -F, '/sys_enter_madvise/ {print $1 + 0}' "$tmp/perf")
		pmadv=$(awk -F, '/sys_enter_process_madvise/ {print $1 + 0}' "$tmp/perf")
		# the merged arenas' libpurge counters (stats_print's text form)
		lp=$(awk -F': ' '/libpurge queue:/ {n++} n == 1 && /bytes enqueued:/ {e = $2} n == 1 && /bytes reused before/ {c = $2} n == 1 && /bytes purged:/ {p = $2}
			END {if (n) printf "enq=%.0f canc=%.0f purged=%.0f ", e, c, p}' "$tmp/out")
		printf '%s rep=%d load=%s faults=%d task_ms=%s purges=%d %s| %s\n' "$cname" "$rep" "$load" \
			"$pf" "$tc" $((madv + pmadv)) "$lp" "$(grep '^RESULT' "$tmp/out" | tail -1)"
	done
done
