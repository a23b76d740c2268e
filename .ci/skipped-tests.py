#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Name every test that meson skipped in a build, and why.

meson test's summary counts skipped tests (exit status 77) but does not say
which, nor why: the reasons are only in meson-logs/testlog.txt.  This reads
BUILD/meson-logs/testlog.json (written by the last `meson test -C BUILD`)
and prints one line a skipped test: its name and the reason it printed (the
last line of its output that says "skip", else its last line).

usage: .ci/skipped-tests.py BUILD [--strict]
Exit status: 0; 1 with --strict when a test was skipped; 2 when the log is
missing (no `meson test` ran in BUILD).
"""
import json
import os
import sys


def reason(test):
    lines = [l.strip() for l in (test.get("stdout") or "").splitlines() if l.strip()]
    lines += [l.strip() for l in (test.get("stderr") or "").splitlines() if l.strip()]
    said = [l for l in lines if "skip" in l.lower()]
    pick = said[-1] if said else (lines[-1] if lines else "no reason printed")
    return pick if len(pick) <= 200 else pick[:197] + "..."


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    log = os.path.join(argv[1], "meson-logs", "testlog.json")
    try:
        with open(log) as f:
            tests = [json.loads(l) for l in f if l.strip()]
    except OSError as e:
        print(f"skipped-tests: {log}: {e.strerror}: run meson test -C {argv[1]} first",
              file=sys.stderr)
        return 2
    skipped = [t for t in tests if t.get("result") == "SKIP"]
    if not skipped:
        print(f"skipped tests: none of {len(tests)}")
        return 0
    print(f"skipped tests: {len(skipped)} of {len(tests)}, each with the reason it gave:")
    for t in skipped:
        print(f"  SKIP {t['name']}: {reason(t)}")
    return 1 if "--strict" in argv[2:] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
