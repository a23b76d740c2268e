#!/bin/sh
# SPDX-License-Identifier: MIT
#
# redis-bench.sh: redis-server (the system's, linked to libjemalloc.so.2)
# under several allocator configurations, side by side: SET throughput,
# the server's CPU time, its RSS and its purge system calls in two phases.
# Configurations are interleaved (the order rotates every repetition) and
# medians reported.
#
#   fill     KEYS values of 16 KiB (key:000000000000 ...; about 930 MiB at
#            the default 59,500), set by a Lua script: not measured
#   phase 1  redis-benchmark SETs 512-byte values to random keys of the same
#            keyspace, 4 x KEYS requests (98% of the values replaced): the
#            heap shrinks by about 900 MiB
#   phase 2  SETs of 64 KiB values to random keys of the first KEYS2
#            (8,192: about 640 MiB), 4 x KEYS2 requests: the heap grows
#            back, then every SET frees one 64 KiB value and makes another
#
#   defaults   jemalloc as redis runs it (its 10 s decay, redis' background thread)
#   immediate  MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 (a purge per extent)
#   batch531   jemalloc 5.3.1 (-J) with immediate purging and its own
#              process_madvise batching (process_madvise_max_batch:BATCH)
#   patched    the patched jemalloc (-L, integrations/jemalloc/build.sh)
#              with redis' defaults, as "defaults"
#   NAME       (-c 'NAME VAR=VALUE...') the patched jemalloc with those
#              variables (MALLOC_CONF=... for its knobs)
#
# CPU is the server's (every thread, /proc/PID/task/*/schedstat) over the
# phase; RSS is VmRSS at the phase's end; faults are the server's minor
# page faults in the phase (/proc/PID/stat); purge calls are madvise and
# process_madvise calls of the server during the phase (perf's syscall
# tracepoints; "-" without perf).  The client runs on the same machine:
# with two CPUs or more, the server (all its threads) on the last CPU and
# redis-benchmark on the others (taskset), unless -T.
#
# usage: see usage() below (redis-bench.sh -h or --help).
# shellcheck disable=SC2086,SC2046 # configuration environments are word lists
set -u
# shellcheck source-path=SCRIPTDIR source=bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

usage() {
	cat <<EOF
usage: $0 [-L PATCHED] [-j LIBJEMALLOC] [-J LIBJEMALLOC531] [-r reps] [-k KEYS]
       [-K KEYS2] [-b BATCH] [-P pipeline] [-C clients] [-c 'NAME VAR=VALUE...']...
       [-x 'CONFIG...'] [-o outdir] [-T]
redis-server under jemalloc's defaults, immediate purging, jemalloc 5.3.1's
process_madvise batching and the patched jemalloc, interleaved: SET/s,
server CPU, RSS and purge calls after 16 KiB values are replaced by 512-byte
ones (phase 1) and in a churn of 64 KiB values (phase 2); medians.
  -L PATCHED       the patched libjemalloc.so.2 (integrations/jemalloc/build.sh);
                   without it the patched rows are left out
  -j LIBJEMALLOC   jemalloc redis runs with (default: redis' own, ldconfig's)
  -J LIBJEMALLOC531 jemalloc 5.3.1 for batch531 (default: integrations/
                   jemalloc/build.sh --stock's, integrations-build/jemalloc/
                   stock/lib/libjemalloc.so.2; those rows are left out when
                   it is not there)
  -r reps          repetitions of every configuration (default $reps)
  -k KEYS          16 KiB values filled, replaced in phase 1 (default $keys)
  -K KEYS2         keys of 64 KiB values in phase 2 (default $keys2)
  -b BATCH         batch531's process_madvise_max_batch (default $batch)
  -P pipeline      redis-benchmark -P (default $pipe)
  -C clients       redis-benchmark -c (default $clients)
  -c 'NAME VAR=VALUE...'  add configuration NAME: the patched jemalloc with
                   those variables
  -x 'CONFIG...'   run only these configurations
  -o outdir        raw runs and report.txt (default: a new /tmp/purge-redis.*)
  -T               no pinning (default: the server on the last CPU, the
                   client on the others)
  -h, --help       this text
Exit status: 0, 1 for bad arguments or a server that did not start, 77
without redis-server or redis-benchmark.
EOF
}

patched=""
je=""
je531=$(cd "$(dirname "$0")/../.." && pwd)/integrations-build/jemalloc/stock/lib/libjemalloc.so.2
reps=2
keys=59500
keys2=8192
batch=64
pipe=16
clients=50
extra=""
only=""
out=""
pin=1

bench_opts 'L:patched j:je J:je531 r:reps k:keys K:keys2 b:batch P:pipe C:clients c|extra
	x:only o:out T=pin=0' "$@"
redis_need
if [ -n "$patched" ]; then
	[ -r "$patched" ] || {
		echo "$0: -L $patched: no such library" >&2
		exit 1
	}
	patched=$(readlink -f "$patched")
fi
[ -n "$je" ] || je=$(ldd "$(command -v redis-server)" | awk '/libjemalloc/ { print $3; exit }')
[ -n "$je" ] || je=$(/sbin/ldconfig -p 2>/dev/null | awk '/libjemalloc\.so\.2 /{print $NF; exit}')
[ -r "$je" ] || {
	echo "$0: libjemalloc.so.2 not found (use -j)" >&2
	exit 1
}
out=${out:-$(mktemp -d /tmp/purge-redis.XXXXXX)}
mkdir -p "$out"

configs="defaults immediate"
[ -r "$je531" ] && configs="$configs batch531"
if [ -n "$patched" ]; then
	configs="$configs patched $(echo "$extra" | tr '|' '\n' | awk 'NF { printf "%s ", $1 }')"
elif [ -n "$extra" ]; then
	echo "$0: -c needs -L (its configurations run the patched jemalloc)" >&2
	exit 1
fi
if [ -n "$only" ]; then
	sel=""
	for c in $configs; do
		case " $only " in *" $c "*) sel="$sel $c" ;; esac
	done
	configs=$sel
fi
imm="dirty_decay_ms:0,muzzy_decay_ms:0"
# taskset prefixes: the server alone on the last CPU (noise from the
# client and the scheduler's migrations stays off its CPU time)
bench_pins "$pin"

config_env() {
	case $1 in
	defaults) echo "LD_PRELOAD=$je" ;;
	immediate) echo "LD_PRELOAD=$je MALLOC_CONF=$imm" ;;
	batch531) echo "LD_PRELOAD=$je531 MALLOC_CONF=$imm,process_madvise_max_batch:$batch" ;;
	patched) echo "LD_PRELOAD=$patched" ;;
	*) echo "LD_PRELOAD=$patched" \
		"$(echo "$extra" | tr '|' '\n' | awk -v n="$1" '$1 == n { $1 = ""; print }')" ;;
	esac
}

events=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
bench_perf_ok "$events" && counter=perf || counter=none

# One phase: redis-benchmark, with the server's CPU and purge calls around
# it.  Prints "set_per_s cpu_ms rss_mib purge_calls faults".
phase() { # pid sock tag size keyspace requests
	if [ "$counter" = perf ]; then
		perf stat -x, -o "$out/$3.perf" -e "$events" -p "$1" &
		perfpid=$!
		sleep 0.2 # perf attaches
	fi
	f0=$(bench_minflt "$1")
	c0=$(bench_cpu_ns "$1")
	$bench_cli_pin redis-benchmark -s "$2" -t set -d "$4" -r "$5" -n "$6" -P "$pipe" -c "$clients" --csv \
		>"$out/$3.csv" 2>&1
	c1=$(bench_cpu_ns "$1")
	f1=$(bench_minflt "$1")
	rss=$(bench_rss_mib "$1")
	calls=-
	if [ "$counter" = perf ]; then
		kill -INT "$perfpid"
		wait "$perfpid"
		calls=$(awk -F, '$3 ~ /madvise/ { s += $1 } END { printf "%.0f\n", s }' "$out/$3.perf")
	fi
	rps=$(awk -F, '$1 == "\"SET\"" { gsub(/"/, "", $2); print $2 }' "$out/$3.csv")
	echo "${rps:-0} $(((c1 - c0) / 1000000)) $rss $calls $((f1 - f0))"
}

run_one() { # config rep
	tag="$1.$2"
	redis_start "$out/$tag.log" $(config_env "$1") || exit 1
	redis_fill "$keys" 16384
	filled=$(bench_rss_mib "$redis_pid")
	p1=$(phase "$redis_pid" "$redis_sock" "$tag.p1" 512 "$keys" $((4 * keys)))
	p2=$(phase "$redis_pid" "$redis_sock" "$tag.p2" 65536 "$keys2" $((4 * keys2)))
	redis_stop
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$filled" "$(echo "$p1" | tr ' ' '\t')" \
		"$(echo "$p2" | tr ' ' '\t')" >>"$out/runs.tsv"
	tail -n 1 "$out/runs.tsv"
}

median() { # config column
	awk -F'\t' -v c="$1" -v col="$2" '$1 == c && $col != "-" { print $col }' "$out/runs.tsv" |
		bench_median
}

ratio() { echo "$1 $2" | awk '{ printf "%.2f", ($2 > 0) ? $1 / $2 : 0 }'; }

report_phase() { # phase-number first-column
	c=$2
	echo
	echo "## phase $1: $([ "$1" = 1 ] && echo "16 KiB values replaced by 512-byte ones (-d 512 -r $keys -n $((4 * keys)))" ||
		echo "64 KiB values churned (-d 65536 -r $keys2 -n $((4 * keys2)))")"
	printf '%-10s %9s %7s %8s %7s %8s %8s %8s %8s\n' config SET/s vs_def cpu_ms vs_def \
		rss_MiB vs_imm purges faults
	d_rps=$(median defaults "$c")
	d_cpu=$(median defaults $((c + 1)))
	i_rss=$(median immediate $((c + 2)))
	for k in $configs; do
		r=$(median "$k" "$c")
		u=$(median "$k" $((c + 1)))
		m=$(median "$k" $((c + 2)))
		printf '%-10s %9.0f %6.0f%% %8.0f %6.2fx %8.1f %7.2fx %8s %8s\n' "$k" "$r" \
			"$(echo "$r $d_rps" | awk '{ print ($2 > 0) ? 100 * $1 / $2 : 0 }')" "$u" \
			"$(ratio "$u" "$d_cpu")" "$m" "$(ratio "$m" "$i_rss")" "$(median "$k" $((c + 3)))" \
			"$(median "$k" $((c + 4)))"
	done
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$out/runs.tsv"
rep=1
while [ "$rep" -le "$reps" ]; do
	for c in $(bench_order "$configs" "$rep"); do
		run_one "$c" "$rep" >&2
	done
	rep=$((rep + 1))
done

{
	echo "# redis-bench.sh $(date -u +%Y-%m-%dT%H:%MZ): $(redis-server --version | cut -d' ' -f3,5)," \
		"jemalloc $je, 5.3.1 $je531"
	echo "# kernel $(uname -r), $(nproc) CPUs; reps=$reps (medians); keys=$keys keys2=$keys2" \
		"pipeline=$pipe clients=$clients batch531=$batch; counter: $counter;" \
		"server ${bench_srv_pin:-not pinned}, client ${bench_cli_pin:-not pinned}"
	echo "# load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# filled RSS (MiB): $(for k in $configs; do printf '%s %s  ' "$k" "$(median "$k" 3)"; done)"
	report_phase 1 4
	report_phase 2 9
	echo
	echo "raw runs: $out/runs.tsv (config rep filled_MiB, then per phase: SET/s cpu_ms rss_MiB" \
		"purge_calls faults); server logs: $out/CONFIG.REP.log"
} | tee "$out/report.txt"
