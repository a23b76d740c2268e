#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The measurements docs/benchmarks.md and docs/huge-pages.md quote, taken
# again with their data kept, into this folder (OUT=DIR: elsewhere), with
# the machine and the load (machine.txt):
#   threads-1, threads-2   purge-bench, 1 and 2 threads: the loop against
#                          libpurge (threads-T.json has every sample)
#   frames                 purge-bench's frames layout (huge pages)
#   queue-1..5             queue-bench: what each call costs, 5 runs
#   huge-1..3              queue-bench --huge 64: a PURGE_HUGE flush of two
#                          pages at the two ends of a 64 GiB heap, 3 runs
# About 3 minutes on the project's 2-vCPU VM.
#
# usage: bench/results/purge-bench/2026-12-05/run.sh [BUILD]   (default: build)
set -eu
here=${OUT:-$(cd "$(dirname "$0")" && pwd)}
build=${1:-build}
pb=$build/bench/purge-bench
qb=$build/bench/queue-bench
for b in "$pb" "$qb"; do
	[ -x "$b" ] || { echo "run.sh: no $b (meson setup $build && ninja -C $build)" >&2; exit 2; }
done
{
	echo "nproc: $(nproc)"
	uname -r
	grep -m1 'model name' /proc/cpuinfo
	echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$here/machine.txt"
for t in 1 2; do
	echo "+ $pb --threads $t --size 64M --batch 1,16,64,256,1024 --repeat 7 --json" >"$here/threads-$t.txt"
	"$pb" --threads "$t" --size 64M --batch 1,16,64,256,1024 --repeat 7 --json \
		>"$here/threads-$t.json" 2>>"$here/threads-$t.txt"
done
echo "+ $pb --layout frames --thp madvise --size 64M --batch 64,1024 --repeat 11 --json" >"$here/frames.txt"
"$pb" --layout frames --thp madvise --size 64M --batch 64,1024 --repeat 11 --json \
	>"$here/frames.json" 2>>"$here/frames.txt"
for r in 1 2 3 4 5; do
	set -- --n 1024,65536 --split 9220,65536,1048576 --repeat 11 --latency
	echo "+ $qb $*" >"$here/queue-$r.txt"
	"$qb" "$@" >>"$here/queue-$r.txt" 2>&1
done
for r in 1 2 3; do
	set -- --n 2 --split 0 --repeat 3 --huge 64
	echo "+ $qb $*" >"$here/huge-$r.txt"
	"$qb" "$@" >>"$here/huge-$r.txt" 2>&1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$here/machine.txt"
cat "$here"/threads-1.txt "$here"/threads-2.txt "$here"/frames.txt
