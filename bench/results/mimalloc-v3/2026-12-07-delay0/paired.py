#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# paired.py delay0.csv: per round (the four configurations of a workload run
# back to back in a round), patched delay 0's throughput against stock delay
# 1000's and stock delay 0's, patched 1000 against stock 1000, and the calls
# and avg RSS; then the median and the range of each ratio over the rounds
# (the spread that summary-delay0.py's medians of each build do not show).
import csv, statistics, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
d = defaultdict(dict)
for r in rows:
    d[(r['workload'], int(r['round']))][r['config']] = r
ratios = [('p0/s1000', 'patched-0', 'stock-1000'), ('p0/s0', 'patched-0', 'stock-0'),
          ('p1000/s1000', 'patched-1000', 'stock-1000')]
for wl in dict.fromkeys(r['workload'] for r in rows):
    print(f"== {wl}")
    acc = defaultdict(list)
    for k in sorted(k for k in d if k[0] == wl):
        x = d[k]
        t = {c: float(x[c]['throughput']) for c in x}
        line = f"  round {k[1]} load {x['stock-0']['load'].split()[0]:>5}"
        for name, a, b in ratios:
            v = t[a] / t[b]
            acc[name].append(v)
            line += f"  {name} {v:5.3f}"
        cr = float(x['stock-0']['calls']) / max(float(x['patched-0']['calls']), 1)
        rr = float(x['patched-0']['avg_rss_kib']) / float(x['stock-0']['avg_rss_kib'])
        acc['calls s0/p0'].append(cr)
        acc['rss p0/s0'].append(rr)
        line += f"  calls s0 {x['stock-0']['calls']} p0 {x['patched-0']['calls']} ({cr:.1f}x)  avg RSS p0/s0 {rr:4.2f}"
        print(line)
    for name, vs in acc.items():
        print(f"  {name:12s} median {statistics.median(vs):6.3f}  range {min(vs):6.3f}-{max(vs):6.3f}  (n={len(vs)})")
