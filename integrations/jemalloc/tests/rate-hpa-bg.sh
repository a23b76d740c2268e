#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rate-hpa-bg.sh: how often jemalloc's test/unit/hpa_background_thread fails,
# for several builds run side by side (interleaved: run i of every build,
# then run i+1), so that load and time of day fall on all of them alike.
#
# usage: rate-hpa-bg.sh [-n RUNS] [-t SECONDS] [-o LOGDIR] NAME=BINARY...
#   BINARY  a built test/unit/hpa_background_thread (copy it out of the tree
#           first if the tree may be rebuilt while this runs)
#   -n      runs of each (default 1000)
#   -t      a run's time limit (default 120 s; the test itself gives up after
#           about 20 s of waiting for the background thread)
#   -o      where each failed run's output is kept (default: a temporary
#           directory, printed)
# Prints one line per build at the end (and every 100 runs):
#   NAME runs R pass P fail F timeout T other O
# with `uptime` before and after.  The MALLOC_CONF is the test's own .sh's.
set -u
n=1000 limit=120 logdir=""
while getopts n:t:o: o; do
	case $o in
	n) n=$OPTARG ;;
	t) limit=$OPTARG ;;
	o) logdir=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-n RUNS] [-t S] [-o DIR] NAME=BINARY..." >&2; exit 2; }
logdir=${logdir:-$(mktemp -d "${TMPDIR:-/tmp}/hpa-bg.XXXXXX")}
mkdir -p "$logdir"
declare -A bin pass fail tmo other
names=()
for a in "$@"; do
	names+=("${a%%=*}")
	bin[${a%%=*}]=${a#*=}
	pass[${a%%=*}]=0 fail[${a%%=*}]=0 tmo[${a%%=*}]=0 other[${a%%=*}]=0
done
report() {
	local k
	for k in "${names[@]}"; do
		printf '%s runs %d pass %d fail %d timeout %d other %d\n' "$k" "$1" \
			"${pass[$k]}" "${fail[$k]}" "${tmo[$k]}" "${other[$k]}"
	done
}
echo "rate-hpa-bg: $n runs each, logs of failed runs in $logdir; $(uptime)"
for ((i = 1; i <= n; i++)); do
	for k in "${names[@]}"; do
		rc=0
		MALLOC_CONF=hpa_dirty_mult:0,hpa_min_purge_interval_ms:50,hpa_sec_nshards:0 \
			timeout -k 5 "$limit" "${bin[$k]}" >"$logdir/run" 2>&1 || rc=$?
		case $rc in
		0) pass[$k]=$((pass[$k] + 1)) ;;
		2) fail[$k]=$((fail[$k] + 1)); mv "$logdir/run" "$logdir/$k.$i.fail" ;;
		124 | 137) tmo[$k]=$((tmo[$k] + 1)); mv "$logdir/run" "$logdir/$k.$i.timeout" ;;
		*) other[$k]=$((other[$k] + 1)); mv "$logdir/run" "$logdir/$k.$i.rc$rc" ;;
		esac
	done
	if [ $((i % 100)) -eq 0 ] && [ "$i" -ne "$n" ]; then
		echo "after $i: $(uptime)"
		report "$i"
	fi
done
rm -f "$logdir/run"
echo "done: $(uptime)"
report "$n"
