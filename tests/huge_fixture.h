/* SPDX-License-Identifier: MIT */
/* The fake kernel with 16 huge frames, and the helpers of the PURGE_HUGE
 * tests (test_huge*.c): frame addresses, frames made huge, a PURGE_HUGE
 * queue, a frame freed in pieces. */
#ifndef TESTS_HUGE_FIXTURE_H
#define TESTS_HUGE_FIXTURE_H

#include <errno.h>

#define FIXTURE_BASE   ((uintptr_t)0x500000000000ull) /* 2 MiB aligned */
#define FIXTURE_NPAGES (16 * 512)                     /* 16 frames of 2 MiB */
#include "fixture.h"

TestSuite(huge, .init = setup, .fini = teardown);

#define FRAME ((uintptr_t)2 << 20)
#define KIB   ((size_t)1024)
#define MS    1000000ull

static inline uintptr_t fr(size_t f)
{
	return FIXTURE_BASE + f * FRAME;
}

static inline void all_huge(size_t nframes)
{
	for (size_t f = 0; f < nframes; f++)
		fake_set_huge(&fk, fr(f), true);
}

static inline purge_queue *mkhuge(size_t max_pending, uint64_t delay, unsigned flags)
{
	struct purge_config cfg = {.capacity = 4096,
	                           .flags = PURGE_HUGE | flags,
	                           .max_pending_bytes = max_pending,
	                           .max_delay_ns = delay};
	return mkq(&cfg);
}

/* pieces of `piece` bytes of frame f, from `from` to `to` (offsets) */
static inline void free_frame(purge_queue *q, size_t f, size_t from, size_t to, size_t piece)
{
	for (size_t off = from; off < to; off += piece)
		cr_assert_eq(purge_enqueue(q, (void *)(fr(f) + off), piece), 0);
}

#endif
