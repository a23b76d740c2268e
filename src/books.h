/* SPDX-License-Identifier: MIT */
/*
 * The books, hot half: what purge_enqueue and purge_cancel book, inline so
 * that those calls stay a few nanoseconds.  With books.c, the only code
 * that writes struct purge_stats; every function keeps
 *   enqueued_bytes == purged_bytes + cancelled_bytes + failed_bytes + pending_bytes
 * The cold half, in books.c, is declared here too.  Included where they
 * are used: books.c, drain.c (through drain.h), flush.c and frames.c.
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

/* books.c: the only writers of q->st, with the inline half above. */
void purge__books_purged(purge_queue *q, size_t bytes, size_t done);
void purge__books_failed(purge_queue *q, void *addr, size_t len, int err, bool done);
uint64_t purge__books_flush_begin(purge_queue *q, bool automatic);
void purge__books_flush_end(purge_queue *q, uint64_t t0);
void purge__books_call(purge_queue *q, size_t iovecs, uint64_t ns);
void purge__books_short(purge_queue *q);
void purge__books_fallback(purge_queue *q);
void purge__books_merged(purge_queue *q, size_t joins);
/* a removal for a flush made `parts` ranges of the flush out of pieces it
 * removed (`gone`) or split (`split`) */
void purge__books_parts(purge_queue *q, size_t parts, uint32_t gone, uint32_t split);
void purge__books_frames(purge_queue *q, uint64_t whole, uint64_t split);

#pragma GCC visibility pop

#endif
