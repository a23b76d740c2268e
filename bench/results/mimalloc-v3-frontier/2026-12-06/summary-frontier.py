#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summary-frontier.py frontier.csv: medians per workload and configuration
# (min-max of the throughput beside them), and for every stock point the
# patched points that dominate it: throughput >= the stock point's, average
# RSS <= its, CPU (user+sys) <= 1.05x its; all on medians.  Then the same
# test paired by round (configurations of one round ran back to back, under
# about the same load): the median over rounds of the patched/stock ratios
# of throughput, average RSS and CPU.
import csv
import statistics
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
g = defaultdict(list)
for r in rows:
    g[(r['workload'], r['config'])].append(r)
keys = ('calls', 'throughput', 'avg_rss_kib', 'peak_rss_kib', 'cpu')
for r in rows:
    r['cpu'] = float(r['user_s']) + float(r['sys_s'])


def med(rs, k):
    return statistics.median(float(r[k]) for r in rs)


configs = list(dict.fromkeys(r['config'] for r in rows))
for wl in dict.fromkeys(r['workload'] for r in rows):
    print(f"== {wl}")
    print(f"  {'config':16s} {'n':>2s} {'calls':>7s} {'records/s':>10s} {'(min-max)':>21s}"
          f" {'avg RSS':>8s} {'peak':>8s} {'cpu s':>6s} {'load':>10s}")
    m = {}
    for c in configs:
        rs = g[(wl, c)]
        if not rs:
            continue
        x = m[c] = {k: med(rs, k) for k in keys}
        t = [float(r['throughput']) for r in rs]
        ld = [float(r['load'].split()[0]) for r in rs]
        print(f"  {c:16s} {len(rs):2d} {x['calls']:7.0f} {x['throughput']:10.0f} ({min(t):9.0f}-{max(t):9.0f})"
              f" {x['avg_rss_kib'] / 1024:7.1f}M {x['peak_rss_kib'] / 1024:7.1f}M {x['cpu']:6.2f}"
              f" {min(ld):4.2f}-{max(ld):4.2f}")
    for s in (c for c in m if c.startswith('stock')):
        S = m[s]
        dom = [p for p in m if p.startswith('patched')
               and m[p]['throughput'] >= S['throughput']
               and m[p]['avg_rss_kib'] <= S['avg_rss_kib']
               and m[p]['cpu'] <= 1.05 * S['cpu']]
        # the closest miss: the patched point with the best worst ratio
        def worst(p):
            P = m[p]
            return min(P['throughput'] / S['throughput'], S['avg_rss_kib'] / P['avg_rss_kib'],
                       1.05 * S['cpu'] / P['cpu'])
        near = max((p for p in m if p.startswith('patched')), key=worst, default=None)
        if dom:
            print(f"  {s:16s} dominated by {', '.join(dom)}")
        elif near:
            P = m[near]
            print(f"  {s:16s} NOT dominated; nearest {near}: throughput {P['throughput'] / S['throughput']:.3f}x,"
                  f" avg RSS {P['avg_rss_kib'] / S['avg_rss_kib']:.3f}x, cpu {P['cpu'] / S['cpu']:.3f}x")
    print("  paired by round (median of per-round patched/stock ratios: throughput, avg RSS, cpu):")
    byround = defaultdict(dict)
    for c in m:
        for r in g[(wl, c)]:
            byround[r['round']][c] = r
    for s in (c for c in m if c.startswith('stock')):
        out = []
        for p in (c for c in m if c.startswith('patched')):
            rr = [(float(x[p]['throughput']) / float(x[s]['throughput']),
                   float(x[p]['avg_rss_kib']) / float(x[s]['avg_rss_kib']), x[p]['cpu'] / x[s]['cpu'])
                  for x in byround.values() if p in x and s in x]
            t, a, u = (statistics.median(v[i] for v in rr) for i in range(3))
            d = '*' if t >= 1 and a <= 1 and u <= 1.05 else ' '
            out.append(f"{p[8:]}{d} {t:5.2f} {a:5.3f} {u:5.2f}")
        print(f"    {s:16s} " + " | ".join(out))
    print("    (* the patched point dominates the stock one on the paired ratios)")
