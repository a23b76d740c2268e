#!/bin/sh
# SPDX-License-Identifier: MIT
#
# je-stall under stock and patched jemalloc (and a previous patched one),
# interleaved, into one folder:
# each configuration's rows (je-stall --csv), the machine and the load
# before and after.  A benchmark: it asserts nothing about times.
#
# usage: je-stall.sh -b BUILD -p PATCHED_LIBJEMALLOC [-P PREVIOUS_LIBJEMALLOC]
#                    [-s STOCK_LIBJEMALLOC] [-r ROUNDS] [-o DIR] [-- je-stall options]
#   -b  the integrations' meson build, with workloads/je-stall
#       (default integrations-build/meson)
#   -p  the patched libjemalloc.so.2 (integrations/jemalloc/build.sh builds it)
#   -P  a previous patched libjemalloc.so.2, run as the configuration
#       "previous" between stock and patched (to compare two patch series)
#   -s  stock libjemalloc.so.2 (default: Debian's libjemalloc2)
#   -r  rounds, each runs every configuration once (default 3)
#   -o  output folder (default results/je-stall-DATE; a folder a document
#       cites must be one git keeps: see .ci/check-cited-results.sh)
# Exit status: 0; 1 when a run fails; 2 for bad options.
set -eu

build=integrations-build/meson patched= previous= stock=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 rounds=3
out=results/je-stall-$(date +%F)
usage() { sed -n '4,20p' "$0"; }
# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_bad_status=2
bench_opts 'b:build p:patched P:previous s:stock r:rounds o:out' "$@" && shift "$bench_shift"
bin=$build/workloads/je-stall
for f in "$bin" "$patched" "$stock" ${previous:+"$previous"}; do
	[ -n "$f" ] && [ -e "$f" ] || { echo "je-stall.sh: missing: '$f' (see -h)" >&2; exit 2; }
done
configs="stock${previous:+ previous} patched"
mkdir -p "$out"
{
	echo "nproc: $(nproc)"
	uname -r
	grep -m1 "model name" /proc/cpuinfo
	echo "stock: $stock"
	[ -z "$previous" ] || echo "previous: $previous"
	echo "patched: $patched"
	echo "je-stall options: $*"
} >"$out/machine.txt"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
for r in $(seq "$rounds"); do
	echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%T) UTC" >>"$out/machine.txt"
	for cfg in $configs; do
		case $cfg in
		stock) lib=$stock ;;
		previous) lib=$previous ;;
		*) lib=$patched ;;
		esac
		LD_PRELOAD=$lib "$bin" --csv --repeat 1 "$@" | sed "1!s/^1,/$r,/;1s/^/config,/;1!s/^/$cfg,/" \
			>"$out/$cfg-$r.csv"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
# one table: every round of every configuration
head -n 1 "$out/stock-1.csv" >"$out/je-stall.csv"
for cfg in $configs; do
	for f in "$out/$cfg"-*.csv; do tail -n +2 "$f"; done
done >>"$out/je-stall.csv"
for cfg in $configs; do rm -f "$out/$cfg"-*.csv; done
echo "je-stall.sh: $out/je-stall.csv" >&2
column -s, -t "$out/je-stall.csv" 2>/dev/null || cat "$out/je-stall.csv"
