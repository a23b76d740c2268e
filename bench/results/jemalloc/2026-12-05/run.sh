#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh PATCHED_LIB STOCK_LIB: purge calls against purge_max_pending for
# pending-bench's two patterns (big: 319 blocks of 1-8 MiB; small: 69 of
# 64 KiB), each freed then arena.4096.purge, under dirty_decay_ms:0 and
# jemalloc's default decay; stock's madvise calls by strace.  Writes
# pending.csv and machine.txt here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
plib=$1 slib=$2
bin=$(mktemp -d)/pending-bench
cc -O2 -Wall -o "$bin" "$here/pending-bench.c" -ldl
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "nproc: $(nproc)"
	echo "uname -r: $(uname -r)"
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: bench/results/jemalloc/2026-12-05/run.sh $plib $slib"
} >"$here/machine.txt"
echo "lib,pattern,decay,purge_max_pending,ranges,calls,flushes,peak_pending_mib" >"$here/pending.csv"
for pat in big small; do
	for decay in dirty_decay_ms:0 default; do
		d=$decay
		[ "$d" = default ] && d=""
		for mp in 8388608 16777216 33554432 67108864 134217728 268435456 0; do
			line=$(LD_PRELOAD=$plib MALLOC_CONF="${d:+$d,}purge_max_pending:$mp" "$bin" $pat)
			set -- $line
			echo "patched,$pat,$decay,$mp,${2#ranges=},${3#calls=},${4#flushes=},${5#peak_pending_mib=}" >>"$here/pending.csv"
		done
		n=$(LD_PRELOAD=$slib MALLOC_CONF="$d" strace -f -c -e trace=madvise "$bin" $pat 2>&1 >/dev/null |
			awk '$NF == "madvise" { print $4 }')
		echo "stock,$pat,$decay,,,${n:-0},," >>"$here/pending.csv"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$here/machine.txt"
column -s, -t "$here/pending.csv"
