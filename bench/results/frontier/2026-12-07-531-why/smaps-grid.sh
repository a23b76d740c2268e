#!/bin/sh
# SPDX-License-Identifier: MIT
# smaps-grid.sh STOCK_LIB PATCHED_LIB BUILD REPS [CONFIGS]: smaps.sh over the
# frontier's decay > 0 rows on ebizzy-lite -t 1 and -t 2 (5 MiB, 4 s),
# interleaved, samples at 1, 2 and 3 s; one line a sample, prefixed with
# the rep, threads and config; uptime before each rep.  CONFIGS: a file
# of NAME|S or P|MALLOC_CONF lines instead of the list below.
S=$1 P=$2 B=$3 reps=$4 cfile=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
configs='je-d100|S|dirty_decay_ms:100,background_thread:false
je-d100-bg|S|dirty_decay_ms:100,background_thread:true
je-d10000|S|dirty_decay_ms:10000,background_thread:false
je-d10000-bg|S|dirty_decay_ms:10000,background_thread:true
jep-d0|P|dirty_decay_ms:0,background_thread:false
jep-d0-bg|P|dirty_decay_ms:0,background_thread:true,purge_max_delay_ms:100
jep-d1000-bg|P|dirty_decay_ms:1000,background_thread:true
jep-d10000-bg|P|dirty_decay_ms:10000,background_thread:true,purge_max_delay_ms:1000'
[ -n "$cfile" ] && configs=$(cat "$cfile")
r=1
while [ "$r" -le "$reps" ]; do
	echo "# rep $r $(date -u +%FT%TZ) uptime: $(uptime)"
	for t in 1 2; do
		echo "$configs" | while IFS='|' read -r name which conf; do
			if [ "$which" = S ]; then lib=$S; else lib=$P; fi
			"$here/smaps.sh" "$lib" "$conf" "1 2 3" -- "$B/workloads/ebizzy-lite" -t "$t" -s 5M -d 4 |
				sed "s/^/rep=$r threads=$t config=$name /"
		done
	done
	r=$((r + 1))
done
echo "# end $(date -u +%FT%TZ) uptime: $(uptime)"
