#!/bin/sh
# SPDX-License-Identifier: MIT
#
# measure.sh: jemalloc and the patched jemalloc (integrations/jemalloc) on
# the ebizzy-style workload, side by side in one run.  Configurations are
# interleaved (the order rotates every repetition) and medians reported, so
# drift in machine load hits them all alike.
#
#   nopurge    jemalloc, MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1
#   immediate  jemalloc, MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0
#   default    jemalloc, no MALLOC_CONF
#   patched    the patched jemalloc, dirty_decay_ms:0,muzzy_decay_ms:0, its
#              defaults
#   patched-loop  the same with PURGE_MODE=loop (one madvise per range)
#   patched@SIZE  (with -m SIZE,...) the same with purge_max_pending:SIZE
#   NAME       (with -c 'NAME VAR=VALUE...') the patched jemalloc with those
#              variables (MALLOC_CONF=... replaces the one above)
#
# -k 'CONFIG...' runs only those configurations (nopurge and immediate are
# always kept: the relative columns need them).
#
# Syscalls and page faults are counted with perf's syscall tracepoints
# (in-kernel counters, no slowdown); without perf, a second pass under
# strace -c -f with a fixed number of chunks gives the syscall counts.
#
# usage: see usage() below (measure.sh -h or --help).
# Each -x adds a scenario (default: the brief's shape, then a varying one).
# Scenario arguments and configuration environments are word lists, split
# on purpose:
# shellcheck disable=SC2086,SC2046
set -u
# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

usage() {
	cat <<EOF
usage: $0 -w WORKLOAD -P PATCHED [-j LIBJEMALLOC] [-r reps]
       [-d seconds] [-o outdir] [-m SIZE,...] [-c 'NAME VAR=VALUE...']...
       [-k 'CONFIG...'] [-x 'workload args']...
Run jemalloc and the patched jemalloc on a workload
(ebizzy-lite or churn), configurations interleaved, and report medians.
  -w WORKLOAD   the workload program (integrations-build/meson/workloads/ebizzy-lite)
  -P PATCHED    the patched libjemalloc.so.2 (integrations/jemalloc/build.sh)
  -j LIBJEMALLOC libjemalloc.so.2 (default: found with ldconfig)
  -r reps       repetitions of every configuration (default $reps)
  -d seconds    length of one run (default $secs)
  -o outdir     raw runs and report.txt (default: a new /tmp/purge-measure.*)
  -m SIZE,...   add patched@SIZE: MALLOC_CONF purge_max_pending:SIZE (bytes)
  -c 'NAME VAR=VALUE...'  add configuration NAME: the patched jemalloc with
                those variables
  -k 'CONFIG...'  run only these (nopurge and immediate are always kept)
  -x 'args'     add a scenario: arguments for the workload (default:
                '-s 5M', then '-s 5M -l 4 -j 50')
  -h, --help    this text
Configurations: nopurge, immediate, default, patched, patched-loop (see the top
of this script).  Exit status: 0, or 1 for bad arguments.
EOF
}

work=""
patched=""
je=""
reps=5
secs=5
out=""
scenarios=""
sizes=""
extra=""
keep=""

bench_opts 'w:work P:patched j:je r:reps d:secs o:out x|scenarios m:sizes c|extra k:keep' "$@"
sizes=$(echo "$sizes" | tr ',' ' ')
if [ ! -x "$work" ] || [ ! -r "$patched" ]; then
	echo "$0: -w and -P are required" >&2
	exit 1
fi
if [ -z "$je" ]; then
	je=$(/sbin/ldconfig -p 2>/dev/null | awk '/libjemalloc\.so\.2 /{print $NF; exit}')
fi
[ -r "$je" ] || { echo "$0: libjemalloc.so.2 not found (use -j)" >&2; exit 1; }
# default scenarios: the brief's (T = CPUs, 5 MiB, one live chunk), then a
# varying working set (4 live chunks, sizes +-50%) that makes the queue flush
[ -n "$scenarios" ] || scenarios="|-s 5M|-s 5M -l 4 -j 50"
out=${out:-$(mktemp -d /tmp/purge-measure.XXXXXX)}
mkdir -p "$out"
patched=$(readlink -f "$patched")
work=$(readlink -f "$work")

configs="nopurge immediate default patched patched-loop"
for m in $sizes; do
	configs="$configs patched@$m"
done
# -c: the first word names the configuration
extra_names=$(echo "$extra" | tr '|' '\n' | awk 'NF { printf "%s ", $1 }')
configs="$configs $extra_names"
if [ -n "$keep" ]; then
	sel="nopurge immediate"
	for c in $configs; do
		case " $keep " in *" $c "*) [ "$c" = nopurge ] || [ "$c" = immediate ] ||
			sel="$sel $c" ;; esac
	done
	configs=$sel
fi
decay0="MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0"

config_env() {
	case $1 in
	nopurge) echo "LD_PRELOAD=$je MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1" ;;
	immediate) echo "LD_PRELOAD=$je $decay0" ;;
	default) echo "LD_PRELOAD=$je" ;;
	patched) echo "LD_PRELOAD=$patched $decay0" ;;
	patched-loop) echo "LD_PRELOAD=$patched $decay0 PURGE_MODE=loop" ;;
	patched@*) echo "LD_PRELOAD=$patched $decay0,purge_max_pending:${1#patched@}" ;;
	*) echo "LD_PRELOAD=$patched $decay0" \
		"$(echo "$extra" | tr '|' '\n' | awk -v n="$1" '$1 == n { $1 = ""; print }')" ;;
	esac
}

events="syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise"
events="$events,syscalls:sys_enter_munmap,page-faults"
if bench_perf_ok "$events"; then
	counter=perf
else
	counter=strace
fi

# perf's CSV: value,unit,event,...  -> value of one event, or 0
perf_count() {
	awk -F, -v ev="$2" '$3 == ev { print ($1 ~ /^[0-9]+$/) ? $1 : 0; f = 1 }
		END { if (!f) print 0 }' "$1"
}

field() { # field KEY FILE
	sed -n "s/^RESULT.* $1=\([-0-9.]*\).*/\1/p" "$2" | head -n 1
}

# One timed run; appends a row to $out/runs.tsv
run_one() { # scenario-index scenario-args config rep
	tag="s$1.$3.$4"
	if [ "$counter" = perf ]; then
		# perf itself runs without the preloads; only the workload gets them
		perf stat -x, -o "$out/$tag.perf" -e "$events" -- env $(config_env "$3") \
			"$work" -d "$secs" $2 >"$out/$tag.log" 2>"$out/$tag.err"
	else
		env $(config_env "$3") "$work" -d "$secs" $2 >"$out/$tag.log" 2>"$out/$tag.err"
		: >"$out/$tag.perf"
	fi
	f="$out/$tag.perf"
	l="$out/$tag.log"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "$4" \
		"$(field records_per_s "$l")" "$(field chunks "$l")" "$(field seconds "$l")" \
		"$(field peak_rss_kib "$l")" "$(field avg_rss_kib "$l")" \
		"$(field user_s "$l")" "$(field sys_s "$l")" \
		"$(perf_count "$f" syscalls:sys_enter_madvise)" \
		"$(perf_count "$f" syscalls:sys_enter_process_madvise)" \
		"$(perf_count "$f" syscalls:sys_enter_munmap)" \
		"$(perf_count "$f" page-faults)" >>"$out/runs.tsv"
	tail -n 1 "$out/runs.tsv"
}

# Without perf: syscalls per chunk from strace over a fixed chunk count.
strace_pass() { # scenario-index scenario-args
	for c in $configs; do
		env $(config_env "$c") strace -f -c -o "$out/s$1.$c.strace" \
			"$work" -n 200 $2 >"$out/s$1.$c.strace.log" 2>&1
	done
}

strace_report() {
	echo
	echo "perf unavailable: purge/1kch and faults/ch above are 0; from strace -c -f," \
		"200 chunks per thread:"
	i=0
	for args in "$@"; do
		i=$((i + 1))
		for c in $configs; do
			n=$(awk '$NF == "madvise" || $NF == "process_madvise" { s += $4 }
				END { print s + 0 }' "$out/s$i.$c.strace")
			ch=$(field chunks "$out/s$i.$c.strace.log")
			echo "scenario $i $c: $n purge syscalls for $ch chunks"
		done
	done
}

# median of column COL over rows of scenario S and config C
median() {
	awk -F'\t' -v s="$1" -v c="$2" -v col="$3" '$1 == s && $2 == c { print $col }' \
		"$out/runs.tsv" | bench_median
}

# per-run derived column: purge syscalls per 1000 chunks, faults per chunk,
# CPU ms per chunk; appended as columns 15-17
derive() {
	awk -F'\t' 'BEGIN { OFS = "\t" } {
		ch = ($5 > 0) ? $5 : 1
		print $0, ($11 + $12) * 1000 / ch, $14 / ch, ($9 + $10) * 1000 / ch }' \
		"$out/runs.tsv" >"$out/runs.d.tsv" && mv "$out/runs.d.tsv" "$out/runs.tsv"
}

header() {
	echo "# measure.sh $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "# kernel $(uname -r) $(uname -m), $(nproc) CPUs," \
		"$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
	echo "# $(sed -n 's/^[a-z-]*: malloc=\([^ ]*\).*/jemalloc \1/p' "$out"/s1.nopurge.1.log) ($je)," \
		"patched: $patched, counters: $counter"
	echo "# reps=$reps seconds=$secs; load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

report_scenario() { # index args
	echo
	echo "## scenario $1: $(basename "$work") -d $secs $2  (medians of $reps)"
	printf '%-12s %12s %9s %9s %9s %11s %9s %9s %8s\n' config records/s "rel" \
		peakMiB avgMiB "purge/1kch" "faults/ch" "cpums/ch" munmap
	base=$(median "$1" nopurge 4)
	for c in $configs; do
		r=$(median "$1" "$c" 4)
		printf '%-12s %12.0f %8.0f%% %9.1f %9.1f %11.1f %9.0f %9.2f %8.0f\n' "$c" "$r" \
			"$(echo "$r $base" | awk '{ print ($2 > 0) ? 100 * $1 / $2 : 0 }')" \
			"$(median "$1" "$c" 7 | awk '{ print $1 / 1024 }')" \
			"$(median "$1" "$c" 8 | awk '{ print $1 / 1024 }')" \
			"$(median "$1" "$c" 15)" "$(median "$1" "$c" 16)" \
			"$(median "$1" "$c" 17)" "$(median "$1" "$c" 13)"
	done
	imm_rss=$(median "$1" immediate 7)
	imm_sc=$(median "$1" immediate 15)
	for c in $configs; do
		case $c in nopurge | immediate | default) continue ;; esac
		echo "$c: throughput $(echo "$(median "$1" "$c" 4) $base" |
			awk '{ printf "%.0f%%", 100 * $1 / $2 }') of nopurge," \
			"$(echo "$(median "$1" "$c" 4) $(median "$1" default 4)" |
			awk '{ printf "%.0f%%", ($2 > 0) ? 100 * $1 / $2 : 0 }') of default," \
			"peak RSS $(echo "$(median "$1" "$c" 7) $imm_rss" |
			awk '{ printf "%.2fx", $1 / $2 }') of immediate," \
			"purge syscalls $(echo "$imm_sc $(median "$1" "$c" 15)" |
			awk '{ if ($2 > 0) printf "%.0fx", $1 / $2; else printf "inf (0)" }')" \
			"fewer than immediate"
	done
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$out/runs.tsv"
i=0
old_ifs=$IFS
IFS='|'
set -- $scenarios
IFS=$old_ifs
shift # the list starts with a separator
for args in "$@"; do
	i=$((i + 1))
	echo "scenario $i: $args" >&2
	rep=1
	while [ "$rep" -le "$reps" ]; do
		# rotate the order so no configuration always runs first
		for c in $(bench_order "$configs" "$rep"); do
			run_one "$i" "$args" "$c" "$rep" >&2
		done
		rep=$((rep + 1))
	done
	[ "$counter" = strace ] && strace_pass "$i" "$args"
done
derive

{
	header
	echo "# columns: records/s = lookups per second (higher is better); rel = vs nopurge;"
	echo "# peak/avg RSS sampled every 10 ms from /proc/self/statm; purge/1kch = madvise +"
	echo "# process_madvise calls per 1000 chunks; faults/ch = page faults per chunk;"
	echo "# cpums/ch = user+sys CPU ms per chunk; munmap = munmap calls per run"
	i=0
	for args in "$@"; do
		i=$((i + 1))
		report_scenario "$i" "$args"
	done
	[ "$counter" = strace ] && strace_report "$@"
	echo
	echo "raw runs: $out/runs.tsv (scenario config rep records/s chunks seconds peak avg" \
		"user sys madvise process_madvise munmap faults purge/1kch faults/ch cpums/ch)"
} | tee "$out/report.txt"
