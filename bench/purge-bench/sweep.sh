#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The README main-job sweep: purge-bench over vlen 1..1024, scattered
# layout (nothing can coalesce, so batching is all that helps), with one
# helper thread on the other CPU so every TLB flush needs an IPI, as in a
# multi-threaded program.  Prints the table; writes results/sweep.csv (rows
# only), results/sweep.json (machine, parameters, raw samples, warnings,
# the suggestion) and results/sweep.svg (drawn from the CSV by plot.gp).
#
# usage: see usage() below (bench/purge-bench/sweep.sh --help).
#
# The defaults take about a minute on a quiet 2-CPU machine (46 s on the
# 6.18 test VM on 2026-12-04; 121 s at load average 4-6 on 2026-12-05): every
# pass re-faults the purged pages (untimed, but ~5 ms per MiB there), which
# is what bounds the region size.  The last line printed is the conclusion:
# the batch to use, why, and its gain over the madvise loop.
set -eu

usage() {
	cat <<EOF
usage: $0 [BUILD_DIR] [purge-bench options...]
Run the README's sweep: BUILD_DIR/bench/purge-bench over vlen 1..1024 on
64 MiB purged in scattered 4 KiB pieces, with a second thread, --repeat 5
and --suggest.  Prints the table; writes RESULTS_DIR/sweep.csv, sweep.json
and, with gnuplot, sweep.svg.
  BUILD_DIR   meson build directory (default: build)
  options     passed on after the defaults, so they win, e.g.
              $0 build --size 256M --repeat 9
              (BUILD_DIR/bench/purge-bench --help lists them)
  -h, --help  this text
Environment: RESULTS_DIR, where the files go (default: results).
Exit status: purge-bench's; 1 when it is not built.
EOF
}
# --help anywhere is ours, not purge-bench's: nothing runs.
for arg; do
	case $arg in
	-h | --help) usage; exit 0 ;;
	esac
done

build=build
case ${1-} in
-*|'') ;;
*) build=$1; shift ;;
esac
bench=$build/bench/purge-bench
results=${RESULTS_DIR:-results}

if [ ! -x "$bench" ]; then
	echo "sweep.sh: $bench not found; build first: meson setup $build && ninja -C $build" >&2
	exit 1
fi
mkdir -p "$results"
plot="--plot $results/sweep.svg"
if ! command -v gnuplot >/dev/null; then
	echo "sweep.sh: gnuplot not installed (Debian: gnuplot-nox): no plot" >&2
	plot=
fi

start=$(date +%s)
# shellcheck disable=SC2086 # $plot is two words or none
"$bench" \
	--layout scattered --threads 2 --size 64M --piece 4K --advice dontneed \
	--batch 1,2,4,8,16,32,64,128,256,512,1024 --repeat 5 --suggest \
	--csv --out "$results/sweep.csv" $plot "$@"
end=$(date +%s)
echo "sweep.sh: done in $((end - start)) s; results in $results/" >&2
