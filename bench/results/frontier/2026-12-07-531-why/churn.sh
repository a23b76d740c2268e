#!/bin/sh
# SPDX-License-Identifier: MIT
# churn: the patched decay points between jep-d0 and jep-d1000-bg that the
# grid lacks, against the stock points they might dominate (from the
# repository root; libraries and B as in knobs.sh):
exec bench/frontier/frontier.sh -b B \
  -j integrations-build/jemalloc/stock/lib/libjemalloc.so.2 \
  -J integrations-build/jemalloc/stock/lib/libjemalloc.so.2 \
  -P integrations-build/jemalloc/lib/libjemalloc.so.2 \
  -p 'jep-d100 MALLOC_CONF=dirty_decay_ms:100,background_thread:false' \
  -p 'jep-d100-bg MALLOC_CONF=dirty_decay_ms:100,background_thread:true' \
  -p 'jep-d300-bg MALLOC_CONF=dirty_decay_ms:300,background_thread:true' \
  -p 'jep-d1000-bg MALLOC_CONF=dirty_decay_ms:1000,background_thread:true' \
  -c 'je-d100-bg je-d1000 je-d10000-bg jep-*' -w 'churn' -r 3 -d 5 "$@"
