#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# frontier.sh: every allocator configuration as one point on a
# throughput-against-RSS plane, per workload, and whether each stock point
# is dominated by a libpurge-patched one (at least its throughput, at most
# its average RSS, at most 1.05x its CPU).  Configurations are interleaved
# (the order rotates every repetition); medians and the spread are reported
# as an aligned table, CSV and one gnuplot PNG per workload.
#
# Records, per run (README.md, "What each record measures"):
#   throughput  the workload's own figure (lookups/s, values/s, records/s,
#               MiB/s, redis-benchmark's SET/s)
#   cpu_s       task-clock of every thread of the program (perf stat,
#               inherited by its threads; for redis attached with -p for
#               the phase)
#   rss         /proc/PID/statm every 100 ms over the run or the phase:
#               average and peak
#   minflt      minor faults of the program (perf's minor-faults)
#   purges      madvise + process_madvise calls (perf's syscall
#               tracepoints, counted in the kernel); munmap beside them
#   p99_ms      redis-benchmark's 99th percentile latency (redis only)
#
# usage: see usage() below (frontier.sh -h or --help).
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../allocators/bench-lib.sh
. "$here/../allocators/bench-lib.sh"

# ---- the configurations: the one place for the defaults ------------------
# One a line: NAME FAMILY KIND PRELOAD [VAR=VALUE...]
#   FAMILY   je or mi: the workloads it runs and the points it is compared
#            with; "-": a reference, run on every workload, compared with none
#   KIND     stock (a point to be dominated), patched (libpurge inside the
#            allocator: the points that should dominate), other (shown only)
#   PRELOAD  library keys joined by ':' (je -j, je531 -J, jep -P,
#            mi -m, mip -M), or "-" for none (the system's malloc)
je_configs() {
	local d
	for d in 0 100 1000 10000; do
		echo "je-d$d je stock je MALLOC_CONF=dirty_decay_ms:$d,background_thread:false"
		echo "je-d$d-bg je stock je MALLOC_CONF=dirty_decay_ms:$d,background_thread:true"
	done
	echo "je531-b128 je stock je531 MALLOC_CONF=dirty_decay_ms:0,process_madvise_max_batch:128"
}
# mimalloc v3.4.3 (integrations/mimalloc/README.md): a freed range is
# purged MIMALLOC_PURGE_DELAY x MIMALLOC_ARENA_PURGE_MULT ms later (0 in
# either: at once); stock's default is 1000 ms and mult 1.  Both are set
# on every mimalloc row, so the library's defaults cannot move the points.
mi_configs() {
	local d
	for d in 0 10 1000; do
		echo "mi-d$d mi stock mi MIMALLOC_PURGE_DELAY=$d MIMALLOC_ARENA_PURGE_MULT=1"
		[ "$d" = 0 ] || echo "mi-d$d-m10 mi stock mi MIMALLOC_PURGE_DELAY=$d MIMALLOC_ARENA_PURGE_MULT=10"
	done
}

# The patched builds' settings, NAME VAR=VALUE... (-p and -q replace them).
# The patched jemalloc's knobs (integrations/jemalloc/README.md): libpurge,
# process_madvise_max_batch (5.3.1's own), purge_max_delay_ms, purge_max_pending.
patched_je_defaults() {
	cat <<'EOF'
jep-d0 MALLOC_CONF=dirty_decay_ms:0,background_thread:false
jep-d0-bg MALLOC_CONF=dirty_decay_ms:0,background_thread:true,purge_max_delay_ms:100
jep-d0-p32m-bg MALLOC_CONF=dirty_decay_ms:0,background_thread:true,purge_max_delay_ms:200,purge_max_pending:33554432
jep-d1000-bg MALLOC_CONF=dirty_decay_ms:1000,background_thread:true
jep-d10000-bg MALLOC_CONF=dirty_decay_ms:10000,background_thread:true,purge_max_delay_ms:1000
EOF
}
# The patched mimalloc v3 (integrations/mimalloc/README.md): the stock
# points' delays, each with the series' knobs at their defaults
# (MIMALLOC_PURGE_BATCH 1024 ranges a call, MIMALLOC_PURGE_BATCH_SIZE
# 32 MiB), and delay 0 with an 8 MiB batch (what waits at delay 0 is at
# most a batch).
patched_mi_defaults() {
	cat <<'EOF'
mip-d0 MIMALLOC_PURGE_DELAY=0 MIMALLOC_ARENA_PURGE_MULT=1
mip-d0-s8m MIMALLOC_PURGE_DELAY=0 MIMALLOC_ARENA_PURGE_MULT=1 MIMALLOC_PURGE_BATCH_SIZE=8M
mip-d10 MIMALLOC_PURGE_DELAY=10 MIMALLOC_ARENA_PURGE_MULT=1
mip-d10-m10 MIMALLOC_PURGE_DELAY=10 MIMALLOC_ARENA_PURGE_MULT=10
mip-d1000 MIMALLOC_PURGE_DELAY=1000 MIMALLOC_ARENA_PURGE_MULT=1
mip-d1000-m10 MIMALLOC_PURGE_DELAY=1000 MIMALLOC_ARENA_PURGE_MULT=10
EOF
}

# ---- the workloads ---------------------------------------------------------
# One a line: NAME FAMILIES UNIT PROGRAM ARGS... ({secs}: the run's length).
# "redis" is special: one server run gives two workloads, redis-p1 and
# redis-p2 (redis-bench.sh's two phases).
workload_table() {
	local t s
	local z n
	for z in $lite_sizes; do
		n="ebizzy-lite-$z-" # 5M, ebizzy-lite's own default, keeps the plain name
		[ "$z" = 5M ] && n="ebizzy-lite-"
		for t in $threads; do
			echo "${n}t$t je,mi lookups/s $build/workloads/ebizzy-lite -t $t -s $z -d {secs}"
		done
	done
	echo "churn je,mi values/s $build/workloads/churn -d {secs}"
	for s in 5M:5242880 256K:262144; do
		for t in $threads; do
			echo "ebizzy-${s%:*}-t$t mi records/s ${ebizzy:-ebizzy} -t $t -S {secs} -s ${s#*:}"
		done
	done
	echo "python mi MiB/s $python $here/pyalloc.py -d {secs}"
	echo "redis je SET/s redis-server"
}

cpu_slack=1.05 # a dominating point may use this much more CPU

usage() {
	cat <<EOF
usage: $0 [-b BUILD] [-j LIB] [-J LIB] [-P LIB] [-m LIB] [-M LIB]
       [-p 'NAME VAR=VALUE...']... [-q 'NAME VAR=VALUE...']...
       [-a 'NAME FAMILY KIND PRELOAD VAR=VALUE...']... [-c 'PATTERN...']
       [-e EBIZZY] [-y PYTHON] [-w 'PATTERN...'] [-x 'NAME FAMILIES UNIT CMD...']...
       [-t 'THREADS...'] [-z 'SIZES...'] [-r reps] [-d seconds] [-k KEYS] [-K KEYS2] [-S CPUS]
       [-o outdir] [-n] [-R outdir]
Every allocator configuration on a throughput-against-RSS plane, per
workload, interleaved runs; a table, CSV, one PNG per workload, and for
each stock point the patched point that dominates it.
Libraries (rows whose library is missing are left out, with a note):
  -b BUILD   the integrations' meson build directory: ebizzy-lite and churn
             (default: $repo/integrations-build/meson)
  -j LIB     stock libjemalloc.so.2 (default: ldconfig's)
  -J LIB     stock jemalloc 5.3.1, for je531-b128 (default: integrations/
             jemalloc/build.sh --stock's, integrations-build/jemalloc/stock/
             lib/libjemalloc.so.2, where built)
  -P LIB     the patched libjemalloc.so.2 (default: jemalloc/build.sh's,
             integrations-build/jemalloc/lib/, where built)
  -m LIB     stock mimalloc v3, libmimalloc.so.3 (default: mimalloc/build.sh
             --stock's, integrations-build/mimalloc/v3-stock/build/, where built)
  -M LIB     the patched libmimalloc.so.3 (default: mimalloc/build.sh's,
             integrations-build/mimalloc/v3-patched/build/, where built)
Configurations (defaults: the top of this script; frontier.sh -n lists them):
  -p 'NAME VAR=VALUE...'  a patched jemalloc setting; the first -p replaces
             the defaults
  -q 'NAME VAR=VALUE...'  the same for the patched mimalloc
  -a 'NAME FAMILY KIND PRELOAD VAR=VALUE...'  any configuration (a line of
             the table at the top of this script)
  -c 'PATTERN...'  run only the configurations whose names match (globs)
Workloads:
  -e EBIZZY  LTP's ebizzy 0.3 (utils/benchmark/ebizzy-0.3; without it the
             ebizzy rows are left out)
  -y PYTHON  the python3 for the python rows (default: /usr/bin/python3)
  -w 'PATTERN...'  run only the workloads whose names match (globs)
  -x 'NAME FAMILIES UNIT CMD...'  add a workload: CMD prints
             RESULT ops_per_s=N (or records_per_s=N, or "N records/s");
             {secs} in CMD is the run's length; FAMILIES: je,mi,...
  -t 'N...'  ebizzy and ebizzy-lite thread counts (default: $threads)
  -z 'SIZE...'  ebizzy-lite chunk sizes (default: $lite_sizes; a size other
             than 5M names its rows ebizzy-lite-SIZE-tN)
Runs:
  -r reps    repetitions, interleaved (default $reps; medians)
  -d seconds length of a timed run (default $secs)
  -k KEYS    redis: 16 KiB values filled and replaced in phase 1 (default $keys)
  -K KEYS2   redis: keys of 64 KiB values in phase 2 (default $keys2)
  -S CPUS    redis: the server's CPUs, the last CPUS (default $srv_cpus;
             0: no pinning); redis-benchmark runs on the others
  -o outdir  raw runs, runs.tsv, frontier.csv, report.txt, frontier-*.png
             (default: a new /tmp/purge-frontier.*)
  -n         print the plan and its expected duration; run nothing
  -R outdir  the report again from outdir's runs (no runs)
  -h, --help this text
Exit status: 0; 1 for bad arguments or a failed run (its row is left out of
the medians); 77 without perf, or with nothing to run.
EOF
}

# ---- options ---------------------------------------------------------------

build=$repo/integrations-build/meson
je=""
je531=""
jep=""
mi=""
mip=""
pje=""
pmi=""
added=""
cpat=""
ebizzy=""
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3 || echo python3)
wpat=""
extra_wl=""
threads="1 2"
lite_sizes=5M
[ "$(nproc)" -ge 8 ] && threads="1 2 8 16"
reps=3
secs=10
keys=59500
keys2=8192
srv_cpus=1
[ "$(nproc)" -ge 4 ] && srv_cpus=2
out=""
dry=0
report_only=""

parse_options() {
	bench_opts 'b:build j:je J:je531 P:jep m:mi M:mip p+pje q+pmi a+added c:cpat e:ebizzy
		y:python w:wpat x+extra_wl t:threads z:lite_sizes r:reps d:secs k:keys K:keys2 S:srv_cpus o:out
		n=dry=1 R:report_only' "$@" && shift "$bench_shift"
	[ $# -eq 0 ] || { echo "$0: unexpected argument '$1'" >&2 && exit 1; }
	local n
	for n in "$reps" "$secs" "$keys" "$keys2" "$srv_cpus"; do
		[[ $n =~ ^[0-9]+$ ]] || { echo "$0: '$n' is not a number" >&2 && exit 1; }
	done
	if [ "$reps" -lt 1 ] || [ "$secs" -lt 1 ]; then
		echo "$0: -r and -d must be >= 1" >&2
		exit 1
	fi
}

# ---- configurations and workloads, with what is left out -----------------

note() { echo "note: $*" | tee -a "$out/notes.txt" >&2; }

# ldconfig's path of a library name, or nothing
ldpath() { /sbin/ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }'; }

resolve_libs() {
	declare -gA lib
	local b=$repo/integrations-build
	[ -n "$je" ] || je=$(ldpath libjemalloc.so.2)
	[ -n "$je531" ] || je531=$b/jemalloc/stock/lib/libjemalloc.so.2
	[ -n "$jep" ] || jep=$b/jemalloc/lib/libjemalloc.so.2
	[ -n "$mi" ] || mi=$b/mimalloc/v3-stock/build/libmimalloc.so.3
	[ -n "$mip" ] || mip=$b/mimalloc/v3-patched/build/libmimalloc.so.3
	local k
	local -A given=([je]=$je [je531]=$je531 [jep]=$jep [mi]=$mi [mip]=$mip)
	for k in "${!given[@]}"; do
		lib[$k]=""
		[ -n "${given[$k]}" ] && [ -r "${given[$k]}" ] && lib[$k]=$(readlink -f "${given[$k]}")
	done
}

# every configuration line, before selection
all_configs() {
	local l
	je_configs
	if [ -n "$pje" ]; then printf '%s' "$pje"; else patched_je_defaults; fi |
		while read -r l; do [ -n "$l" ] && echo "${l%% *} je patched jep ${l#* }"; done
	mi_configs
	if [ -n "$pmi" ]; then printf '%s' "$pmi"; else patched_mi_defaults; fi |
		while read -r l; do [ -n "$l" ] && echo "${l%% *} mi patched mip ${l#* }"; done
	printf '%s' "$added"
}

matches() { # NAME 'PATTERN...': empty patterns match everything
	local p
	[ -z "$2" ] && return 0
	for p in $2; do
		# shellcheck disable=SC2053 # a glob on purpose
		[[ $1 == $p ]] && return 0
	done
	return 1
}

# $out/configs.tsv: NAME FAMILY KIND PRELOAD ENV (the libraries there)
select_configs() {
	local name fam kind pre env k missing
	local -A opt=([je]=-j [je531]=-J [jep]=-P [mi]=-m [mip]=-M)
	: >"$out/configs.tsv"
	while read -r name fam kind pre env; do
		{ [ -n "$name" ] && matches "$name" "$cpat"; } || continue
		missing=""
		for k in ${pre//:/ }; do
			[ "$k" = - ] || [ -n "${lib[$k]-}" ] || missing="$missing $k (${opt[$k]-?})"
		done
		if [ -n "$missing" ]; then
			note "left out $name: no library$missing"
			continue
		fi
		printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$fam" "$kind" "$pre" "${env:-}" >>"$out/configs.tsv"
	done < <(all_configs)
}

# $out/workloads.tsv: NAME FAMILIES UNIT COMMAND (redis as its two phases)
select_workloads() {
	local name fams unit cmd prog
	: >"$out/workloads.tsv"
	while read -r name fams unit cmd; do
		{ [ -n "$name" ] && matches "$name" "$wpat"; } || continue
		prog=${cmd%% *}
		if [ "$name" = redis ]; then
			if ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null ||
				! command -v redis-server >/dev/null; then
				note "left out redis: no redis-server, redis-cli or redis-benchmark"
				continue
			fi
			{
				printf 'redis-p1\t%s\t%s\t%s %s\n' "$fams" "$unit" "redis-server, phase 1:" \
					"$keys 16 KiB values replaced by 512-byte ones (SET -d 512 -r $keys -n $((4 * keys)))"
				printf 'redis-p2\t%s\t%s\t%s %s\n' "$fams" "$unit" "redis-server, phase 2:" \
					"64 KiB values churned (SET -d 65536 -r $keys2 -n $((4 * keys2)))"
			} >>"$out/workloads.tsv"
		elif [ "$prog" = ebizzy ]; then # not given: not one found on PATH
			note "left out $name: no -e EBIZZY (LTP's utils/benchmark/ebizzy-0.3)"
		elif ! command -v "$prog" >/dev/null; then
			note "left out $name: no program $prog"
		else
			printf '%s\t%s\t%s\t%s\n' "$name" "$fams" "$unit" "${cmd//\{secs\}/$secs}" \
				>>"$out/workloads.tsv"
		fi
	done < <(workload_table && printf '%s' "$extra_wl")
}

# the configurations that run workload W (its families, and the references)
configs_for() { # FAMILIES
	awk -F'\t' -v f=",$1," '$2 == "-" || index(f, "," $2 ",") { printf "%s ", $1 }' "$out/configs.tsv"
}

# the environment words of a configuration: LD_PRELOAD and its variables
config_env() {
	awk -F'\t' -v n="$1" '$1 == n { print $4; print $5 }' "$out/configs.tsv" | {
		local pre env k p=""
		read -r pre
		read -r env
		for k in ${pre//:/ }; do
			[ "$k" = - ] || p="$p${p:+:}${lib[$k]}"
		done
		echo "LD_PRELOAD=$p $env"
	}
}

# ---- measuring -------------------------------------------------------------

events="task-clock,minor-faults,syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise"
events="$events,syscalls:sys_enter_munmap"

# nap SECONDS: sleep without a fork (read times out on a FIFO nobody writes)
nap() { read -r -t "$1" -u "$nap_fd" _ || :; }

# rss_sample PID: resident KiB of PID every 100 ms while it lives, one a
# line (a zombie's 0 left out).  Builtins only: no fork per sample.
rss_sample() {
	local pid=$1 res next left t
	next=${EPOCHREALTIME/./}
	while read -r _ res _ 2>/dev/null <"/proc/$pid/statm"; do
		((res > 0)) && echo $((res * page_kib))
		next=$((next + 100000))
		left=$((next - ${EPOCHREALTIME/./}))
		if ((left > 0)); then
			printf -v t '0.%06d' "$left"
			nap "$t"
		fi
	done
}

# wait_pid FILE: the pid written there (up to 10 s); nothing after that
wait_pid() {
	local i pid=""
	for ((i = 0; i < 1000; i++)); do
		[ -s "$1" ] && read -r pid <"$1" && [ -n "$pid" ] && break
		nap 0.01
	done
	echo "$pid"
}

perf_value() { # FILE EVENT: perf stat's count ("-" when none)
	awk -F, -v ev="$2" '$3 == ev { v = $1 } END { print (v ~ /^[0-9.]+$/) ? v : "-" }' \
		"$1" 2>/dev/null || echo -
}

rss_stats() { # FILE of samples: average and peak MiB, sample count
	awk '{ s += $1; if ($1 > p) p = $1; n++ }
		END { if (n) printf "%.1f\t%.1f\t%d\n", s / n / 1024, p / 1024, n; else print "-\t-\t0" }' \
		"$1" 2>/dev/null || printf -- '-\t-\t0\n'
}

# the workload's own throughput figure from its output
throughput() {
	awk '/^RESULT/ { for (i = 2; i <= NF; i++) if ($i ~ /^(records|ops)_per_s=/) {
			sub(/^[a-z_]*=/, "", $i); v = $i } }
		/ records\/s$/ && $1 ~ /^[0-9.]+$/ { v = $1 }
		END { print (v == "") ? "-" : v }' "$1"
}

# a row of runs.tsv from a run's files (BASE.perf, BASE.rss)
record() { # WORKLOAD CONFIG REP RC THROUGHPUT BASE P99
	local f=$6 cpu mad pmad
	cpu=$(perf_value "$f.perf" task-clock)
	[ "$cpu" = - ] || cpu=$(awk -v c="$cpu" 'BEGIN { printf "%.3f", c / 1000 }')
	mad=$(perf_value "$f.perf" syscalls:sys_enter_madvise)
	pmad=$(perf_value "$f.perf" syscalls:sys_enter_process_madvise)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$cpu" \
		"$(rss_stats "$f.rss")" "$(perf_value "$f.perf" minor-faults)" \
		"$( [ "$mad" = - ] || [ "$pmad" = - ] && echo - || echo $((mad + pmad)))" \
		"$(perf_value "$f.perf" syscalls:sys_enter_munmap)" "$7" >>"$out/runs.tsv"
}

# One timed program under perf stat (which counts every thread it starts),
# its RSS sampled from the side.  sh writes its pid, then execs env, which
# execs the program: the same pid throughout.
run_program() { # WORKLOAD CONFIG REP
	local base=$out/raw/$1.$2.$3 cmd pid perfpid smp rc
	cmd=$(awk -F'\t' -v n="$1" '$1 == n { print $4 }' "$out/workloads.tsv")
	rm -f "$base.pid"
	# shellcheck disable=SC2046,SC2016,SC2086 # word lists; $$ is the child's
	perf stat -x, -o "$base.perf" -e "$events" -- sh -c 'echo $$ >"$0"; exec "$@"' \
		"$base.pid" env $(config_env "$2") $cmd >"$base.log" 2>"$base.err" {nap_fd}>&- &
	perfpid=$!
	pid=$(wait_pid "$base.pid")
	rm -f "$base.pid"
	rss_sample "$pid" >"$base.rss" &
	smp=$!
	wait "$perfpid"
	rc=$?
	wait "$smp"
	record "$1" "$2" "$3" "$rc" "$(throughput "$base.log")" "$base" -
}

# redis-server's jemalloc-bg-thread for a configuration: redis sets
# background_thread itself at start (yes by default), so the MALLOC_CONF
# value is passed on; without one, redis' default stays.
redis_bg() {
	case " $(config_env "$1") " in
	*background_thread:false*) echo no ;;
	*) echo yes ;;
	esac
}

csv_field() { # FILE COLUMN: redis-benchmark --csv's SET row, that column
	awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); col[$i] = i } }
		$1 == "\"SET\"" { v = $col[c]; gsub(/"/, "", v) } END { print (v == "") ? "-" : v }' "$1"
}

# One phase of the redis run: perf attached to the server for it (all its
# threads), RSS sampled, redis-benchmark on the client's CPUs.
redis_phase() { # CONFIG REP PHASE SIZE KEYSPACE
	local base=$out/raw/redis-p$3.$1.$2 perfpid smp rc
	perf stat -x, -o "$base.perf" -e "$events" -p "$redis_pid" {nap_fd}>&- &
	perfpid=$!
	nap 0.2 # perf attaches
	rss_sample "$redis_pid" >"$base.rss" &
	smp=$!
	# shellcheck disable=SC2086 # the pinning prefix is a word list
	$bench_cli_pin redis-benchmark -s "$redis_sock" -t set -d "$4" -r "$5" -n $((4 * $5)) \
		-P 16 -c 50 --csv >"$base.csv" 2>&1 {nap_fd}>&-
	rc=$?
	kill "$smp" && wait "$smp"
	kill -INT "$perfpid" && wait "$perfpid"
	record "redis-p$3" "$1" "$2" "$rc" "$(csv_field "$base.csv" rps)" "$base" \
		"$(csv_field "$base.csv" p99_latency_ms)"
}

run_redis() { # CONFIG REP
	local base=$out/raw/redis.$1.$2
	# shellcheck disable=SC2046 # the environment is a word list
	if ! redis_start "$base.log" $(config_env "$1") -- --jemalloc-bg-thread "$(redis_bg "$1")"; then
		kill "$redis_pid" 2>/dev/null
		wait "$redis_pid"
		rm -rf "$redis_dir"
		redis_pid=""
		record redis-p1 "$1" "$2" 1 - "$base" -
		record redis-p2 "$1" "$2" 1 - "$base" -
		return
	fi
	redis_fill "$keys" 16384
	bench_rss_mib "$redis_pid" >"$base.filled"
	redis_phase "$1" "$2" 1 512 "$keys"
	redis_phase "$1" "$2" 2 65536 "$keys2"
	redis_stop
	redis_pid=""
}

cleanup() {
	[ -n "${redis_pid-}" ] && kill -0 "$redis_pid" 2>/dev/null && redis_stop
	[ -n "${fifo-}" ] && rm -f "$fifo"
}

# ---- the plan --------------------------------------------------------------

# the workloads as they run: redis once for both phases
run_units() {
	awk -F'\t' '{ n = ($1 ~ /^redis-p[12]$/) ? "redis" : $1; if (!(n in s)) { s[n]; print n "\t" $2 } }' \
		"$out/workloads.tsv"
}

# expected seconds: a timed run is -d plus ~1.5 s of start and exit; a redis
# run ~4 s of start and stop, the fill at ~20,000 values/s, phase 1 at
# ~100k SET/s and phase 2 at ~8k SET/s (the slower, purging
# configurations on the 2-CPU VM; faster on a real machine)
estimate() {
	local name fams n total=0
	while IFS=$'\t' read -r name fams; do
		n=$(configs_for "$fams" | wc -w)
		if [ "$name" = redis ]; then
			total=$((total + n * reps * (4 + keys / 20000 + 4 * keys / 100000 + 4 * keys2 / 8000)))
		else
			total=$((total + n * reps * (secs * 10 + 15) / 10))
		fi
	done < <(run_units)
	echo "$total"
}

print_plan() {
	local name fams
	echo "configurations:"
	awk -F'\t' '{ printf "  %-16s %-3s %-8s %-10s %s\n", $1, $2, $3, $4, $5 }' "$out/configs.tsv"
	echo "workloads (configurations that run each):"
	while IFS=$'\t' read -r name fams; do
		echo "  $name: $(configs_for "$fams")"
	done < <(run_units)
	local t
	t=$(estimate)
	echo "reps=$reps seconds=$secs threads='$threads'; expected duration about" \
		"$((t / 60)) min $((t % 60)) s"
}

run_all() {
	local name fams cs c rep n=0 total
	total=$(while IFS=$'\t' read -r name fams; do configs_for "$fams"; done < <(run_units) |
		wc -w)
	total=$((total * reps))
	while IFS=$'\t' read -r name fams; do
		cs=$(configs_for "$fams")
		[ -n "$cs" ] || continue
		for ((rep = 1; rep <= reps; rep++)); do
			for c in $(bench_order "$cs" "$rep"); do
				n=$((n + 1))
				if [ "$name" = redis ]; then
					run_redis "$c" "$rep"
				else
					run_program "$name" "$c" "$rep"
				fi
				echo "[$n/$total] $(tail -n 1 "$out/runs.tsv" | tr '\t' ' ')" >&2
			done
		done
	done < <(run_units)
}

# ---- the report ------------------------------------------------------------

# frontier.csv from runs.tsv: one row per workload x configuration (in the
# order of workloads.tsv and configs.tsv), median, min and max of every
# record over the runs that succeeded, then the dominance check.
summarize() {
	awk -F'\t' -v slack="$cpu_slack" -f "$here/frontier-summary.awk" \
		"$out/configs.tsv" "$out/workloads.tsv" "$out/runs.tsv" >"$out/frontier.csv"
}

report() {
	summarize
	{
		header
		awk -F, -v slack="$cpu_slack" -v reps="$reps" -f "$here/frontier-table.awk" \
			"$out/workloads.tsv" "$out/frontier.csv"
		failures
		echo
		echo "CSV: $out/frontier.csv; runs: $out/runs.tsv; raw files: $out/raw/"
	} | tee "$out/report.txt"
	plots
}

failures() {
	awk -F'\t' '$4 != 0 || $5 == "-" { n++; l = l "\n  " $1 " " $2 " rep " $3 ": exit status " $4 }
		END { if (n) print "\nFAILED runs (left out of the medians):" l }' "$out/runs.tsv"
}

libversion() { # a jemalloc library's version string, if it has one
	grep -a -o -m 1 -E '[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-g[0-9a-f]{7,40}' "$1" 2>/dev/null | head -n 1
}

header() {
	local k
	cat "$out/header.txt"
	echo "# report $(date -u +%Y-%m-%dT%H:%MZ); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	[ -s "$out/notes.txt" ] && sed 's/^/# /' "$out/notes.txt"
	true
}

write_header() {
	local k
	{
		echo "# frontier.sh $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) CPUs," \
			"$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1), kernel $(uname -r)"
		echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg);" \
			"reps=$reps (interleaved, medians) seconds=$secs threads='$threads'"
		echo "# redis: $(redis-server --version 2>/dev/null | cut -d' ' -f3) keys=$keys" \
			"keys2=$keys2 pipeline=16 clients=50; server ${bench_srv_pin:-not pinned}," \
			"client ${bench_cli_pin:-not pinned}"
		for k in je je531 jep mi mip; do
			[ -n "${lib[$k]}" ] && echo "# $k: ${lib[$k]} $(libversion "${lib[$k]}")"
		done
		echo "# counters: perf stat ($events); RSS: /proc/PID/statm every 100 ms"
	} >"$out/header.txt"
}

plots() {
	command -v gnuplot >/dev/null || { echo "no gnuplot: no PNG" >&2 && return; }
	local name unit desc f
	mkdir -p "$out/plot"
	while IFS=$'\t' read -r name _ unit desc; do
		f=$out/plot/$name
		awk -F, -v w="$name" -f "$here/frontier-labels.awk" "$out/frontier.csv" >"$f.dat"
		[ -s "$f.dat" ] || continue
		# shellcheck disable=SC2001 # a regular expression
		desc=$(echo "$desc" | sed "s|[^ ]*/||g; s/'//g")
		gnuplot -e "dat='$f.dat'; png='$out/frontier-$name.png'; unit='$unit'" \
			-e "ttl='$name: $desc (medians of $reps; bars: min to max)'" \
			-e "$(sed -n 's/^# gnuplot: //p' "$f.dat")" "$here/frontier.gp" ||
			echo "gnuplot failed for $name" >&2
	done <"$out/workloads.tsv"
}

# ---- main ------------------------------------------------------------------

main() {
	case ${1-} in --help) usage && exit 0 ;; esac
	parse_options "$@"
	if [ -n "$report_only" ]; then
		out=$report_only
		reps=$(awk -F'\t' '$3 > r { r = $3 } END { print r + 0 }' "$out/runs.tsv")
		report
		exit 0
	fi
	out=${out:-$(mktemp -d /tmp/purge-frontier.XXXXXX)}
	mkdir -p "$out/raw"
	: >"$out/notes.txt"
	: >"$out/runs.tsv"
	resolve_libs
	select_configs
	select_workloads
	bench_pins "$srv_cpus"
	page_kib=$(($(getconf PAGESIZE) / 1024))
	if [ "$dry" = 1 ]; then
		print_plan
		exit 0
	fi
	bench_perf_ok "$events" || { echo "$0: perf cannot count $events here" >&2 && exit 77; }
	if [ -z "$(run_units)" ] || [ ! -s "$out/configs.tsv" ]; then
		echo "$0: nothing to run" >&2
		exit 77
	fi
	[ "$reps" -ge 3 ] || note "reps=$reps: fewer than 3 runs, not a measurement"
	fifo=$out/.nap
	rm -f "$fifo" && mkfifo "$fifo" && exec {nap_fd}<>"$fifo"
	trap cleanup EXIT
	write_header
	print_plan >&2
	run_all
	report
	! failures | grep -q FAILED
}

main "$@"
