#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summary.py DIR: medians of measure-stall.sh's CSV files (stock, patched).
import csv, statistics, sys, os

d = sys.argv[1]

def rows(name):
    with open(os.path.join(d, name)) as f:
        return list(csv.DictReader(f))

def med(rs, key):
    v = [float(r[key]) for r in rs]
    return statistics.median(v) if v else float('nan')

def loads(rs):
    v = [float(r['load'].split()[0]) for r in rs]
    return f"load {min(v):.2f}-{max(v):.2f}"

for name, title in (('scatter.csv', 'scatter (--b none)'), ('alloc.csv', 'B allocates (--b alloc)'),
                    ('collect.csv', 'B collects (--b collect)')):
    if not os.path.exists(os.path.join(d, name)):
        continue
    all_rows = rows(name)
    print(f"== {title}: {name}; medians over rounds x repeats 2-3 (repeat 1 apart)")
    for lib in ('stock', 'patched'):
        rs = [r for r in all_rows if r['lib'] == lib]
        later = [r for r in rs if int(r['repeat']) >= 2]
        first = [r for r in rs if int(r['repeat']) == 1]
        line = (f"  {lib:8s} n={len(later):2d} collect {med(later, 'collect_ms'):7.2f} ms wall, "
                f"{med(later, 'collect_cpu_ms'):6.2f} ms CPU (repeat 1: {med(first, 'collect_ms'):6.2f} / "
                f"{med(first, 'collect_cpu_ms'):6.2f})")
        if name == 'alloc.csv':
            line += (f"; B during collect: p99.9 {med(later, 'b_p999_us'):8.1f} us, max {med(later, 'b_max_us'):8.1f} us"
                     f" (n {med(later, 'b_n'):.0f}); before: p99.9 {med(later, 'before_p999_us'):8.1f}, max {med(later, 'before_max_us'):8.1f}")
            if 'b_faults' in later[0]:
                ratio = [float(r['b_max_cpu_us']) / float(r['b_max_us']) for r in rs if float(r['b_max_us']) > 0]
                line += (f"; B's faults in the collect {med(rs, 'b_faults'):.0f} (range {min(int(r['b_faults']) for r in rs)}-"
                         f"{max(int(r['b_faults']) for r in rs)}), in its longest loop {med(rs, 'b_max_faults'):.0f}, "
                         f"that loop on CPU {100 * min(ratio):.0f}-{100 * max(ratio):.0f}% of its wall time; "
                         f"the most a loop of B spent off CPU {med(rs, 'b_max_wait_us'):.0f} us (range "
                         f"{min(float(r['b_max_wait_us']) for r in rs):.0f}-{max(float(r['b_max_wait_us']) for r in rs):.0f}) (all repeats)")
        if name == 'collect.csv':
            left = [float(r['rss_later_mib']) - float(r['rss_ref_mib']) for r in rs]
            line += (f"; B's collect {med(rs, 'b_collect_ms'):.2f} ms; left resident 300 ms later (rss_later - rss_ref): "
                     f"median {statistics.median(left):.1f} MiB, > 16 MiB in {sum(1 for x in left if x > 16)} of {len(left)} repeats")
        line += f"; {loads(rs)}"
        print(line)
