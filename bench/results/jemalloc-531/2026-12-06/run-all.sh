#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-all.sh: run.sh on the three workloads of issue 37's speed goal
# (ebizzy-lite with 1 MiB and 5 MiB chunks, churn), REPS interleaved
# repetitions each, into OUTDIR/runs.txt, with `uptime` before and after
# each workload in OUTDIR/load.txt, then summarize.py into OUTDIR/summary.md.
#
# usage: run-all.sh PATCHED_LIB STOCK_LIB REPS OUTDIR [SECONDS [NAMES]]
#   SECONDS  ebizzy-lite's run length (default 5)
#   NAMES    the workloads to run (default "ebizzy-1M ebizzy-5M churn");
#            runs.txt is appended to, load.txt too
#   (the workloads from integrations-build/meson: ninja -C
#   integrations-build/meson workloads/ebizzy-lite workloads/churn)
# churn runs a fixed amount of work (-m 256M -n 1: fill 256 MiB of 16 KiB
# values, then replace each by a 512-byte one and back): with -d, on a
# loaded 2-vCPU machine, its fill of 1 GiB outlasted the run and it
# reported records_per_s=0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd) # bench/results/jemalloc-531/DATE
plib=$1 slib=$2 reps=$3 out=$4 secs=${5:-5} names=${6:-ebizzy-1M ebizzy-5M churn}
w=$repo/integrations-build/meson/workloads
mkdir -p "$out"
touch "$out/runs.txt" "$out/load.txt"
while read -r name prog args; do
	case " $names " in *" $name "*) ;; *) continue ;; esac
	echo "$name before: $(uptime)" >>"$out/load.txt"
	# the workload's arguments are a word list
	# shellcheck disable=SC2086
	"$here/run.sh" "$plib" "$slib" "$reps" "$name" -- "$w/$prog" $args |
		tee -a "$out/runs.txt"
	echo "$name after: $(uptime)" >>"$out/load.txt"
done <<LIST
ebizzy-1M ebizzy-lite -s 1M -d $secs
ebizzy-5M ebizzy-lite -s 5M -d $secs
churn churn -m 256M -n 1
LIST
python3 "$here/summarize.py" "$out/runs.txt" >"$out/summary.md"
cat "$out/summary.md"
