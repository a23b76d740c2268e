#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summarize.py measure.txt: medians per workload and configuration.
import re, sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+) (\S+) rep=\d+ load=(\S+) faults=(\d+) task_ms=(\d+) madv=(\d+) pmadv=(\d+) \| (.*)', line)
    if not m:
        continue
    w, c, load, pf, tc, madv, pmadv, res = m.groups()
    kv = dict(x.split('=') for x in res.split()[1:])
    recs = float(kv['chunks'])
    rows.setdefault((w, c), []).append(dict(
        load=float(load), rps=float(kv['records_per_s']), fpr=int(pf) / recs,
        rpcpu=recs / (int(tc) / 1000), rss=float(kv['avg_rss_kib']) / 1024,
        madv=int(madv), pmadv=int(pmadv), faults=int(pf)))
print('| workload | config | runs | records/s | chunks per CPU-s | faults per record | avg RSS MiB | madvise | process_madvise | load |')
print('|---|---|---:|---:|---:|---:|---:|---:|---:|---|')
med = {}
for (w, c), rs in rows.items():
    f = lambda k: st.median(r[k] for r in rs)
    med[(w, c)] = {k: f(k) for k in rs[0]}
    print(f"| {w} | {c} | {len(rs)} | {f('rps'):.0f} | {f('rpcpu'):.0f} | {f('fpr'):.3f} | {f('rss'):.1f} | {f('madv'):.0f} | {f('pmadv'):.0f} | "
          f"{min(r['load'] for r in rs):.1f}-{max(r['load'] for r in rs):.1f} |")
print()
print('| workload | config | / stock defaults, records/s | / stock defaults, records per CPU-s | / stock d0, avg RSS |')
print('|---|---|---:|---:|---:|')
for (w, c), m in med.items():
    if not c.startswith('pat'):
        continue
    d = med[(w, 'stock-defaults')]; z = med[(w, 'stock-d0')]
    print(f"| {w} | {c} | {m['rps'] / d['rps']:.3f} | {m['rpcpu'] / d['rpcpu']:.3f} | {m['rss'] / z['rss']:.3f} |")
