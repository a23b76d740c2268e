#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The measurements docs/benchmarks.md and docs/huge-pages.md quote, taken
# again with their data kept: purge-bench with 1 and 2 threads (the loop
# against libpurge), and purge-bench's frames layout (huge pages), into
# this folder (OUT=DIR: elsewhere), with the machine and the load.
#
# usage: docs/results-2026-12-05-bench/run.sh [BUILD]   (default: build)
set -eu
here=${OUT:-$(cd "$(dirname "$0")" && pwd)}
build=${1:-build}
pb=$build/tools/purge-bench
[ -x "$pb" ] || { echo "run.sh: no $pb (meson setup $build && ninja -C $build)" >&2; exit 2; }
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
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$here/machine.txt"
cat "$here"/threads-1.txt "$here"/threads-2.txt "$here"/frames.txt
