#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh: jemalloc 5.3.1 stock against 5.3.1 with the libpurge series, on
# one workload: purge system calls (madvise + process_madvise, perf's
# syscall tracepoints, counted in the kernel), the workload's throughput
# and average RSS (its own RESULT line), and the load average before each
# run.  The configurations run interleaved (rotated every repetition).
#
# usage: run.sh PATCHED_LIB STOCK_LIB REPS NAME -- PROGRAM ARGS...
#   (both libraries from integrations/jemalloc/build.sh --jemalloc 5.3.1
#   [--stock]; they have process_madvise through
#   --with-experimental-sys-process-madvise=440)
# output, one line a run, on stdout:
#   NAME CONFIG rep=R load=L purges=N pmadv=P madv=M | RESULT ...
set -u
plib=$1 slib=$2 reps=$3 name=$4
shift 4
[ "$1" = -- ] && shift
command -v perf >/dev/null || { echo "run.sh: needs perf" >&2; exit 77; }
configs=(
	"je531-defaults $slib "
	"je531-d0 $slib dirty_decay_ms:0"
	"je531-d0-b128 $slib dirty_decay_ms:0,process_madvise_max_batch:128"
	"jep531-d0 $plib dirty_decay_ms:0"
	"jep531-defaults $plib "
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((rep = 0; rep < reps; rep++)); do
	for ((i = 0; i < ${#configs[@]}; i++)); do
		c=${configs[$(((i + rep) % ${#configs[@]}))]}
		read -r cname lib conf <<<"$c"
		load=$(cut -d' ' -f1 /proc/loadavg)
		LD_PRELOAD=$lib MALLOC_CONF=${conf:-} perf stat -x, -o "$tmp/perf" \
			-e syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise \
			"$@" >"$tmp/out" 2>&1
		madv=$(awk -F, '/sys_enter_madvise/ {print $1 + 0}' "$tmp/perf")
		pmadv=$(awk -F, '/sys_enter_process_madvise/ {print $1 + 0}' "$tmp/perf")
		printf '%s %s rep=%d load=%s purges=%d pmadv=%d madv=%d | %s\n' "$name" "$cname" \
			"$rep" "$load" $((madv + pmadv)) "$pmadv" "$madv" "$(grep '^RESULT' "$tmp/out" | tail -1)"
	done
done
