#!/bin/bash
# usage: exp.sh LIB CONF ENV... -- prog args
lib=$1 conf=$2; shift 2
envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
env "${envs[@]}" LD_PRELOAD=$lib MALLOC_CONF=$conf,stats_print:true,stats_print_opts:gblxe perf stat -x, -o /tmp/wt37c-perf -e page-faults,task-clock "$@" > /tmp/wt37c-out 2>&1
pf=$(awk -F, '/page-faults/ {print $1 + 0}' /tmp/wt37c-perf); tc=$(awk -F, '/task-clock/ {printf "%.0f", $1}' /tmp/wt37c-perf)
lp=$(awk -F': ' '/libpurge queue:/ {n++} n == 1 && /bytes enqueued:/ {e = $2} n == 1 && /bytes reused before/ {c = $2} n == 1 && /bytes purged:/ {p = $2} n==1 && /process_madvise calls/ {m=$2} END {if (n) printf "enq=%.0f canc=%.0f purged=%.0f pmadv=%d ", e, c, p, m}' /tmp/wt37c-out)
echo "${envs[*]} load=$(cut -d' ' -f1 /proc/loadavg) faults=$pf task_ms=$tc $lp| $(grep ^RESULT /tmp/wt37c-out)"
