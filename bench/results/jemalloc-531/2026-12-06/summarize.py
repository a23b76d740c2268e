#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""summarize.py RUNS.txt: medians per workload and configuration of run.sh's
lines (records/s, average RSS, purge calls), with the load averages seen,
as a Markdown table."""
import re
import statistics
import sys

rows = {}
order = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+) (\S+) rep=(\d+) load=(\S+) purges=(\d+) pmadv=(\d+) madv=(\d+) \| (.*)', line)
    if not m:
        continue
    name, conf, _, load, purges, pmadv, madv, result = m.groups()
    kv = dict(re.findall(r'(\w+)=([0-9.]+)', result))
    key = (name, conf)
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append((float(load), int(purges), float(kv.get('records_per_s', 'nan')),
                      float(kv.get('avg_rss_kib', 'nan')) / 1024))
print('| workload | config | runs | records/s (median) | avg RSS MiB (median) | purge calls (median) | load |')
print('|---|---|---:|---:|---:|---:|---|')
for key in order:
    r = rows[key]
    med = lambda i: statistics.median(x[i] for x in r)
    print('| %s | %s | %d | %.0f | %.1f | %.0f | %.1f-%.1f |' % (
        key[0], key[1], len(r), med(2), med(3), med(1),
        min(x[0] for x in r), max(x[0] for x in r)))

# Issue 37's goals, per workload, from the medians above.
print()
print('| workload | patched d0 / stock defaults, records/s (goal >= 0.95) '
      '| patched d0 / stock d0, avg RSS (goal <= 1.1) '
      '| stock d0 b128 / patched d0, purge calls (goal >= 20) |')
print('|---|---:|---:|---:|')
for name in dict.fromkeys(k[0] for k in order):
    def med(conf, i):
        r = rows.get((name, conf))
        return statistics.median(x[i] for x in r) if r else float('nan')
    def ratio(a, b):
        return a / b if b else float('inf')
    print('| %s | %.3f | %.3f | %.1f |' % (
        name,
        ratio(med('jep531-d0', 2), med('je531-defaults', 2)),
        ratio(med('jep531-d0', 3), med('je531-d0', 3)),
        ratio(med('je531-d0-b128', 1), med('jep531-d0', 1))))
