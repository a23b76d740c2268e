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
};

struct fuzz_opts {
	bool real_kernel; /* else the fake kernel backend */
	uint64_t max_ops;
	bool verbose;
};

/* Runs until max_ops or the input ends; aborts with a message on any
 * mismatch.  Returns the number of operations run. */
uint64_t fuzz_run(struct fuzz_src *src, const struct fuzz_opts *o);

#endif
