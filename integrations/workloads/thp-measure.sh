#!/bin/sh
# SPDX-License-Identifier: MIT
#
# thp-measure.sh: jemalloc with transparent huge pages (MALLOC_CONF=thp:always)
# alone and under the shim with and without PURGE_HUGE, side by side: huge
# pages split, RSS, memory cgroup usage, AnonHugePages and throughput.
# Configurations are interleaved (the order rotates every repetition) and
# medians reported.
#
#   jemalloc     jemalloc alone, MALLOC_CONF=thp:always (its other defaults)
#   shim-huge    the shim, MALLOC_CONF=thp:always: PURGE_HUGE on by itself
#   shim-nohuge  the same with PURGE_JEMALLOC_HUGE=0
#
# Each run gets a memory cgroup of its own below this process's (v1
# memory.max_usage_in_bytes, v2 memory.peak: the exact peak) when that
# cgroup can be written to; otherwise the process's own cgroup is sampled,
# shared with everything else in it (said in the report).  Split huge pages
# are the run's delta of thp_split_pmd in /proc/vmstat: system-wide, so
# other processes that split huge pages meanwhile count too.  RSS,
# AnonHugePages and cgroup usage are sampled every 0.2 s from outside.
#
# usage: see usage() below (thp-measure.sh -h or --help).
# shellcheck disable=SC2086,SC2046 # configuration environments are word lists
set -u

usage() {
	cat <<EOF
usage: $0 -w WORKLOAD -s SHIM [-j LIBJEMALLOC] [-r reps] [-d seconds]
       [-o outdir] [-x 'workload args']
Run a workload (churn, ebizzy-lite) under jemalloc with thp:always, alone
and under libpurge_jemalloc.so with and without PURGE_HUGE, interleaved,
and report medians of split huge pages, RSS, memory cgroup usage,
AnonHugePages and throughput.
  -w WORKLOAD    the workload program (build/integrations/workloads/churn)
  -s SHIM        libpurge_jemalloc.so
  -j LIBJEMALLOC libjemalloc.so.2 (default: found with ldconfig)
  -r reps        repetitions of every configuration (default $reps)
  -d seconds     length of one run (default $secs)
  -o outdir      raw runs and report.txt (default: a new /tmp/purge-thp.*)
  -x 'args'      workload arguments (default: '$args')
  -h, --help     this text
Exit status: 0, or 1 for bad arguments.
EOF
}

work=""
shim=""
je=""
reps=3
secs=10
out=""
args="-m 1G"

case ${1-} in --help)
	usage
	exit 0
	;;
esac
while getopts "w:s:j:r:d:o:x:h" opt; do
	case $opt in
	w) work=$OPTARG ;;
	s) shim=$OPTARG ;;
	j) je=$OPTARG ;;
	r) reps=$OPTARG ;;
	d) secs=$OPTARG ;;
	o) out=$OPTARG ;;
	x) args=$OPTARG ;;
	h)
		usage
		exit 0
		;;
	*)
		usage >&2
		exit 1
		;;
	esac
done
if [ ! -x "$work" ] || [ ! -r "$shim" ]; then
	echo "$0: -w and -s are required" >&2
	exit 1
fi
[ -n "$je" ] || je=$(/sbin/ldconfig -p 2>/dev/null | awk '/libjemalloc\.so\.2 /{print $NF; exit}')
[ -r "$je" ] || {
	echo "$0: libjemalloc.so.2 not found (use -j)" >&2
	exit 1
}
out=${out:-$(mktemp -d /tmp/purge-thp.XXXXXX)}
mkdir -p "$out"
shim=$(readlink -f "$shim")
work=$(readlink -f "$work")
configs="jemalloc shim-huge shim-nohuge"

config_env() {
	case $1 in
	jemalloc) echo "LD_PRELOAD=$je MALLOC_CONF=thp:always" ;;
	shim-huge) echo "LD_PRELOAD=$shim:$je MALLOC_CONF=thp:always PURGE_JEMALLOC_STATS=1" ;;
	shim-nohuge) echo "LD_PRELOAD=$shim:$je MALLOC_CONF=thp:always PURGE_JEMALLOC_STATS=1" \
		"PURGE_JEMALLOC_HUGE=0" ;;
	esac
}

# This process's memory cgroup: v1 (a "memory" controller line) or v2 ("0::").
cg_v1=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)
cg_v2=$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup)
if [ -n "$cg_v1" ] && [ -r "/sys/fs/cgroup/memory$cg_v1/memory.usage_in_bytes" ]; then
	cg_dir=/sys/fs/cgroup/memory${cg_v1%/}
	cg_usage=memory.usage_in_bytes
	cg_peak=memory.max_usage_in_bytes
elif [ -n "$cg_v2" ] && [ -r "/sys/fs/cgroup${cg_v2%/}/memory.current" ]; then
	cg_dir=/sys/fs/cgroup${cg_v2%/}
	cg_usage=memory.current
	cg_peak=memory.peak
else
	cg_dir=""
fi
cg_own=""
if [ -n "$cg_dir" ] && mkdir "$cg_dir/thp-measure.$$" 2>/dev/null; then
	cg_own=$cg_dir/thp-measure.$$
	cg_note="a memory cgroup of its own per run ($cg_dir/thp-measure.PID)"
elif [ -n "$cg_dir" ]; then
	cg_note="shared cgroup $cg_dir: usage includes other processes"
else
	cg_note="no memory cgroup found: cgroup columns are 0"
fi
trap '[ -z "$cg_own" ] || rmdir "$cg_own" 2>/dev/null' EXIT

vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
kib() { awk -v k="$1:" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$2" 2>/dev/null; }

# Samples PID every 0.2 s until it exits: "rss_kib anonhuge_kib cg_bytes" lines.
sample() { # pid file
	while kill -0 "$1" 2>/dev/null; do
		r=$(kib Rss "/proc/$1/smaps_rollup")
		h=$(kib AnonHugePages "/proc/$1/smaps_rollup")
		c=0
		[ -n "$cg_dir" ] && c=$(cat "${cg_own:-$cg_dir}/$cg_usage" 2>/dev/null || echo 0)
		[ -n "$r" ] && echo "${r:-0} ${h:-0} $c" >>"$2"
		sleep 0.2
	done
}

# One run: appends a row to $out/runs.tsv.
run_one() { # config rep
	tag="$1.$2"
	: >"$out/$tag.samples"
	if [ -n "$cg_own" ]; then
		# a fresh peak: v1 resets on a write, v2's memory.peak is per cgroup
		rmdir "$cg_own" 2>/dev/null
		mkdir "$cg_own"
	fi
	split0=$(vmstat thp_split_pmd)
	# the child joins the cgroup before it execs the workload
	sh -c 'if [ -n "$1" ]; then echo $$ >"$1/cgroup.procs"; fi; shift; exec "$@"' sh \
		"$cg_own" env $(config_env "$1") "$work" -d "$secs" $args \
		>"$out/$tag.log" 2>"$out/$tag.err" &
	pid=$!
	sample "$pid" "$out/$tag.samples"
	wait "$pid"
	split1=$(vmstat thp_split_pmd)
	peak=0
	[ -n "$cg_own" ] && peak=$(cat "$cg_own/$cg_peak" 2>/dev/null || echo 0)
	rps=$(sed -n 's/^RESULT.* records_per_s=\([0-9.]*\).*/\1/p' "$out/$tag.log")
	awk -v c="$1" -v r="$2" -v rps="${rps:-0}" -v sp=$((split1 - split0)) -v peak="$peak" '
		{ n++; rs += $1; hs += $2; cs += $3
		  if ($1 > rm) rm = $1; if ($2 > hm) hm = $2; if ($3 > cm) cm = $3 }
		END { if (!n) n = 1; if (peak > 0) cm = peak
		  printf "%s\t%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", c, r, rps, sp,
		    rm / 1024, rs / n / 1024, cm / 1048576, cs / n / 1048576, hm / 1024, hs / n / 1024 }' \
		"$out/$tag.samples" >>"$out/runs.tsv"
	tail -n 1 "$out/runs.tsv"
}

median() { # config column
	awk -F'\t' -v c="$1" -v col="$2" '$1 == c { print $col }' "$out/runs.tsv" | sort -g |
		awk '{ v[NR] = $1 } END { if (!NR) { print "nan"; exit }
			print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$out/runs.tsv"
nconf=$(echo "$configs" | wc -w)
rep=1
while [ "$rep" -le "$reps" ]; do
	rot=$(((rep - 1) % nconf))
	order=$(echo "$configs $configs" | awk -v r="$rot" -v n="$nconf" \
		'{ for (j = r + 1; j <= r + n; j++) printf "%s ", $j }')
	for c in $order; do
		run_one "$c" "$rep" >&2
	done
	rep=$((rep + 1))
done

{
	echo "# thp-measure.sh $(date -u +%Y-%m-%dT%H:%MZ): $(basename "$work") -d $secs $args"
	echo "# kernel $(uname -r), $(nproc) CPUs, THP enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)," \
		"defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
	echo "# $(sed -n 's/^[a-z-]*: malloc=\([^ ]*\).*/jemalloc \1/p' "$out/jemalloc.1.log") ($je)"
	echo "# reps=$reps (medians); load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# cgroup: $cg_note"
	echo "# splits = thp_split_pmd delta, machine-wide: other processes' splits count too; RSS, AnonHugePages, cgroup sampled every 0.2 s"
	printf '%-12s %10s %7s %9s %9s %9s %9s %9s %9s\n' config records/s splits \
		peakRSS avgRSS peakCg avgCg peakHuge avgHuge
	for c in $configs; do
		printf '%-12s %10.0f %7.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n' "$c" \
			"$(median "$c" 3)" "$(median "$c" 4)" "$(median "$c" 5)" "$(median "$c" 6)" \
			"$(median "$c" 7)" "$(median "$c" 8)" "$(median "$c" 9)" "$(median "$c" 10)"
	done
	echo "(MiB; peakCg is the cgroup's own peak where it has one)"
	echo "raw runs: $out/runs.tsv (config rep records/s splits peakRSS avgRSS peakCg avgCg" \
		"peakHuge avgHuge)"
} | tee "$out/report.txt"
