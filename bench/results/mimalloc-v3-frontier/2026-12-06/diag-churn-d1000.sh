#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# diag-churn-d1000.sh BUILD STOCK_LIB PATCHED_LIB [REPS]: churn -n 3 at the
# default delay (1000) under stock and the series, interleaved, with
# MIMALLOC_SHOW_STATS=1: how much each purged (mimalloc's "purged" and
# "purges"), in how many calls (perf), and the run's own figures.
set -u
build=$1 stock=$2 patched=$3 reps=${4:-3}
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$reps"); do
	for c in stock patched; do
		l=$stock
		[ $c = patched ] && l=$patched
		[ $((r % 2)) = 0 ] && { [ $c = stock ] && l=$patched c=patched || l=$stock c=stock; }
		o=$(MIMALLOC_SHOW_STATS=1 MIMALLOC_PURGE_DELAY=1000 LD_PRELOAD=$l \
			perf stat -x, -e $ev "$build/workloads/churn" -n 3 2>&1)
		echo "== $c round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
		grep -aE 'RESULT|^ *(purged|purges|-batched|-calls|-vectored|committed) |sys_enter' <<<"$o"
	done
done
