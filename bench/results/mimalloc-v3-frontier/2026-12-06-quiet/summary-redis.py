#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summary-redis.py RUNS.TSV...: (delay 0 only; from ../2026-12-06/summary-redis.py) medians of redis-bench.sh's runs (several
# files: their rounds together) per configuration and phase, and the same
# paired by round against stock at the same delay.  redis-bench.sh's names:
# defaults = stock v3.4.3 at delay 1000, patched = the series at delay 1000.
import statistics
import sys
from collections import defaultdict

name = {'defaults': 'stock-d1000', 'patched': 'patched-d1000'}
cols = ('set_s', 'cpu_ms', 'rss_mib', 'purges', 'faults')
runs = defaultdict(dict)  # (file, rep) -> config -> row
for i, f in enumerate(sys.argv[1:]):
    for line in open(f):
        x = line.split('\t')
        c = name.get(x[0], x[0])
        runs[(i, x[1])][c] = {'filled': float(x[2]),
                              1: dict(zip(cols, map(float, x[3:8]))),
                              2: dict(zip(cols, map(float, x[8:13])))}
configs = ['stock-d0', 'patched-d0']
print(f"rounds: {len(runs)}")
for ph, what in ((1, '16 KiB values replaced by 512-byte ones'), (2, '64 KiB values churned')):
    print(f"== phase {ph}: {what} (medians)")
    print(f"  {'config':14s} {'n':>2s} {'SET/s':>8s} {'(min-max)':>19s} {'cpu_ms':>7s} {'RSS MiB':>8s} {'purges':>7s} {'faults':>8s}")
    for c in configs:
        rs = [r[c][ph] for r in runs.values() if c in r]
        if not rs:
            continue
        m = {k: statistics.median(r[k] for r in rs) for k in cols}
        t = [r['set_s'] for r in rs]
        print(f"  {c:14s} {len(rs):2d} {m['set_s']:8.0f} ({min(t):8.0f}-{max(t):8.0f}) {m['cpu_ms']:7.0f}"
              f" {m['rss_mib']:8.1f} {m['purges']:7.0f} {m['faults']:8.0f}")
    print("  paired by round, patched/stock at the same delay (median of per-round ratios):")
    for d in ('d0',):
        p, s = 'patched-' + d, 'stock-' + d
        rr = [(r[p][ph], r[s][ph]) for r in runs.values() if p in r and s in r]
        q = {k: statistics.median(a[k] / b[k] for a, b in rr if b[k] > 0) for k in ('set_s', 'cpu_ms', 'rss_mib')}
        print(f"    {d:6s} n={len(rr)}  SET/s {q['set_s']:.2f}x  cpu {q['cpu_ms']:.2f}x  RSS {q['rss_mib']:.2f}x")
