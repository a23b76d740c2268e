/* SPDX-License-Identifier: MIT */
/*
 * Model-based fuzzing of a purge queue.  A driver feeds random operations
 * (enqueue, cancel, flush, flush_older, flush_to, clock ticks, set_batch,
 * reconfigure, fault injection, refusals) to the library and to a model
 * written from the contract in purge.h, over a real mapped region fenced by
 * guard pages, with the fake kernel or the real one and a clock the driver
 * moves.  After every operation it checks that
 *  - every page that is not pending holds what the model says: its pattern
 *    (live data, or a page the kernel refused) or zero (purged with
 *    MADV_DONTNEED);
 *  - cancel's answer, the pending ranges and bytes, the flushes and the age
 *    of the oldest range are the model's;
 *  - purged and failed bytes add up to what was settled, failed bytes lie
 *    between what had to fail and what could, and equal what on_failure
 *    reported; every report lies inside one settled range and names a page
 *    the kernel had a reason to refuse.
 * With PURGE_HUGE the holding flushes (automatic ones, PURGE_INCREMENTAL
 * rounds, purge_flush_to, purge_flush_due) settle what the frame plan
 * decides: the driver observes what they settled, counting per page the
 * copies the kernel was asked to purge or on_failure named, and checks
 * what the contract says of them: under every threshold but for what is
 * held, no frame left wholly pending, no huge page split that waiting
 * could have freed whole (fake kernel; real kernel, from PAGEMAP_SCAN),
 * purge_flush_due's deadline.
 * Randomness comes from a byte stream (libFuzzer) or a seeded PRNG.
 */
#ifndef FUZZ_MODEL_H
#define FUZZ_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fuzz_src {
	const uint8_t *p; /* libFuzzer input, or NULL for the PRNG */
	size_t n;
	uint64_t state;   /* PRNG state */
	bool done;        /* input exhausted */
	uint64_t zclaims; /* out: zero claims of cancel read back, over all runs */
	/* out, PURGE_HUGE: holding flushes observed while ranges overlapped, and
	 * the checks made of them: no frame left whole, no split, the deadline */
	uint64_t overlapped, whole_checks, split_checks, due_checks;
	uint64_t huge_seen; /* of the split checks, those with a huge-backed frame before */
};

struct fuzz_opts {
	bool real_kernel; /* else the fake kernel backend */
	bool thp;         /* real kernel: a region transparent huge pages back (model
	                     pages of 64 KiB, two 2 MiB frames) */
	uint64_t max_ops;
	bool verbose;
};

/* Runs until max_ops or the input ends; aborts with a message on any
 * mismatch.  Returns the number of operations run. */
uint64_t fuzz_run(struct fuzz_src *src, const struct fuzz_opts *o);

#endif
