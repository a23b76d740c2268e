#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# measure-stall.sh BUILD STOCK_LIB PATCHED_LIB [ROUNDS] [OUTDIR]: Bun's case
# on mimalloc 3.4.3, stock against the batched purge series, interleaved
# (stock then patched, ROUNDS times, default 5), with the load average
# before every run, into OUTDIR (default: this directory):
#   scatter.csv   mi3-stall --b none --repeat 3 --csv: A frees 384 MiB (every
#                 other 1 MiB block of 768 MiB) and calls mi_collect(true)
#   calls.txt     the collect's madvise and process_madvise calls (strace,
#                 those before the program's first write: its row comes
#                 right after the measured collect), 3 runs each
#   alloc.csv     mi3-stall --b alloc --repeat 3 --csv: thread B allocates
#                 and frees 8 blocks of 1 MiB in a timed loop meanwhile
#   collect.csv   mi3-stall --b collect --repeat 3 --csv: thread B frees
#                 192 MiB of its own and calls mi_collect(true) 1 ms into A's
#   summary.txt   medians (summary.py)
# BUILD is the integrations' meson build (workloads/mi3-stall).
set -u
build=$1 stock=$2 patched=$3 rounds=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=${5:-$here}
mkdir -p "$out"
prog=$build/workloads/mi3-stall
machine="nproc $(nproc), uname -r $(uname -r)"
load() { cut -d' ' -f1-3 /proc/loadavg; }

for mode in none alloc collect; do
	f=$out/$([ $mode = none ] && echo scatter || echo $mode).csv
	: >"$f"
	for r in $(seq 1 "$rounds"); do
		for lib in stock patched; do
			l=$stock
			[ $lib = patched ] && l=$patched
			ld=$(load)
			o=$(LD_PRELOAD=$l "$prog" --b $mode --repeat 3 --csv)
			[ -s "$f" ] || echo "lib,round,load,$(head -1 <<<"$o")" >"$f"
			sed "1d; s/^/$lib,$r,\"$ld\",/" <<<"$o" >>"$f"
		done
	done
done

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $machine; load average $(load)"
	echo "command: LD_PRELOAD=LIB strace -f -e trace=madvise,process_madvise,write -o TRACE $prog --b none --repeat 1 --csv"
	echo "(calls of the measured mi_collect(true): those before the first write to fd 1)"
	for i in 1 2 3; do
		for lib in stock patched; do
			l=$stock
			[ $lib = patched ] && l=$patched
			t=$(mktemp)
			LD_PRELOAD=$l strace -f -e trace=madvise,process_madvise,write -o "$t" "$prog" --b none --repeat 1 --csv >/dev/null
			awk -v lib=$lib -v i=$i '/write\(1,/ {exit} /madvise\(/ && !/process_madvise/ {m++} /process_madvise\(/ {p++}
				END {printf "%s run %d: %d madvise, %d process_madvise\n", lib, i, m, p}' "$t"
			rm -f "$t"
		done
	done
	echo "load average after: $(load)"
} >"$out/calls.txt"
cat "$out/calls.txt"
python3 "$here/summary.py" "$out" | tee "$out/summary.txt"
