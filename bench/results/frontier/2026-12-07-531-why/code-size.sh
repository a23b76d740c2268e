#!/bin/sh
# SPDX-License-Identifier: MIT
# code-size.sh STOCK_LIB PATCHED_LIB LIBPURGE_A: section sizes of the two
# libjemalloc.so.2, and the patched one's extra function bytes split into
# libpurge's (functions defined in LIBPURGE_A) and the series' own.
S=$1 P=$2 A=$3
for L in "$S" "$P"; do
	echo "== size -A $L"
	size -A "$L" | grep -E '^\.(text|rodata|eh_frame|data\.rel\.ro|data|bss) '
done
nm --defined-only "$A" | awk 'NF == 3 && $2 ~ /^[tT]$/ { print "L", $3 }' >/tmp/code-size.$$
nm -S --defined-only "$S" | awk '$3 ~ /^[tT]$/ { print "S", $4, $2 }' >>/tmp/code-size.$$
nm -S --defined-only "$P" | awk '$3 ~ /^[tT]$/ { print "P", $4, $2 }' >>/tmp/code-size.$$
python3 - /tmp/code-size.$$ <<'PY'
import sys
lp, s, p = set(), {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "L": lp.add(f[1])
    else:
        d = s if f[0] == "S" else p
        d[f[1]] = d.get(f[1], 0) + int(f[2], 16)
ts, tp = sum(s.values()), sum(p.values())
print("function bytes (nm -S, t/T): stock %d, patched %d (+%d)" % (ts, tp, tp - ts))
print("  libpurge's functions: %d" % sum(v for k, v in p.items() if k in lp and k not in s))
print("  the series' new jemalloc functions: %d" % sum(v for k, v in p.items() if k not in s and k not in lp))
print("  existing functions' growth: %+d" % sum(p[k] - s[k] for k in p if k in s))
print("  functions gone from stock: %d" % sum(v for k, v in s.items() if k not in p))
PY
rm -f /tmp/code-size.$$
