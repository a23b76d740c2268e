#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# table-frontier.py frontier.csv: summary-frontier.py's figures as markdown
# tables (README.md): per workload the medians, then per stock point the
# patched points that dominate it on the medians and paired by round.
import csv
import statistics
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    r['cpu'] = float(r['user_s']) + float(r['sys_s'])
g = defaultdict(list)
for r in rows:
    g[(r['workload'], r['config'])].append(r)
keys = ('calls', 'throughput', 'avg_rss_kib', 'cpu')
order = ['stock-d0', 'stock-d10', 'stock-d10-m10', 'stock-d1000', 'stock-d1000-m10',
         'patched-d0', 'patched-d10', 'patched-d10-m10', 'patched-d1000', 'patched-d1000-m10']
configs = sorted(dict.fromkeys(r['config'] for r in rows), key=lambda c: order.index(c) if c in order else 99)


def dom(t, a, u):
    return t >= 1 and a <= 1 and u <= 1.05


for wl in dict.fromkeys(r['workload'] for r in rows):
    m = {}
    print(f"`{wl}`\n")
    print("| config | rounds | purge calls | records/s (min-max) | avg RSS MiB | CPU s | load |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for c in configs:
        rs = g[(wl, c)]
        if not rs:
            continue
        x = m[c] = {k: statistics.median(float(r[k]) for r in rs) for k in keys}
        t = [float(r['throughput']) for r in rs]
        ld = [float(r['load'].split()[0]) for r in rs]
        print(f"| {c} | {len(rs)} | {x['calls']:,.0f} | {x['throughput']:,.0f} ({min(t):,.0f}-{max(t):,.0f})"
              f" | {x['avg_rss_kib'] / 1024:.1f} | {x['cpu']:.2f} | {min(ld):.1f}-{max(ld):.1f} |")
    byround = defaultdict(dict)
    for c in m:
        for r in g[(wl, c)]:
            byround[r['round']][c] = r
    print("\n| stock point | dominated (medians) | dominated (paired) | nearest on the medians: throughput, avg RSS, CPU vs the stock point |")
    print("|---|---|---|---|")
    pats = [p for p in m if p.startswith('patched')]
    for s in (c for c in m if c.startswith('stock')):
        S = m[s]
        rat = {p: (m[p]['throughput'] / S['throughput'], m[p]['avg_rss_kib'] / S['avg_rss_kib'],
                   m[p]['cpu'] / S['cpu']) for p in pats}
        d1 = [p for p in pats if dom(*rat[p])]
        d2 = []
        for p in pats:
            rr = [(float(x[p]['throughput']) / float(x[s]['throughput']),
                   float(x[p]['avg_rss_kib']) / float(x[s]['avg_rss_kib']), x[p]['cpu'] / x[s]['cpu'])
                  for x in byround.values() if p in x and s in x]
            if dom(*(statistics.median(v[i] for v in rr) for i in range(3))):
                d2.append(p)
        near = max(pats, key=lambda p: min(rat[p][0], 1 / rat[p][1], 1.05 / rat[p][2]))
        t, a, u = rat[near]
        print(f"| {s} | {', '.join(d1) or 'no'} | {', '.join(d2) or 'no'} | {near}: {t:.3f}x, {a:.4f}x, {u:.3f}x |")
    print()
