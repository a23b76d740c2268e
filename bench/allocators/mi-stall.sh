#!/bin/sh
# SPDX-License-Identifier: MIT
#
# mi-stall under several mimalloc builds, interleaved, into one folder: every
# run's rows (mi-stall --csv), a summary table (medians over the rounds), a
# trace of B's pairs in the last round and a plot of it (latency against
# time), the libpurge counters of one run per build, the machine and the
# load before and after.  A benchmark: it asserts nothing about times.
#
# usage: mi-stall.sh -b BUILD -l NAME=LIBMIMALLOC [-l NAME=LIB ...]
#                    [-r ROUNDS] [-o DIR] [-- mi-stall options]
#   -b  the integrations' meson build, with workloads/mi-stall
#       (default integrations-build/meson)
#   -l  a libmimalloc.so.2 to preload, and its name in the results; the
#       first is the baseline of the summary's ratios (give stock first;
#       integrations/mimalloc/build.sh [--stock] builds them)
#   -r  rounds, each runs every build in every mode once (default 5)
#   -o  output folder (default results/mi-stall-DATE; a folder a document
#       cites must be one git keeps: see .ci/check-cited-results.sh)
# Modes (the environment of each run):
#   default  MIMALLOC_DECOMMIT_DELAY=0: every free decommits at once (stock
#            madvises, the patched library queues; it flushes every 8 MiB)
#   held     also MIMALLOC_PURGE_MAX_PENDING=0 MIMALLOC_PURGE_MAX_DELAY=1000000:
#            the patched library holds the frees queued and mi_collect(true)
#            purges them all (stock ignores the two)
# Exit status: 0; 1 when a run fails; 2 for bad options.
set -eu

build=integrations-build/meson rounds=5 libs=
out=results/mi-stall-$(date +%F)
usage() { sed -n '4,25p' "$0"; }
# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"
bench_bad_status=2
bench_opts 'b:build l+libs r:rounds o:out' "$@" && shift "$bench_shift"
# shellcheck disable=SC2086 # one line, a blank between
libs=$(echo $libs)
bin=$build/workloads/mi-stall
[ -x "$bin" ] || { echo "mi-stall.sh: missing: '$bin' (see -h)" >&2; exit 2; }
[ -n "$libs" ] || { echo "mi-stall.sh: no -l NAME=LIB (see -h)" >&2; exit 2; }
for l in $libs; do
	case $l in *=*) ;; *) echo "mi-stall.sh: -l wants NAME=LIB: $l" >&2; exit 2 ;; esac
	[ -e "${l#*=}" ] || { echo "mi-stall.sh: missing: '${l#*=}'" >&2; exit 2; }
done
modes="default held"
first=${libs# }
first=${first%% *}
menv() {
	case $1 in
	default) echo MIMALLOC_DECOMMIT_DELAY=0 ;;
	held) echo MIMALLOC_DECOMMIT_DELAY=0 MIMALLOC_PURGE_MAX_PENDING=0 MIMALLOC_PURGE_MAX_DELAY=1000000 ;;
	esac
}
mkdir -p "$out"
rm -f "$out"/trace-*.csv "$out"/run-*.csv "$out"/mi-stall.png
{
	echo "date: $(date -u '+%F %T UTC')"
	echo "command: $0 -b $build$(for l in $libs; do printf ' -l %s' "$l"; done) -r $rounds -o $out${*:+ -- $*}"
	echo "nproc: $(nproc)"
	echo "kernel: $(uname -r)"
	grep -m1 "model name" /proc/cpuinfo
	echo "transparent_hugepage: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
	for l in $libs; do echo "lib ${l%%=*}: ${l#*=} (sha256 $(sha256sum "${l#*=}" | cut -c1-16))"; done
	for m in $modes; do echo "mode $m: $(menv "$m")"; done
	echo "mi-stall options: $*"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"
for r in $(seq "$rounds"); do
	for m in $modes; do
		for l in $libs; do
			name=${l%%=*}
			trace=
			[ "$r" = "$rounds" ] && trace="--trace $out/trace-$m-$name.csv"
			# shellcheck disable=SC2046,SC2086
			env $(menv $m) LD_PRELOAD="${l#*=}" "$bin" --csv --repeat 1 $trace "$@" |
				sed "1s/^/mode,config,/;1!s/^1,/$m,$name,$r,/" >"$out/run-$m-$name-$r.csv"
		done
	done
	echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
# one table: every round of every configuration
head -n 1 "$out/run-default-${first%%=*}-1.csv" >"$out/mi-stall.csv"
for m in $modes; do for l in $libs; do for r in $(seq "$rounds"); do
	tail -n +2 "$out/run-$m-${l%%=*}-$r.csv"
done; done; done >>"$out/mi-stall.csv"
rm -f "$out"/run-*.csv

# the libpurge counters of one more run of each build in each mode: the
# collect must purge through the queue (stock has no such line)
for m in $modes; do for l in $libs; do
	# shellcheck disable=SC2046
	line=$(env $(menv "$m") MIMALLOC_SHOW_STATS=1 LD_PRELOAD="${l#*=}" "$bin" --repeat 1 "$@" 2>&1 |
		grep -a 'libpurge:' | sed 's/^ *//') || true
	echo "$m ${l%%=*}: ${line:-(no libpurge line)}"
done; done >"$out/counters.txt"

# medians over the rounds (columns of mi-stall.csv: 4 release_ms, 5 collect_ms,
# 10 purge_n, 11 purge_p50, 12 purge_p99.9, 13 purge_max, 16 before_p99.9, 17 before_max)
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
col() { awk -F, -v m="$1" -v c="$2" -v k="$3" '$1==m && $2==c {print $k}' "$out/mi-stall.csv" | median; }
{
	echo "medians of $rounds rounds; B's pairs during A's release + collect (the purge)"
	echo "mode | config | release ms | collect ms | B pairs | B p50 us | B p99.9 us | B max us | p99.9 / base | max / base | B p99.9 before us | B max before us"
	for m in $modes; do
		bp=$(col "$m" "${first%%=*}" 12)
		bx=$(col "$m" "${first%%=*}" 13)
		for l in $libs; do
			c=${l%%=*}
			p=$(col "$m" "$c" 12) x=$(col "$m" "$c" 13)
			echo "$m | $c | $(col "$m" "$c" 4) | $(col "$m" "$c" 5) | $(col "$m" "$c" 10) | $(col "$m" "$c" 11) | $p | $x |" \
				"$(awk -v a="$p" -v b="$bp" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}') |" \
				"$(awk -v a="$x" -v b="$bx" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}') | $(col "$m" "$c" 16) | $(col "$m" "$c" 17)"
		done
	done
} >"$out/summary.txt"

# the plot: B's latency against time in the last round, one panel a mode
if command -v gnuplot >/dev/null; then
	plots=
	for m in $modes; do
		p=
		for l in $libs; do
			c=${l%%=*}
			p="$p${p:+, }'$out/trace-$m-$c.csv' using 2:3 with points pt 7 ps 0.25 title '$c'"
		done
		plots="$plots
set title 'mode $m: thread B malloc+touch+free during A release + mi\\_collect(true), round $rounds'
plot $p"
	done
	gnuplot <<EOF || echo "mi-stall.sh: gnuplot failed; no plot" >&2
set terminal pngcairo size 1100,900
set output '$out/mi-stall.png'
set datafile separator ','
set multiplot layout 2,1
set logscale y
set xlabel 'ms since A began to free'
set ylabel 'B pair latency (us)'
set key outside right
$plots
unset multiplot
EOF
fi
echo "mi-stall.sh: $out/summary.txt" >&2
column -s'|' -t "$out/summary.txt" 2>/dev/null || cat "$out/summary.txt"
