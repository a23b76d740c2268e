#!/usr/bin/env bash
# cmp.sh ROUNDS SIZES LIBNAME=LIB... : ebizzy-lite -t 2 -s SIZE -d 3 at MIMALLOC_PURGE_DELAY=0 (or NAME ending -1000), interleaved
set -u
rounds=$1 sizes=$2; shift 2
w=/work/main/integrations-build/meson/workloads
ev=syscalls:sys_enter_madvise,syscalls:sys_enter_process_madvise
echo "size,config,round,load,calls,records_per_s,avg_rss_kib,user_s,sys_s"
for r in $(seq 1 $rounds); do for s in $sizes; do for c in "$@"; do
  n=${c%%=*} l=${c#*=} d=0; case $n in *-1000) d=1000;; esac
  ld=$(cut -d' ' -f1 /proc/loadavg)
  o=$(MIMALLOC_PURGE_DELAY=$d LD_PRELOAD=$l perf stat -x, -e $ev $w/ebizzy-lite -t 2 -s $s -d 3 2>&1)
  k=$(grep -a sys_enter_ <<<"$o" | awk -F, '{s+=$1} END {print s}')
  v() { grep -aoE "$1=[0-9.]+" <<<"$o" | tail -1 | cut -d= -f2; }
  echo "$s,$n,$r,$ld,$k,$(v records_per_s),$(v avg_rss_kib),$(v user_s),$(v sys_s)"
done; done; done
