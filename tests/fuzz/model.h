/* SPDX-License-Identifier: MIT */
/*
 * Model-based fuzzing of a purge queue.  A driver feeds random operations
 * (enqueue, cancel, flush, set_batch, reconfigure, fault injection) to the
 * library and to a model of what must be purged, over a real mapped region
 * fenced by guard pages, and checks after every operation that
 *  - every page that is not pending holds what the model says: its pattern
 *    (live data: never purged) or zero (purged, MADV_DONTNEED);
 *  - stats and on_failure reports match the model, and
 *    enqueued = purged + cancelled + failed + pending.
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
	uint64_t state; /* PRNG state */
	bool done;      /* input exhausted */
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
