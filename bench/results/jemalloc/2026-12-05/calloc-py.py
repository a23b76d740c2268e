# SPDX-License-Identifier: MIT
# calloc-py.py [N]: a calloc-heavy Python workload for the patched jemalloc
# (issue 28): bytes(n) is PyObject_Calloc (use_calloc), n from 32 KiB to
# 6 MiB, 32 of them kept alive at random, N rounds (default 20000; calloc-py.sh runs 600).  Every
# 7th round writes the whole block through a bytearray copy, so that freed
# extents hold data.  Prints a checksum (always 0: calloc'd memory is read
# back and must be zero).
import random
import sys

r = random.Random(1)
keep = [None] * 32
bad = 0
n_rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
for i in range(n_rounds):
    n = r.choice((32 << 10, 128 << 10, 512 << 10, 2 << 20, 6 << 20))
    b = bytes(n)  # calloc
    bad += sum(b[:: 4096 + (i % 3)])  # read back across its pages: zeros
    if i % 7 == 0:
        w = bytearray(b)  # malloc + copy: written memory, freed dirty
        w[:: 4096] = b"\x55" * len(w[:: 4096])
        keep[r.randrange(32)] = w
    else:
        keep[r.randrange(32)] = b
print("nonzero", bad)
sys.exit(1 if bad else 0)
