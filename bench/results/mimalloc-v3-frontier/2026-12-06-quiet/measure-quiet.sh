#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-quiet.sh STOCK_LIB PATCHED_LIB OLD_LIB IDLE [REPS] [OUTDIR]: patch 0008
# (a partial delay-0 batch purged at the purge points a quiet program
# reaches), all at MIMALLOC_PURGE_DELAY=0:
#   redis-bench/  bench/allocators/redis-bench.sh, REPS interleaved rounds of
#                 stock-d0 and patched-d0 (phase 1: 16 KiB values replaced by
#                 512-byte ones; phase 2: 64 KiB values churned)
#   flushall.txt  bench/allocators/redis-flushall.sh -t 5, REPS rounds of
#                 stock, patched and OLD_LIB (the series without 0008), the
#                 order rotating every round
#   idle.txt      IDLE (integrations/mimalloc/tests/idle.c) -g 0 and -g 2,
#                 REPS rounds of the three, the order rotating
#   diag.txt      ../2026-12-06/diag-redis-d0.sh once per library (mimalloc's
#                 own counters after phase 1)
set -u
stock=$1 patched=$2 old=$3 idle=$4 reps=${5:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=${6:-$here}
top=$(git -C "$here" rev-parse --show-toplevel)
wl=$top/bench/allocators
mkdir -p "$out"
{ date -u; uptime; } >"$out/load-start.txt"
"$wl/redis-bench.sh" -j "$stock" -L "$patched" -r "$reps" \
	-c "stock-d0 LD_PRELOAD=$stock MIMALLOC_PURGE_DELAY=0" \
	-c "patched-d0 MIMALLOC_PURGE_DELAY=0" \
	-x "stock-d0 patched-d0" -o "$out/redis-bench"
configs=("stock-d0 $stock" "patched-d0 $patched" "old-d0 $old")
f=$out/flushall.txt
i=$out/idle.txt
: >"$f"
: >"$i"
for r in $(seq 1 "$reps"); do
	for k in 0 1 2; do
		read -r name lib <<<"${configs[$(((k + r) % 3))]}"
		{
			echo "== $name round $r ($(date -u +%H:%M:%S), MIMALLOC_PURGE_DELAY=0)"
			MIMALLOC_PURGE_DELAY=0 "$wl/redis-flushall.sh" -L "$lib" -t 5
		} >>"$f" 2>&1
		for g in 0 2; do
			echo "$name round $r g $g load $(cut -d' ' -f1 /proc/loadavg) $(MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=$lib "$idle" -g $g)" >>"$i"
		done
	done
done
d=$out/diag.txt
: >"$d"
for c in "${configs[@]:0:2}"; do
	read -r name lib <<<"$c"
	{
		echo "== $name ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
		"$top/bench/results/mimalloc-v3-frontier/2026-12-06/diag-redis-d0.sh" "$lib"
	} >>"$d" 2>&1
done
{ date -u; uptime; } >"$out/load-end.txt"
