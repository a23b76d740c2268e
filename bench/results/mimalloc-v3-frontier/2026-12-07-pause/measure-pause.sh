#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-pause.sh WHAT ROUNDS NAME=LIB... : issue 38, 0008's pause rule
# against a variant, at MIMALLOC_PURGE_DELAY=0; the libraries' order rotates
# every round; `uptime` before each run.  WHAT:
#   flushall  bench/allocators/redis-flushall.sh -t 5 -L LIB (RSS by second)
#   churn     perf stat (madvise + process_madvise) of churn -n 3
#   idle      mimalloc-idle -g 2 and -g 0 (RSS KiB 1 s after freeing 320 MiB)
# One line per run on stdout.
set -u
what=$1 rounds=$2
shift 2
names=() libs=()
for a in "$@"; do names+=("${a%%=*}"); libs+=("${a#*=}"); done
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
B=$repo/integrations-build/meson
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
n=${#names[@]}
echo "# $(date -u '+%F %T UTC') $what rounds=$rounds nproc=$(nproc) $(uname -r)"
for r in $(seq 1 "$rounds"); do
	for k in $(seq 0 $((n - 1))); do
		j=$(( (k + r - 1) % n ))
		name=${names[$j]} lib=${libs[$j]}
		up=$(uptime | sed 's/.*load average: //')
		t=$(date -u +%T)
		case $what in
		flushall)
			o=$(MIMALLOC_PURGE_DELAY=0 "$repo/bench/allocators/redis-flushall.sh" -t 5 -L "$lib" 2>&1 | grep -a -E 'filled|after FLUSHALL' | tr '\n' ' ')
			echo "$t round $r $name load [$up] $o" ;;
		churn)
			o=$(MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=$lib perf stat -x, -e $ev "$B/workloads/churn" -n 3 2>&1)
			c=$(grep -a sys_enter_ <<<"$o" | awk -F, '{s += $1} END {print s}')
			rs=$(grep -aoE 'records_per_s=[0-9.]+' <<<"$o" | tail -1)
			echo "$t round $r $name load [$up] calls=$c $rs" ;;
		idle)
			for g in 2 0; do
				o=$(MIMALLOC_PURGE_DELAY=0 LD_PRELOAD=$lib "$B/mimalloc/mimalloc-idle" -g $g)
				echo "$t round $r $name gap=${g}ms load [$up] ${o#idle: }"
			done ;;
		esac
	done
done
echo "# end $(date -u '+%F %T UTC') load [$(uptime | sed 's/.*load average: //')]"
