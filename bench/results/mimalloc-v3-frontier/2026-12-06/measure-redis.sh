#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-redis.sh STOCK_LIB PATCHED_LIB [REPS] [OUTDIR]: the system's
# redis-server (7.0, linked to libjemalloc.so.2) with stock v3.4.3 and the
# series preloaded, at MIMALLOC_PURGE_DELAY 0 and 1000 (the default):
#   redis-bench/  integrations/workloads/redis-bench.sh, REPS interleaved
#                 rounds: 16 KiB values replaced by 512-byte ones (phase 1),
#                 64 KiB values churned (phase 2); SET/s, server CPU, RSS at
#                 the phase's end, purge calls (perf), faults.  Its
#                 configuration names: defaults = stock at its defaults
#                 (delay 1000; -j names the stock library), patched = the
#                 series at its defaults (delay 1000), stock-d0, patched-d0.
#   flushall.txt  integrations/workloads/redis-flushall.sh -t 5 (500,000
#                 keys of 300 bytes, FLUSHALL, then RSS every second), REPS
#                 rounds, the order rotating every round.
set -u
stock=$1 patched=$2 reps=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=${4:-$here}
wl=$(git -C "$here" rev-parse --show-toplevel)/bench/allocators # where the redis scripts live now (they were in integrations/workloads)
mkdir -p "$out"
"$wl/redis-bench.sh" -j "$stock" -L "$patched" -r "$reps" \
	-c "stock-d0 LD_PRELOAD=$stock MIMALLOC_PURGE_DELAY=0" \
	-c "patched-d0 MIMALLOC_PURGE_DELAY=0" \
	-x "defaults patched stock-d0 patched-d0" -o "$out/redis-bench"
configs=("stock-d1000 $stock 1000" "patched-d1000 $patched 1000"
	"stock-d0 $stock 0" "patched-d0 $patched 0")
f=$out/flushall.txt
: >"$f"
for r in $(seq 1 "$reps"); do
	for i in 0 1 2 3; do
		read -r name lib delay <<<"${configs[$(((i + r) % 4))]}"
		{
			echo "== $name round $r ($(date -u +%H:%M:%S), MIMALLOC_PURGE_DELAY=$delay)"
			MIMALLOC_PURGE_DELAY=$delay "$wl/redis-flushall.sh" -L "$lib" -t 5
		} >>"$f" 2>&1
	done
done
cat "$f"
