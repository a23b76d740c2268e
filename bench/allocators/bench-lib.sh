# shellcheck shell=sh disable=SC2034 # sets variables for the scripts that source it
# SPDX-License-Identifier: MIT
#
# bench-lib.sh: what the side-by-side measurements share (measure.sh,
# redis-bench.sh, ../frontier/frontier.sh).  Sourced, POSIX sh.  Every
# variable a function here sets for itself starts with bench_ or redis_, so
# that the scripts' own names are left alone.

# bench_order 'CONFIG...' REP: the configurations rotated by REP - 1, so
# that no configuration always runs first (interleaved repetitions).
bench_order() {
	bench_n=$(echo "$1" | wc -w)
	echo "$1 $1" | awk -v r=$((($2 - 1) % bench_n)) -v n="$bench_n" \
		'{ for (j = r + 1; j <= r + n; j++) printf "%s ", $j }'
}

# bench_median: the median of the numbers on stdin, one a line ("nan" for
# none).
bench_median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
		print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---- a running process, from /proc -------------------------------------

# CPU ns of every thread of PID (live threads only: schedstat is per thread).
bench_cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
bench_rss_mib() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# minor faults of the process, all its threads (the 8th field after the
# command's parentheses; proc(5) field 10)
bench_minflt() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $8 }'; }

# ---- perf ------------------------------------------------------------------

# bench_perf_ok EVENTS: perf can count these events here (installed, and
# perf_event_paranoid lets this user see the syscall tracepoints).
bench_perf_ok() { perf stat -x, -o /dev/null -e "$1" true 2>/dev/null; }

# ---- redis-server --------------------------------------------------------

# bench_pins SERVER_CPUS: sets bench_srv_pin and bench_cli_pin, the taskset
# prefixes that put the server (all its threads) on the last SERVER_CPUS
# CPUs and redis-benchmark on the others; both empty with one CPU, without
# taskset, or with SERVER_CPUS 0 (no pinning).
bench_pins() {
	bench_srv_pin=""
	bench_cli_pin=""
	bench_ncpu=$(nproc)
	if [ "$1" -gt 0 ] && [ "$bench_ncpu" -gt "$1" ] && command -v taskset >/dev/null; then
		bench_srv_pin="taskset -c $((bench_ncpu - 1))"
		[ "$1" -eq 1 ] || bench_srv_pin="taskset -c $((bench_ncpu - $1))-$((bench_ncpu - 1))"
		bench_cli_pin="taskset -c 0-$((bench_ncpu - $1 - 1))"
	fi
}

# redis_need: exit 77 without redis-server, redis-cli or redis-benchmark.
redis_need() {
	for bench_p in redis-server redis-cli redis-benchmark; do
		command -v $bench_p >/dev/null || {
			echo "$0: no $bench_p (apt-get install redis-server redis-tools)" >&2
			exit 77
		}
	done
}

# redis_start LOG [VAR=VALUE...] [-- SERVER_ARGS...]: redis-server with that
# environment (on a unix socket in a new directory, no persistence, pinned by
# bench_srv_pin), its output to LOG.  Sets redis_pid, redis_sock and
# redis_dir; returns 1, with the log's end on stderr, when it exits or does
# not answer within 10 s.
redis_start() {
	bench_log=$1
	shift
	bench_env=""
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		bench_env="$bench_env $1"
		shift
	done
	[ $# -gt 0 ] && shift
	redis_dir=$(mktemp -d)
	redis_sock=$redis_dir/sock
	# shellcheck disable=SC2086 # word lists: the environment, the pinning
	env $bench_env $bench_srv_pin redis-server --port 0 --unixsocket "$redis_sock" \
		--save "" --appendonly no --dir "$redis_dir" "$@" >"$bench_log" 2>&1 &
	redis_pid=$!
	for _ in $(seq 100); do
		redis-cli -s "$redis_sock" ping >/dev/null 2>&1 && return 0
		kill -0 "$redis_pid" 2>/dev/null || break # it exited
		sleep 0.1
	done
	echo "$0: redis-server ($bench_env) did not start: $(tail -n 3 "$bench_log")" >&2
	return 1
}

# redis_fill KEYS BYTES: KEYS values of BYTES (key:000000000000 ...), one
# Lua call per 10,000 keys (a script blocks the server).
redis_fill() {
	bench_i=0
	while [ "$bench_i" -lt "$1" ]; do
		bench_n=$(($1 - bench_i < 10000 ? $1 - bench_i : 10000))
		redis-cli -s "$redis_sock" eval "local v = string.rep('v', tonumber(ARGV[3]))
			for k = tonumber(ARGV[1]), tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1 do
				redis.call('SET', string.format('key:%012d', k), v)
			end" 0 "$bench_i" "$bench_n" "$2" >/dev/null
		bench_i=$((bench_i + bench_n))
	done
}

# redis_stop: shut the server down, wait for it, remove its directory.
redis_stop() {
	redis-cli -s "$redis_sock" shutdown nosave >/dev/null 2>&1
	wait "$redis_pid"
	rm -rf "$redis_dir"
}

# ---- options ---------------------------------------------------------------

# bench_opts 'SPEC' "$@" && shift "$bench_shift": the one option parser of
# the measuring scripts (getopts underneath).  SPEC is words, one an option:
#   b:build     -b VALUE sets $build
#   p+pje       -p VALUE adds the line VALUE to $pje (each line ends in \n)
#   x|extra     -x VALUE adds "|VALUE" to $extra
#   n=dry=1     -n sets $dry to 1 (a value without blanks)
# -h, and --help as the first argument, print the caller's usage() and exit
# 0; an unknown option or a missing value prints usage() on stderr and exits
# with $bench_bad_status (default 1).  $bench_shift: the options' words, to
# shift before the operands.
bench_opts() {
	bench_spec=$1
	shift
	case ${1-} in --help)
		usage
		exit 0
		;;
	esac
	bench_optstring=h
	for bench_w in $bench_spec; do
		case $bench_w in
		?=*) bench_optstring=$bench_optstring${bench_w%"${bench_w#?}"} ;;
		*) bench_optstring=$bench_optstring${bench_w%"${bench_w#?}"}: ;;
		esac
	done
	OPTIND=1
	while getopts "$bench_optstring" bench_o; do
		case $bench_o in
		h)
			usage
			exit 0
			;;
		'?')
			usage >&2
			exit "${bench_bad_status:-1}"
			;;
		esac
		for bench_w in $bench_spec; do
			[ "${bench_w%"${bench_w#?}"}" = "$bench_o" ] || continue
			bench_k=${bench_w#?}
			bench_v=${bench_k#?}
			case $bench_k in
			:*) eval "$bench_v=\$OPTARG" ;;
			+*) eval "$bench_v=\${$bench_v}\$OPTARG'
'" ;;
			'|'*) eval "$bench_v=\${$bench_v}'|'\$OPTARG" ;;
			=*) eval "${bench_v%%=*}=\${bench_v#*=}" ;;
			esac
		done
	done
	bench_shift=$((OPTIND - 1))
}
