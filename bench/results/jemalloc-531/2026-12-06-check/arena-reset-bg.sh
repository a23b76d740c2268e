#!/bin/sh
# SPDX-License-Identifier: MIT
# arena-reset-bg.sh N TREE...: run jemalloc's test/unit/arena_reset N times
# under MALLOC_CONF=background_thread:true in each built tree (its tests
# built: make tests), and print how many runs passed, with the load.
n=$1
shift
for t in "$@"; do
	ok=0 bad=0
	l1=$(cut -d' ' -f1 /proc/loadavg)
	for _ in $(seq "$n"); do
		if (cd "$t" && MALLOC_CONF=background_thread:true timeout 120 sh test/test.sh test/unit/arena_reset >/dev/null 2>&1); then
			ok=$((ok + 1))
		else
			bad=$((bad + 1))
		fi
	done
	echo "$t: $ok passed, $bad failed of $n (load $l1 before, $(cut -d' ' -f1 /proc/loadavg) after)"
done
