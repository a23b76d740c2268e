#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# idle-more.sh IDLE STOCK_LIB PATCHED_LIB [RUNS] > idle-more.txt: the delay-0
# idle case of measure-delay0.sh's idle.txt with more runs (default 10), stock
# and patched interleaved, frees at once (-g 0) and 2 ms apart (-g 2), the
# load average before each pair; then per case the patched - stock
# difference of each pair (MiB): its median and range.
set -u
idle=$1 stock=$2 patched=$3 runs=${4:-10}
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); nproc $(nproc), uname -r $(uname -r); load average $(load)"
echo "command: MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=LIB $idle -g G   (RSS in KiB, /proc/self/statm)"
declare -A diffs
for i in $(seq 1 "$runs"); do
	for g in 0 2; do
		ld=$(load)
		s=$(MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=$stock "$idle" -g $g)
		p=$(MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=$patched "$idle" -g $g)
		printf 'gap %s ms run %2d load %s: stock [%s]  patched [%s]\n' $g $i "$ld" "${s#idle: }" "${p#idle: }"
		si=${s##* } pi=${p##* }
		diffs[$g]+="$(( pi - si )) "
	done
done
for g in 0 2; do
	python3 -c 'import sys, statistics as s; v=[int(x)/1024 for x in sys.argv[2:]]
print(f"gap {sys.argv[1]} ms: patched - stock, MiB: median {s.median(v):+.2f}, range {min(v):+.2f} to {max(v):+.2f}, > 1 MiB in {sum(x > 1 for x in v)} of {len(v)}")' $g ${diffs[$g]}
done
echo "load average after: $(load)"
