#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pyalloc: CPython allocating and freeing a few hundred MiB, over and over.

Every round fills a list with bytes objects of random sizes until they hold
MIB MiB, then drops all but a random KEEP% of them (kept into the next round,
so that the heap is fragmented the way a long-running program's is).  The
objects are over 512 bytes, so CPython asks malloc() for each (its own
small-object arenas serve only smaller ones), and each is written whole
(b"x" * n is malloc + memset), so that its pages are faulted in.  Under
LD_PRELOAD the allocator under test serves every one of them.

Prints RESULT ops_per_s=... (MiB allocated per second) for frontier.sh.
"""
import argparse
import random
import sys
import time

KIB = 1024
MIB = 1024 * KIB
# sizes: mostly 1-64 KiB, one in 16 a large object of 256 KiB-2 MiB
SMALL = (1 * KIB, 64 * KIB)
LARGE = (256 * KIB, 2 * MIB)


def parse():
    p = argparse.ArgumentParser(
        prog="pyalloc.py",
        description="CPython allocating and freeing MIB MiB per round")
    p.add_argument("-d", "--seconds", type=float, default=5.0,
                   help="length of the run (default 5)")
    p.add_argument("-m", "--mib", type=int, default=300,
                   help="MiB allocated per round (default 300)")
    p.add_argument("-k", "--keep", type=int, default=10,
                   help="percent of the objects kept into the next round (default 10)")
    p.add_argument("-S", "--seed", type=int, default=1, help="random seed (default 1)")
    a = p.parse_args()
    if a.mib < 1 or not 0 <= a.keep < 100 or a.seconds <= 0:
        p.error("need -m >= 1, 0 <= -k < 100, -d > 0")
    return a


def one_round(rng, kept, budget, keep, deadline):
    """Allocate `budget` bytes on top of `kept` (less once the deadline has
    passed); return the survivors and the bytes allocated."""
    live = kept
    done = 0
    while done < budget:
        lo, hi = LARGE if rng.randrange(16) == 0 else SMALL
        n = rng.randrange(lo, hi)
        live.append(b"\x5a" * n)
        done += n
        if len(live) % 256 == 0 and time.monotonic() > deadline:
            break
    rng.shuffle(live)
    return live[:len(live) * keep // 100], done


def main():
    a = parse()
    rng = random.Random(a.seed)
    kept = []
    total = 0
    rounds = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        kept, n = one_round(rng, kept, a.mib * MIB, a.keep, t0 + a.seconds)
        total += n
        rounds += 1
    secs = time.monotonic() - t0
    print("pyalloc: python=%s mib=%d keep=%d seed=%d" %
          (sys.version.split()[0], a.mib, a.keep, a.seed))
    print("RESULT ops_per_s=%.1f rounds=%d mib=%.0f seconds=%.3f" %
          (total / MIB / secs, rounds, total / MIB, secs))


if __name__ == "__main__":
    main()
