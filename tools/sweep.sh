#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The README main-job sweep: purge-bench over vlen 1..1024, scattered
# layout (nothing can coalesce, so batching is all that helps), with one
# helper thread on the other CPU so every TLB flush needs an IPI, as in a
# multi-threaded program.  Prints the table, writes results/sweep.csv and
# results/sweep.svg.
#
# usage: tools/sweep.sh [BUILD_DIR] [purge-bench options...]
#   BUILD_DIR defaults to ./build; later options override the defaults
#   below (e.g. tools/sweep.sh build --size 256M --repeat 9).
#   RESULTS_DIR (default ./results) says where the files go.
#
# The defaults are sized to finish in under a minute on a 2-CPU machine:
# on the 6.18 test VM every pass re-faults the purged pages (untimed, but
# ~5 ms per MiB there), which is what bounds the region size.
set -eu

build=build
case ${1-} in
-*|'') ;;
*) build=$1; shift ;;
esac
bench=$build/tools/purge-bench
results=${RESULTS_DIR:-results}

if [ ! -x "$bench" ]; then
	echo "sweep.sh: $bench not found; build first: meson setup $build && ninja -C $build" >&2
	exit 1
fi
mkdir -p "$results"

start=$(date +%s)
"$bench" \
	--layout scattered --threads 2 --size 64M --piece 4K --advice dontneed \
	--batch 1,2,4,8,16,32,64,128,256,512,1024 --repeat 5 --suggest \
	--csv --out "$results/sweep.csv" --plot "$results/sweep.svg" "$@"
end=$(date +%s)
echo "sweep.sh: done in $((end - start)) s; results in $results/" >&2
