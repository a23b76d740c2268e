#!/bin/sh
# SPDX-License-Identifier: MIT
# The decay-0 knob points on ebizzy-lite (from the repository root, with
# the libraries of integrations/jemalloc/build.sh and build.sh --stock and
# the workloads of meson setup B integrations && ninja -C B):
exec bench/frontier/frontier.sh -b B \
  -j integrations-build/jemalloc/stock/lib/libjemalloc.so.2 \
  -J integrations-build/jemalloc/stock/lib/libjemalloc.so.2 \
  -P integrations-build/jemalloc/lib/libjemalloc.so.2 \
  -p 'jep-d0 MALLOC_CONF=dirty_decay_ms:0,background_thread:false' \
  -p 'jep-d0-md0 MALLOC_CONF=dirty_decay_ms:0,background_thread:false,purge_max_delay_ms:0' \
  -p 'jep-d0-pend1m MALLOC_CONF=dirty_decay_ms:0,background_thread:false,purge_max_pending:1048576' \
  -p 'jep-d0-pend8m MALLOC_CONF=dirty_decay_ms:0,background_thread:false,purge_max_pending:8388608' \
  -p 'jep-d0-md0-pop MALLOC_CONF=dirty_decay_ms:0,background_thread:false,purge_max_delay_ms:0,purge_populate_max:8388608' \
  -c 'je-d0 je531-b128 jep-*' -w 'ebizzy-lite*' -r 3 -d 5 "$@"
