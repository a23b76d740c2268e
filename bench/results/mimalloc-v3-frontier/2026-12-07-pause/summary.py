#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summary.py: every run of this folder's files, per build (python3 summary.py > summary.txt)
import collections, glob, os, re
here = os.path.dirname(os.path.abspath(__file__))
def files(pat): return sorted(glob.glob(os.path.join(here, pat)))
print("== FLUSHALL: RSS MiB 1 s and 5 s after (file: build values...)")
for f in files("flushall-*.txt"):
    d = collections.defaultdict(list)
    for l in open(f):
        m = re.match(r'\S+ round (\d+) (\S+) load .* 1:([\d.]+) .* 5:([\d.]+)', l)
        if m: d[m[2]].append(f"{m[3]}/{m[4]}")
    print(os.path.basename(f), "; ".join(f"{k}: {' '.join(v)}" for k, v in d.items()))
print("== idle: RSS 1 s after, build minus stock of the same round, MiB")
for f in files("idle-*.txt"):
    d = collections.defaultdict(dict)
    for l in open(f):
        m = re.match(r'\S+ round (\d+) (\S+) gap=(\d)ms .* idle (\d+)', l)
        if m: d[(int(m[1]), m[3])][m[2]] = int(m[4])
    out = collections.defaultdict(list)
    for (r, g), v in sorted(d.items()):
        for k, x in v.items():
            if k != 'stock': out[(g, k)].append(f"{(x - v['stock']) / 1024:+.2f}")
        out[(g, 'stock (MiB)')].append(f"{v['stock'] / 1024:.1f}")
    for (g, k), v in sorted(out.items()):
        print(os.path.basename(f), f"gap {g} ms", k, " ".join(v))
print("== churn -n 3: purge calls")
for f in files("churn*.txt"):
    d = collections.defaultdict(list)
    for l in open(f):
        m = re.search(r'round \d+ (\S+) load .* calls=(\d+)', l)
        if m: d[m[1]].append(m[2])
    print(os.path.basename(f), "; ".join(f"{k}: {' '.join(v)}" for k, v in d.items()))
print("== redis-bench: phase 1 calls, RSS MiB; phase 2 calls (runs.tsv)")
for f in files("redis-bench*/runs.tsv"):
    d = collections.defaultdict(list)
    for l in open(f):
        c = l.rstrip("\n").split("\t")
        if len(c) >= 12 and not l.startswith("#") and c[1].isdigit():
            d[c[0]].append(f"{c[6]}/{c[5]}/{c[11]}")
    print(os.path.relpath(f, here), "; ".join(f"{k}: {' '.join(v)}" for k, v in d.items()))
