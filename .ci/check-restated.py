#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The contract has one home, include/purge.h; where a man page restates
one of its rules, the two must say the same thing.

Checked today: the zero rule ("Reuse and zeroes" in purge.h, "Memory that
reads as zero" in purge_cancel(3)). Both list numbered conditions; the
check wants the same number of conditions, and in each pair the same key
terms: the identifiers (purge_cancel, zeroed, PURGE_TRIM, on_failure,
MADV_DONTNEED_LOCKED, ...), the answers (answered 0 / answered 1) and the
words that carry a condition (enqueued, whole, touched, overlaps).  A
condition changed in one place and not the other fails it.  Also: every
word of purge.h's glossary is listed where libpurge(7) points to it.

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


def glossary_words(header):
    start = header.index("Words this header uses in a sense of its own")
    block = header[start:header.index("Reuse and zeroes.", start)]
    return [m.strip() for m in re.findall(r"^ \*   ([a-z][a-z ]*?)\s{2,}", block, flags=re.M)]


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
    seven = " ".join(read("man/libpurge.7").split())
    listed = re.search(r"glossary defines the words .*?\(([^)]*)\)", seven)
    listed = {w.strip() for w in listed.group(1).split(",")} if listed else set()
    words = set(glossary_words(header))
    if listed != words:
        errors.append(f"glossary: only purge.h defines {sorted(words - listed)}, only "
                      f"libpurge(7) lists {sorted(listed - words)}")
    for e in errors:
        print(f"check-restated: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"check-restated: the zero rule's {len(h)} conditions agree; "
          f"{len(glossary_words(header))} glossary words listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
