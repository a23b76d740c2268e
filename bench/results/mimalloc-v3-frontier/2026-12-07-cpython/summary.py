#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""summary.py RUNS_TSV [SECS]: medians per configuration of frontier.sh's python
rows (MiB/s, CPU s, average and peak RSS MiB, purge calls), patched/stock
ratios at the same setting (on the medians, and the median of the
per-round ratios, "paired"), and which stock points each patched point
dominates (throughput >= , average RSS <= , CPU <= 1.05x)."""
import statistics as st
import sys

SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 11 or f[3] != "0" or f[4] == "-":
        continue
    wl, cfg, rep = f[0], f[1], int(f[2])
    rec = dict(thr=float(f[4]), cpu=float(f[5]), rss=float(f[6]),
               peak=float(f[7]), calls=float(f[10]))
    # purge calls per GiB allocated: pyalloc.py runs for SECS (-d) seconds
    rec["cpg"] = rec["calls"] / (rec["thr"] * SECS / 1024)
    rows.setdefault(cfg, {})[rep] = rec

keys = ("thr", "cpu", "rss", "peak", "calls", "cpg")
med = {c: {k: st.median(r[k] for r in reps.values()) for k in keys}
       for c, reps in rows.items()}
print("medians (n runs): MiB/s, CPU s, avg RSS MiB, peak RSS MiB, purge calls, calls per GiB allocated")
for c in sorted(med):
    m = med[c]
    print(f"  {c:14s} n={len(rows[c])}  {m['thr']:8.1f} {m['cpu']:7.3f} "
          f"{m['rss']:7.1f} {m['peak']:7.1f} {m['calls']:9.0f} {m['cpg']:9.1f}")

print("\npatched/stock at the same setting: median ratio | paired (median of per-round ratios, n)")
for c in sorted(med):
    if not c.startswith("mi-"):
        continue
    p = "mip-" + c[3:]
    if p not in med:
        continue
    out = []
    for k in keys:
        r = med[p][k] / med[c][k] if med[c][k] else float("nan")
        common = sorted(set(rows[c]) & set(rows[p]))
        pr = [rows[p][i][k] / rows[c][i][k] for i in common if rows[c][i][k]]
        out.append(f"{k} {r:.3f}x|{st.median(pr):.3f}x" if pr else f"{k} {r:.3f}x|-")
    print(f"  {p} / {c} (n={len(common)}): " + ", ".join(out))

print("\ndominance (medians): patched point -> stock points it dominates")
for p in sorted(c for c in med if c.startswith("mip-")):
    d = [s for s in sorted(med) if s.startswith("mi-")
         and med[p]["thr"] >= med[s]["thr"] and med[p]["rss"] <= med[s]["rss"]
         and med[p]["cpu"] <= 1.05 * med[s]["cpu"]]
    print(f"  {p}: {' '.join(d) or '-'}")
print("stock points no patched point dominates:",
      " ".join(s for s in sorted(med) if s.startswith("mi-") and not any(
          med[p]["thr"] >= med[s]["thr"] and med[p]["rss"] <= med[s]["rss"]
          and med[p]["cpu"] <= 1.05 * med[s]["cpu"]
          for p in med if p.startswith("mip-"))) or "-")
