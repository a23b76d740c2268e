#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cpython-compare.sh STOCK_LIB PATCHED_LIB OUTDIR ROUNDS [TEST...]: CPython's
# own regression tests (cpython.sh's python and tests; default test_list
# test_dict), run in one process (no -j) under each preloaded mimalloc at
# MIMALLOC_PURGE_DELAY 0 and 1000, interleaved (the order of the two builds
# flips every round).  Per run: wall time and peak RSS (GNU time), CPU
# (perf's task-clock) and purge calls (madvise + process_madvise, perf).
# Writes OUTDIR/runs.tsv (round delay build wall_s maxrss_kib cpu_s calls
# result) and OUTDIR/raw/.
set -u
[ $# -ge 4 ] || { echo "usage: $0 STOCK_LIB PATCHED_LIB OUTDIR ROUNDS [TEST...]" >&2; exit 2; }
declare -A lib=([stock]=$1 [patched]=$2)
out=$3 rounds=$4
shift 4
[ $# -gt 0 ] || set -- test_list test_dict
py=${PYTHON:-/usr/bin/python3}
mkdir -p "$out/raw"
printf 'round\tdelay\tbuild\twall_s\tmaxrss_kib\tcpu_s\tcalls\tresult\n' >"$out/runs.tsv"
ev=task-clock,syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
val() { awk -F, -v e="$2" '$3 == e { print $1 }' "$1"; }
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order="stock patched"; else order="patched stock"; fi
	for d in 0 1000; do
		for b in $order; do
			f=$out/raw/$b.d$d.$r
			perf stat -x, -o "$f.perf" -e "$ev" -- /usr/bin/time -f '%e %M' -o "$f.time" \
				env LD_PRELOAD="${lib[$b]}" MIMALLOC_PURGE_DELAY="$d" "$py" -m test "$@" >"$f.log" 2>&1
			read -r wall rss <"$f.time"
			cpu=$(awk -v c="$(val "$f.perf" task-clock)" 'BEGIN { printf "%.3f", c / 1000 }')
			calls=$(($(val "$f.perf" syscalls:sys_enter_madvise) + $(val "$f.perf" syscalls:sys_enter_process_madvise)))
			res=$(grep -aE '^(Result|Tests result|== Tests result)' "$f.log" | tail -n 1 | tr -s ' ')
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$d" "$b" "$wall" "$rss" "$cpu" "$calls" "$res" | tee -a "$out/runs.tsv"
		done
	done
done
