#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""summary.py RUNS_TSV [SECS]: medians per configuration of frontier.sh's
python-je rows (MiB/s, CPU s, MiB allocated per CPU second, average and
peak RSS MiB, minor faults, purge calls, calls per GiB allocated), and
patched/stock ratios at the same setting (on the medians, and the median of
the per-round ratios, "paired").  Adapted from
../../mimalloc-v3-frontier/2026-12-07-cpython/summary.py."""
import statistics as st
import sys

SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 11 or f[3] != "0" or f[4] == "-":
        continue
    cfg, rep = f[1], int(f[2])
    rec = dict(thr=float(f[4]), cpu=float(f[5]), rss=float(f[6]),
               peak=float(f[7]), flt=float(f[9]), calls=float(f[10]))
    rec["mpc"] = rec["thr"] * SECS / rec["cpu"]          # MiB per CPU second
    rec["cpg"] = rec["calls"] / (rec["thr"] * SECS / 1024)  # calls per GiB
    rows.setdefault(cfg, {})[rep] = rec

keys = ("thr", "cpu", "mpc", "rss", "peak", "flt", "calls", "cpg")
med = {c: {k: st.median(r[k] for r in reps.values()) for k in keys}
       for c, reps in rows.items()}
print("medians (n runs): MiB/s, CPU s, MiB per CPU s, avg RSS MiB, peak RSS MiB,"
      " minor faults, purge calls, calls per GiB allocated")
for c in sorted(med, key=lambda c: (c.startswith("jep-"), c)):
    m = med[c]
    print(f"  {c:15s} n={len(rows[c])} {m['thr']:8.1f} {m['cpu']:6.2f} {m['mpc']:7.1f} "
          f"{m['rss']:7.1f} {m['peak']:7.1f} {m['flt']:8.0f} {m['calls']:7.0f} {m['cpg']:8.1f}")

pairs = [("jep-d0", "je-d0"), ("jep-d0", "je531-b128"), ("jep-d0-bg", "je-d0-bg"),
         ("jep-d0-p32m-bg", "je-d0-bg"), ("jep-d1000-bg", "je-d1000-bg"),
         ("jep-d10000-bg", "je-d10000-bg")]
print("\npatched/stock: median ratio | paired (median of per-round ratios, n)")
for p, s in pairs:
    if p not in med or s not in med:
        continue
    common = sorted(set(rows[s]) & set(rows[p]))
    out = []
    for k in keys:
        r = med[p][k] / med[s][k] if med[s][k] else float("nan")
        pr = [rows[p][i][k] / rows[s][i][k] for i in common if rows[s][i][k]]
        out.append(f"{k} {r:.3f}x|{st.median(pr):.3f}x" if pr else f"{k} {r:.3f}x|-")
    print(f"  {p} / {s} (n={len(common)}): " + ", ".join(out))
