#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# faults.py [alloc.csv]: what thread B did during A's collect, over all
# repeats of measure-stall.sh's alloc.csv (mi3-stall's b_* columns).
import csv, statistics, sys

rows = list(csv.DictReader(open(sys.argv[1] if len(sys.argv) > 1 else 'alloc.csv')))
for lib in ('stock', 'patched'):
    rs = [r for r in rows if r['lib'] == lib]
    col = lambda k: [float(r[k]) for r in rs]
    med = lambda k: statistics.median(col(k))
    on_cpu = [float(r['b_max_cpu_us']) / float(r['b_max_us']) for r in rs if float(r['b_max_us']) > 0]
    half = sum(1 for r in rs if float(r['b_max_us']) / 1e3 > float(r['collect_ms']) / 2)
    nofault = [f"{float(r['b_max_us']) / 1e3:.1f} ms ({float(r['b_max_cpu_us']) / 1e3:.1f} on CPU)"
               for r in rs if float(r['b_max_us']) > 2000 and int(r['b_max_faults']) < 64]
    per_fault = sorted(float(r['b_max_us']) / int(r['b_max_faults']) for r in rs if int(r['b_max_faults']) >= 256)
    print(f"{lib}: {len(rs)} repeats; A's collect median {med('collect_ms'):.1f} ms")
    print(f"  B's longest loop: median {med('b_max_us') / 1e3:.1f} ms, range {min(col('b_max_us')) / 1e3:.1f}-"
          f"{max(col('b_max_us')) / 1e3:.1f}; longer than half the collect in {half} of {len(rs)}")
    print(f"  B's faults in the collect: median {med('b_faults'):.0f}, range {min(col('b_faults')):.0f}-{max(col('b_faults')):.0f}")
    print(f"  the longest loop on CPU: {100 * min(on_cpu):.0f}-{100 * max(on_cpu):.0f}% of its wall time")
    print(f"  the most one loop spent off CPU: median {med('b_max_wait_us'):.0f} us, range "
          f"{min(col('b_max_wait_us')):.0f}-{max(col('b_max_wait_us')):.0f}")
    if per_fault:
        print(f"  longest loops with 256+ faults: {per_fault[0]:.1f}-{per_fault[-1]:.1f} us a fault")
    print(f"  longest loops over 2 ms with under 64 faults: {', '.join(nofault) or 'none'}")
