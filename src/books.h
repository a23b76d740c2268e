/* SPDX-License-Identifier: MIT */
/*
 * The books, hot half: what purge_enqueue and purge_cancel book, inline so
 * that those calls stay a few nanoseconds.  With books.c, the only code
 * that writes struct purge_stats; every function keeps
 *   enqueued_bytes == purged_bytes + cancelled_bytes + failed_bytes + pending_bytes
 * Included where they are used: drain.c and books.c.
 */
#ifndef PURGE_BOOKS_H
#define PURGE_BOOKS_H

#include "internal.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

static inline void purge__books_enqueued(purge_queue *q, size_t bytes)
{
	q->st.enqueued_ranges++;
	q->st.enqueued_bytes += bytes;
	q->st.pending_ranges++;
	q->st.pending_bytes += bytes;
}

static inline void purge__books_cancelled(purge_queue *q, const struct purge__cut *cut)
{
	q->st.cancelled_bytes += cut->bytes;
	q->st.pending_bytes -= cut->bytes;
	q->st.pending_ranges += cut->split;
	q->st.pending_ranges -= cut->gone;
}

#pragma GCC visibility pop

#endif
