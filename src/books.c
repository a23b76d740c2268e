/* SPDX-License-Identifier: MIT */
/*
 * The books: with books.h (the inline half for enqueue and cancel), the
 * only code that writes struct purge_stats.  Every byte that enters through
 * purge__books_enqueued() leaves through exactly one of cancelled, purged
 * or failed, so at every point
 *   enqueued_bytes == purged_bytes + cancelled_bytes + failed_bytes + pending_bytes
 * and pending_ranges counts the pieces not settled yet.
 */
#include "compat.h"

#include <pthread.h>

#include "books.h"
#include "internal.h"
#include "trace.h"

/* `done`: pending ranges whose last bytes these were. */
void purge__books_purged(purge_queue *q, size_t bytes, size_t done)
{
	q->st.purged_bytes += bytes;
	q->st.pending_bytes -= bytes;
	q->st.pending_ranges -= done;
}

/*
 * The caller's callback runs inside the library call, with the queue busy.
 * Thread cancellation waits until it returns, so that a cancelled thread
 * never leaves the queue busy (or its lock held) for good.
 */
void purge__books_failed(purge_queue *q, void *addr, size_t len, int err, bool done)
{
	int old;

	q->st.failed_ranges++;
	q->st.failed_bytes += len;
	q->st.pending_bytes -= len;
	q->st.pending_ranges -= done;
	PURGE_TRACE4(fail, q, addr, len, err);
	if (!q->set.on_failure)
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	q->set.on_failure(q->set.arg, addr, len, err);
	pthread_setcancelstate(old, &old);
}

uint64_t purge__books_flush_begin(purge_queue *q, bool automatic)
{
	q->st.flushes++;
	q->st.auto_flushes += automatic;
	return purge__now(q, false);
}

void purge__books_flush_end(purge_queue *q, uint64_t t0)
{
	uint64_t ns = purge__now(q, false) - t0;

	q->st.flush_ns += ns;
	q->st.flush_max_ns = ns > q->st.flush_max_ns ? ns : q->st.flush_max_ns;
}

/* Bucket of a process_madvise call with n iovecs: 1, 2-7, 8-63, 64-255,
 * 256-1023, 1024 (PURGE_STATS_IOV_BUCKETS). */
static unsigned books_bucket(size_t n)
{
	return n <= 1 ? 0 : n < 8 ? 1 : n < 64 ? 2 : n < 256 ? 3 : n < PURGE_BATCH_MAX ? 4 : 5;
}

/* iovecs == 0: a madvise call. */
void purge__books_call(purge_queue *q, size_t iovecs, uint64_t ns)
{
	if (iovecs) {
		q->st.pmadv_calls++;
		q->st.call_iovecs += iovecs;
		q->st.calls_by_iovecs[books_bucket(iovecs)]++;
	} else {
		q->st.madv_calls++;
	}
	q->st.call_max_ns = ns > q->st.call_max_ns ? ns : q->st.call_max_ns;
}

void purge__books_short(purge_queue *q)
{
	q->st.short_counts++;
}

void purge__books_fallback(purge_queue *q)
{
	q->st.fallbacks++;
}

void purge__books_merged(purge_queue *q, size_t joins)
{
	q->st.merged_ranges += joins;
}

/* Each part a flush settles is booked as one range done: the pieces it
 * came from count as that many, less those gone, plus those split off. */
void purge__books_parts(purge_queue *q, size_t parts, uint32_t gone, uint32_t split)
{
	q->st.pending_ranges += parts + split - gone;
}

void purge__books_frames(purge_queue *q, uint64_t whole, uint64_t split)
{
	q->st.frames_whole += whole;
	q->st.frames_split += split;
}
