#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cpython-summary.py RUNS_TSV: cpython-compare.sh's runs, medians per
delay and build, and patched/stock (on the medians; paired: the median of
the per-round ratios)."""
import statistics as st
import sys

runs = {}
for i, line in enumerate(open(sys.argv[1])):
    f = line.rstrip("\n").split("\t")
    if i == 0 or len(f) < 7:
        continue
    runs.setdefault((f[1], f[2]), {})[f[0]] = dict(
        wall=float(f[3]), rss=float(f[4]) / 1024, cpu=float(f[5]),
        calls=float(f[6]), res=f[7] if len(f) > 7 else "")
keys = ("wall", "rss", "cpu", "calls")
print("medians: wall s, peak RSS MiB, CPU s, purge calls (n); results")
for (d, b) in sorted(runs, key=lambda k: (int(k[0]), k[1])):
    r = runs[(d, b)]
    m = [st.median(x[k] for x in r.values()) for k in keys]
    res = sorted(set(x["res"] for x in r.values()))
    print(f"  delay {d:>4} {b:8s} {m[0]:7.2f} {m[1]:7.1f} {m[2]:7.2f} {m[3]:8.0f} (n={len(r)}); {' / '.join(res)}")
print("patched/stock: median ratio | paired")
for d in sorted({k[0] for k in runs}, key=int):
    s, p = runs.get((d, "stock"), {}), runs.get((d, "patched"), {})
    common = sorted(set(s) & set(p))
    if not common:
        continue
    out = []
    for k in keys:
        ms = st.median(x[k] for x in s.values())
        mp = st.median(x[k] for x in p.values())
        pr = [p[i][k] / s[i][k] for i in common if s[i][k]]
        out.append(f"{k} {mp / ms if ms else float('nan'):.3f}x|{st.median(pr):.3f}x")
    print(f"  delay {d} (n={len(common)}): " + ", ".join(out))
