#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""summary.py LOG.gz...: for each log of redis's ./runtest, the count of
each test status ([ok], [err], [ignore], [skip], [exception]), the run's
last verdict line, and then every test whose status is not the same in all
the logs. A name's digits are read as N (the PSYNC2 tests name random
replication layouts and counts), and a name seen more than once in a log
keeps its worst status."""
import gzip
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LINE = re.compile(r"^\[(ok|err|ignore|skip|exception)\]: (.*?)(?: \(\d+ ms\))?$")
RANK = {"ok": 0, "ignore": 1, "skip": 1, "err": 2, "exception": 3}


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    status, counts, verdict = {}, {}, "(no verdict line)"
    with opener(path, "rt", errors="replace") as f:
        for raw in f:
            line = ANSI.sub("", raw.rstrip("\n"))
            if "All tests passed" in line or "tests failed" in line.lower():
                verdict = line.strip()
            m = LINE.match(line)
            if not m:
                continue
            st, name = m.groups()
            name = re.sub(r"\d+", "N", name)
            counts[st] = counts.get(st, 0) + 1
            if RANK[st] >= RANK[status.get(name, "ok")]:
                status[name] = st
    return status, counts, verdict


def main(paths):
    runs = [(p, *read(p)) for p in paths]
    for p, _, counts, verdict in runs:
        c = " ".join(f"{k} {counts.get(k, 0)}" for k in RANK)
        print(f"{p}: {c}; {verdict}")
    names = sorted(set().union(*(r[1] for r in runs)))
    diff = [n for n in names if len({r[1].get(n, "absent") for r in runs}) > 1]
    print(f"tests whose status differs between the logs: {len(diff)}")
    for n in diff:
        print("  " + n + ": " + ", ".join(f"{r[0]}={r[1].get(n, 'absent')}" for r in runs))


if __name__ == "__main__":
    main(sys.argv[1:])
