#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-redis-d0.sh STOCK_LIB PATCHED_LIB [REPS] [OUTDIR]: the system's
# redis-server with stock v3.4.3 and the series preloaded, both at
# MIMALLOC_PURGE_DELAY=0 only (the two-arena fix of patch 0007):
#   redis-bench/  bench/allocators/redis-bench.sh, REPS interleaved rounds of
#                 stock-d0 and patched-d0 (phase 1: 16 KiB values replaced by
#                 512-byte ones; phase 2: 64 KiB values churned)
#   flushall.txt  bench/allocators/redis-flushall.sh -t 5, REPS rounds, the
#                 order alternating every round
#   diag.txt      ../2026-12-06/diag-redis-d0.sh once per library (mimalloc's
#                 own counters after phase 1)
set -u
stock=$1 patched=$2 reps=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=${4:-$here}
top=$(git -C "$here" rev-parse --show-toplevel)
wl=$top/bench/allocators
mkdir -p "$out"
{ date -u; uptime; } >"$out/load-start.txt"
"$wl/redis-bench.sh" -j "$stock" -L "$patched" -r "$reps" \
	-c "stock-d0 LD_PRELOAD=$stock MIMALLOC_PURGE_DELAY=0" \
	-c "patched-d0 MIMALLOC_PURGE_DELAY=0" \
	-x "stock-d0 patched-d0" -o "$out/redis-bench"
configs=("stock-d0 $stock" "patched-d0 $patched")
f=$out/flushall.txt
: >"$f"
for r in $(seq 1 "$reps"); do
	for i in 0 1; do
		read -r name lib <<<"${configs[$(((i + r) % 2))]}"
		{
			echo "== $name round $r ($(date -u +%H:%M:%S), MIMALLOC_PURGE_DELAY=0)"
			MIMALLOC_PURGE_DELAY=0 "$wl/redis-flushall.sh" -L "$lib" -t 5
		} >>"$f" 2>&1
	done
done
d=$out/diag.txt
: >"$d"
for c in "${configs[@]}"; do
	read -r name lib <<<"$c"
	{
		echo "== $name ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
		"$top/bench/results/mimalloc-v3-frontier/2026-12-06/diag-redis-d0.sh" "$lib"
	} >>"$d" 2>&1
done
{ date -u; uptime; } >"$out/load-end.txt"
