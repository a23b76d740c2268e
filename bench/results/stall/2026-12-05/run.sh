#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The stall benchmark of docs/stall.md: bench/stall-bench (this tree's)
# built against three trees of the library and run interleaved, ROUNDS
# rounds of one run per batch each, into this folder:
#   22   6cd6dba, libpurge 2.2: the lock held across every call
#   23a  343cf91, 2.3 as first landed: the lock let go for each call, the
#        whole round taken out in one hold
#   23   HEAD: rounds of at most 4 x batch ranges a hold
# then summary.txt: per version and batch, the median over rounds of each
# column (stall-bench's own columns; see its --help).
#
# usage: bench/results/stall/2026-12-05/run.sh [ROUNDS] [stall-bench options]
set -eu
here=${OUT:-$(cd "$(dirname "$0")" && pwd)} # OUT: write elsewhere (a trial)
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
rounds=${1:-5}
[ $# -gt 0 ] && shift
opts="$*"
bench=$(git -C "$repo" ls-files '*stall-bench.c' | head -1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in 6cd6dba:22 343cf91:23a HEAD:23; do
	rev=${v%%:*} name=${v##*:}
	mkdir -p "$tmp/$name"
	git -C "$repo" archive "$rev" src include | tar -x -C "$tmp/$name"
	# 23a has purge_set_lock under a 2.2 version number
	[ "$name" = 23a ] && set -- -DSTALL_SET_LOCK || set --
	gcc -O2 -std=gnu11 -D_GNU_SOURCE -pthread "$@" -I"$tmp/$name/include" -I"$tmp/$name/src" \
		"$tmp/$name"/src/*.c "$repo/$bench" -o "$tmp/stall-$name"
done
{
	echo "nproc: $(nproc)"
	uname -r
	grep -m1 'model name' /proc/cpuinfo
	echo "HEAD: $(git -C "$repo" rev-parse --short HEAD)"
	echo "command: $0 $rounds $opts"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$here/machine.txt"
for r in $(seq "$rounds"); do
	for name in 22 23a 23; do
		# shellcheck disable=SC2086 # options, split on purpose
		"$tmp/stall-$name" --repeat 1 --csv "$here/$name-r$r.csv" $opts >/dev/null
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$here/machine.txt"
# medians over the rounds, per version and batch
for name in 22 23a 23; do
	for f in "$here/$name"-r*.csv; do tail -n +2 "$f"; done | sort -t, -k1,1n -s |
		awk -F, -v v="$name" '
		function med(col,   i, j, t, n) {
			n = cnt[b]
			for (i = 1; i <= n; i++) a[i] = val[b, i, col]
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
		}
		{ b = $1; cnt[b]++; for (c = 2; c <= NF; c++) val[b, cnt[b], c] = $c; nf = NF; if (!(b in seen)) { seen[b] = 1; order[++nb] = b } }
		END {
			for (k = 1; k <= nb; k++) { b = order[k]; line = v "," b; for (c = 2; c <= nf; c++) line = line "," med(c); print line }
		}'
done >"$here/summary.csv.tmp"
{ echo "version,$(head -1 "$here/23-r1.csv")"; cat "$here/summary.csv.tmp"; } >"$here/summary.csv"
rm -f "$here/summary.csv.tmp"
column -s, -t <"$here/summary.csv" >"$here/summary.txt"
cat "$here/summary.txt"
