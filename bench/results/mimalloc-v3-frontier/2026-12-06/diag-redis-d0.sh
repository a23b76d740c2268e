#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# diag-redis-d0.sh LIB [KEYS]: redis-bench.sh's fill and phase 1 (16 KiB
# values replaced by 512-byte ones) once, with LIB preloaded at
# MIMALLOC_PURGE_DELAY=0 and MIMALLOC_SHOW_STATS=1: RSS after the fill,
# right after phase 1 and 2 s later, then mimalloc's statistics at exit
# (committed, purges, and the series' -batched/-calls counters).
# shellcheck disable=SC2154 # redis_pid, redis_sock, bench_log, bench_cli_pin: set by bench-lib.sh
set -u
lib=$1 keys=${2:-59500}
# shellcheck source-path=SCRIPTDIR source=../../../allocators/bench-lib.sh
. "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)/bench/allocators/bench-lib.sh"
bench_pins 1
redis_start "$(mktemp)" LD_PRELOAD="$lib" MIMALLOC_PURGE_DELAY=0 MIMALLOC_SHOW_STATS=1 || exit 1
log=$bench_log
redis_fill "$keys" 16384
echo "filled: rss_mib=$(bench_rss_mib "$redis_pid")"
$bench_cli_pin redis-benchmark -s "$redis_sock" -t set -d 512 -r "$keys" -n $((4 * keys)) -P 16 -c 50 -q --csv | tail -1
echo "after phase 1: rss_mib=$(bench_rss_mib "$redis_pid")"
sleep 2
echo "2 s later: rss_mib=$(bench_rss_mib "$redis_pid")"
redis-cli -s "$redis_sock" info memory | grep -E '^used_memory:|^used_memory_rss:'
redis_stop
grep -E '^ *(reserved|committed|purges|-batched|-calls|-vectored|purged|process) ' "$log"
rm -f "$log"
