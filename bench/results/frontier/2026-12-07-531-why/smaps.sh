#!/bin/sh
# SPDX-License-Identifier: MIT
# smaps.sh LIB CONF "T1 T2..." -- PROGRAM ARGS...
# Runs PROGRAM with LD_PRELOAD=LIB MALLOC_CONF=CONF, reads /proc/PID/smaps
# T1, T2... seconds after its start, and prints, one line a sample, Rss (KiB) by mapping kind:
#   jefile  file mappings of libjemalloc.so.2 (text, rodata, data)
#   jebss   the anonymous mapping right after libjemalloc's .data (its .bss)
#   file    other file mappings (the program, libc, ld.so, ...)
#   heap/stack  [heap], [stack]
#   anon    other anonymous mappings (jemalloc's chunks and metadata, thread stacks)
# plus statm's resident (what frontier.sh samples) at the same moment.
lib=$1 conf=$2 at=$3; shift 4
LD_PRELOAD=$lib MALLOC_CONF=$conf "$@" >/dev/null 2>&1 &
pid=$!
prev=0
for t in $at; do
sleep "$(awk -v a="$t" -v b="$prev" 'BEGIN { print a - b }')"; prev=$t
statm=$(cat /proc/$pid/statm)
awk -v t="$t" -v statm="$statm" '
/^[0-9a-f]+-[0-9a-f]+ / {
	path = $6; split($1, r, "-")
	if (path ~ /libjemalloc/) { kind = "jefile"; lastje = 1 }
	else if (path == "" && lastje) { kind = "jebss"; lastje = 0 }
	else { lastje = 0
		if (path == "[heap]") kind = "heap"
		else if (path == "[stack]") kind = "stack"
		else if (path ~ /^\[/) kind = "special"
		else if (path == "") kind = "anon"
		else kind = "file" }
	next }
/^Rss:/ { rss[kind] += $2 }
/^Anonymous:/ { an[kind] += $2 }
END {
	split(statm, s, " ")
	printf "t=%s statm_resident_kib=%d", t, s[2] * 4
	n = split("jefile jebss file heap stack special anon", k, " ")
	for (i = 1; i <= n; i++) printf " %s=%d", k[i], rss[k[i]]
	printf " anonymous_in_jefile=%d\n", an["jefile"]
}' /proc/$pid/smaps
done
wait $pid
