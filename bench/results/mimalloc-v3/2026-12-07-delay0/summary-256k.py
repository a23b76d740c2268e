#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summary-256k.py 256k.csv: medians per configuration of records/s and of
# records per CPU second, and per round patched d0 against stock d1000 and
# stock d0 (median and range over the rounds).
import csv, statistics, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
cfg = ('stock-0', 'patched-0', 'stock-1000', 'patched-1000')
by = defaultdict(dict)
for r in rows:
    by[int(r['round'])][r['config']] = r
ld = [float(r['load'].split()[0]) for r in rows]
print(f"ebizzy-lite -t 2 -s 256K -d 3, {len(by)} rounds, load {min(ld):.2f}-{max(ld):.2f}")
for c in cfg:
    rs = [r for r in rows if r['config'] == c]
    m = lambda k: statistics.median(float(r[k]) for r in rs)
    print(f"  {c:13s} calls {m('calls'):3.0f}  records/s {m('records_per_s'):9.0f}  records/CPU-s {m('records_per_cpu_s'):9.0f}"
          f"  cpu {m('user_s') + m('sys_s'):4.2f} s of {m('seconds'):4.2f} s")
for key in ('records_per_s', 'records_per_cpu_s'):
    med = {c: statistics.median(float(r[key]) for r in rows if r['config'] == c) for c in cfg}
    for a, b in (('patched-0', 'stock-1000'), ('patched-0', 'stock-0'), ('patched-1000', 'stock-1000')):
        v = [float(by[k][a][key]) / float(by[k][b][key]) for k in sorted(by)]
        print(f"  {key:17s} {a}/{b}: medians {med[a] / med[b]:5.3f}; per round median {statistics.median(v):5.3f},"
              f" range {min(v):5.3f}-{max(v):5.3f}")
