#!/bin/sh
# sweep.sh BUILD STOCK PATCHED ROUNDS OUT CAP...: je-stall --fill 512,
# interleaved rounds of stock and the patched library (0001-0011+0014) at each
# purge_max_call CAP (0, or a number of KiB or MiB: 256K, 1M, 16M; set through
# MALLOC_CONF in bytes), one CSV row per run (config stock or capCAP), the
# load per round in OUT/machine.txt.
set -eu
build=$1 stock=$2 patched=$3 rounds=$4 out=$5
shift 5
bin=$build/integrations/workloads/je-stall
mkdir -p "$out"
{
	echo "nproc: $(nproc)"; uname -r; grep -m1 "model name" /proc/cpuinfo
	echo "stock: $stock"; echo "patched: $patched"; echo "je-stall options: --fill 512"
	echo "caps: $*"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"
first=1
for r in $(seq "$rounds"); do
	echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%T) UTC" >>"$out/machine.txt"
	for c in stock "$@"; do
		case $c in
		stock) lib=$stock mc= ;;
		*K) lib=$patched mc=purge_max_call:$((${c%K} * 1024)) ;;
		*M) lib=$patched mc=purge_max_call:$((${c%M} * 1048576)) ;;
		*) lib=$patched mc=purge_max_call:$c ;;
		esac
		[ "$c" = stock ] || c=cap$c
		MALLOC_CONF=$mc LD_PRELOAD=$lib "$bin" --fill 512 --repeat 1 --csv >"$out/row.csv"
		if [ $first -eq 1 ]; then head -1 "$out/row.csv" | sed 's/^/config,/' >"$out/sweep.csv"; first=0; fi
		tail -n +2 "$out/row.csv" | sed "s/^1,/$c,$r,/" >>"$out/sweep.csv"
	done
done
rm -f "$out/row.csv"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
