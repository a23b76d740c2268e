#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure.sh BUILD STOCK_LIB PATCHED_LIB: the numbers of this directory.
#   idle.txt   idle RSS 1 s after a burst of 320 MiB of frees (tests/idle.c),
#              stock and patched, at MIMALLOC_DECOMMIT_DELAY 0, default
#              (25) and 1000, the frees at once and 2 ms apart
#   calls.txt  madvise + process_madvise calls of the whole process
#              (perf's syscall tracepoints), ebizzy-lite and churn, stock
#              and patched at the same decommit delay, and the patched
#              library's libpurge line
# BUILD is a meson build of integrations/ (integrations-build/meson; until
# 2.3, when the integrations were part of the library's meson project, the
# library's build directory, with them under BUILD/integrations/).
set -u
build=$1 stock=$2 patched=$3
here=$(cd "$(dirname "$0")" && pwd)
machine="nproc $(nproc), uname -r $(uname -r)"
idle=$build/mimalloc/mimalloc-idle
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $machine; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: [MIMALLOC_DECOMMIT_DELAY=d] LD_PRELOAD=LIB $idle -g G   (RSS in KiB, /proc/self/statm)"
	for d in 0 default 1000; do
		for g in 0 2; do
			env=("MIMALLOC_DECOMMIT_DELAY=$d")
			[ $d = default ] && env=()
			s=$(env "${env[@]}" LD_PRELOAD="$stock" "$idle" -g $g)
			p=$(env "${env[@]}" LD_PRELOAD="$patched" "$idle" -g $g)
			n=$(env "${env[@]}" MIMALLOC_PURGE_MAX_PENDING=0 LD_PRELOAD="$patched" "$idle" -g $g)
			printf 'delay %-7s gap %s ms: stock [%s]  patched [%s]  patched, MAX_PENDING=0 [%s]\n' \
				"$d" "$g" "${s#idle: }" "${p#idle: }" "${n#idle: }"
		done
	done
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$here/idle.txt"
cat "$here/idle.txt"
w=$build/workloads
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $machine; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: MIMALLOC_DECOMMIT_DELAY=d [MIMALLOC_SHOW_STATS=1] LD_PRELOAD=LIB perf stat -x, -e $ev WORKLOAD"
	echo "(calls: madvise + process_madvise of the whole process, one run each)"
	for wl in "ebizzy-lite -t 2 -n 500" "churn -n 3"; do
		read -ra cmd <<<"$wl"
		for d in 0 25; do
			for lib in stock patched; do
				l=$stock
				[ $lib = patched ] && l=$patched
				o=$(env MIMALLOC_DECOMMIT_DELAY=$d MIMALLOC_SHOW_STATS=1 LD_PRELOAD="$l" \
					perf stat -x, -e $ev "$w/${cmd[0]}" "${cmd[@]:1}" 2>&1)
				c=$(grep -a 'sys_enter_' <<<"$o" | awk -F, '{s += $1} END {print s}')
				printf '%-24s delay %-3s %-8s calls %s\n' "$wl" "$d" "$lib" "$c"
				[ $lib = patched ] && grep -a '^ *libpurge:' <<<"$o" | sed 's/^ */    /'
			done
		done
	done
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$here/calls.txt"
cat "$here/calls.txt"
