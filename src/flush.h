/* SPDX-License-Identifier: MIT */
/*
 * flush.c: settle sel[0..n) (sorted, overlaps last; or as taken with
 * PURGE_NO_COALESCE): batching, coalescing, error attribution.  Talks to
 * the kernel through q->be only.  Included by drain.c, flush.c and
 * setup.c (which lays out q->ioslot).
 */
#ifndef PURGE_FLUSH_H
#define PURGE_FLUSH_H

#include "internal.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

/* Where a merged iovec of a call starts, and the joins it holds. */
struct purge__slot {
	uint32_t piece, joins;
	size_t off;
};

struct purge__flush_out {
	uint64_t bytes;   /* settled: purged or failed */
	uint64_t calls;   /* system calls */
	uint64_t reports; /* on_failure reports */
};
struct purge__flush_out purge__flush_run(purge_queue *q, const struct iovec *sel, size_t n);

#pragma GCC visibility pop

#endif /* PURGE_FLUSH_H */
