#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The one restatement left on purpose: the zero rule, in include/purge.h
("Reuse and zeroes") and in purge_cancel(3) ("Memory that reads as zero").
Both must carry it whole: the header is the contract that code cites by
condition number (the fuzz model in tests/fuzz/expect.c, examples/pagerun.c,
the jemalloc patches), and the installed man page is what a reader without
the source gets.  Every other place (libpurge(7), the README, the
integrations' READMEs) points to these two instead of restating them.

Both list numbered conditions; the check wants the same number of
conditions, and in each pair the same key terms: the identifiers
(purge_cancel, zeroed, PURGE_TRIM, on_failure, MADV_DONTNEED_LOCKED, ...),
the answers (answered 0 / answered 1) and the words that carry a condition
(enqueued, whole, touched, overlaps).  A condition changed in one place and
not the other fails it.

usage: .ci/check-restated.py   (from anywhere in the repository)
Exit status: 0 when they agree, 1 with a line per difference.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("enqueued", "whole", "touched", "touches", "overlaps", "wrote", "advice")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def header_conditions(text):
    """Numbered conditions of the zero rule in purge.h's comment."""
    start = text.index("reads as zero when all of these hold:")
    block = text[start:text.index(" * and nothing wrote", start)]
    block = re.sub(r"^ \*", "", block, flags=re.M)
    return [c for c in re.split(r"\n\s+\d\.\s", block)[1:]]


def man_conditions(text):
    """Numbered conditions (.IP N.) of purge_cancel(3)'s zero rule."""
    start = text.index(".SS Memory that reads as zero")
    block = text[start:text.index("\n.PP\n", start)]
    parts = re.split(r"\n\.IP \d\. 4\n", block)[1:]
    return [re.sub(r"^\.[A-Z]+ ?", "", p, flags=re.M).replace("\\-", "-") for p in parts]


# the same thing named two ways: the struct, and the call that fills it
ALIASES = {"purge_get_stats": "purge_stats"}


def key_terms(cond):
    text = " ".join(cond.split())
    ids = re.findall(r"\b[a-z]+_[a-z_]+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", text)
    terms = {ALIASES.get(t, t) for t in ids}
    terms |= {"zeroed"} if re.search(r"\bzeroed\b", text) else set()
    terms |= {f"answered {n}" for n in re.findall(r"answered (\d)", text)}
    terms |= {w.rstrip("s") for w in WORDS if re.search(rf"\b{w}\b", text)}
    return terms


def main():
    header, man = read("include/purge.h"), read("man/purge_cancel.3")
    errors = []
    h, m = header_conditions(header), man_conditions(man)
    if len(h) != len(m):
        errors.append(f"the zero rule: purge.h lists {len(h)} conditions, "
                      f"purge_cancel(3) {len(m)}")
    for i, (a, b) in enumerate(zip(h, m), 1):
        ta, tb = key_terms(a), key_terms(b)
        if ta != tb:
            errors.append(f"the zero rule, condition {i}: only purge.h says "
                          f"{sorted(ta - tb)}, only purge_cancel(3) says {sorted(tb - ta)}")
    for e in errors:
        print(f"check-restated: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"check-restated: the zero rule's {len(h)} conditions agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
