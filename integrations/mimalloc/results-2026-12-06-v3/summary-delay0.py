#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summary-delay0.py delay0.csv: medians per workload and configuration, and
# the ratios (patched delay 0 against stock delay 0 and stock 1000).
import csv, statistics, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
g = defaultdict(list)
for r in rows:
    g[(r['workload'], r['config'])].append(r)
med = lambda rs, k: statistics.median(float(r[k]) for r in rs)
for wl in dict.fromkeys(r['workload'] for r in rows):
    print(f"== {wl}")
    m = {}
    for c in ('stock-0', 'patched-0', 'stock-1000', 'patched-1000'):
        rs = g[(wl, c)]
        if not rs:
            continue
        m[c] = {k: med(rs, k) for k in ('calls', 'throughput', 'avg_rss_kib', 'peak_rss_kib', 'user_s', 'sys_s')}
        ld = [float(r['load'].split()[0]) for r in rs]
        x = m[c]
        print(f"  {c:13s} n={len(rs)} calls {x['calls']:8.0f}  records/s {x['throughput']:10.0f}  avg RSS {x['avg_rss_kib']/1024:7.1f} MiB"
              f"  peak {x['peak_rss_kib']/1024:7.1f} MiB  cpu {x['user_s']+x['sys_s']:5.2f} s  load {min(ld):.2f}-{max(ld):.2f}")
    if 'patched-0' in m and 'stock-0' in m and 'stock-1000' in m:
        p, s0, s1 = m['patched-0'], m['stock-0'], m['stock-1000']
        print(f"  patched d0: {p['throughput']/s1['throughput']*100:5.1f}% of stock d1000's throughput, "
              f"{s0['calls']/max(p['calls'],1):6.1f}x fewer calls than stock d0, "
              f"{p['avg_rss_kib']/s0['avg_rss_kib']:4.2f}x stock d0's avg RSS ({s1['avg_rss_kib']/s0['avg_rss_kib']:4.2f}x for stock d1000)")
    if 'patched-1000' in m and 'stock-1000' in m:
        print(f"  patched d1000: {m['patched-1000']['throughput']/m['stock-1000']['throughput']*100:5.1f}% of stock d1000's throughput")
