#!/bin/sh
# SPDX-License-Identifier: MIT
# The redis-server runs of this folder, from the repository root:
#   sh bench/results/jemalloc-531/2026-12-07-redis/run.sh OUTDIR REPS
# every row is jemalloc 5.3.1: -j and -J the stock build (build.sh --stock),
# -L the patched one (build.sh).
set -eu
B=$PWD/integrations-build/jemalloc
exec bench/allocators/redis-bench.sh -L "$B/lib/libjemalloc.so.2" \
	-j "$B/stock/lib/libjemalloc.so.2" -J "$B/stock/lib/libjemalloc.so.2" \
	-b 128 -r "${2:-3}" -o "$1" \
	-c 'patched-d0 MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0'
