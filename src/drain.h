/* SPDX-License-Identifier: MIT */
/*
 * drain.c's hot half: the thresholds an enqueue may cross and the enqueue
 * itself, inline so that purge_enqueue stays a few nanoseconds; settling,
 * when a threshold or the room asks for it, is in drain.c.  The only
 * definition of the thresholds.  With the cold half's entry points, which
 * drain.c defines.  Included by api.c, drain.c and setup.c.
 */
#ifndef PURGE_DRAIN_H
#define PURGE_DRAIN_H

#include "books.h"
#include "internal.h"

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

enum { PURGE_OVER_COUNT = 1, PURGE_OVER_BYTES = 2, PURGE_OVER_AGE = 4 };

/* The thresholds of counts: capacity and max_pending_bytes.  What a frame
 * plan holds does not count: it would only make empty flushes. */
static inline unsigned purge__drain_over_counts(const purge_queue *q)
{
	unsigned c = 0;

	if (purge__store_live(&q->s) - purge__store_held(&q->s) >= q->set.capacity)
		c |= PURGE_OVER_COUNT;
	if (q->set.max_pending_bytes &&
	    q->st.pending_bytes - purge__store_held_bytes(&q->s) > q->set.max_pending_bytes)
		c |= PURGE_OVER_BYTES;
	return c;
}

/* Thresholds crossed now (now: coarse clock, as the stamps). */
static inline unsigned purge__drain_over(const purge_queue *q, uint64_t now)
{
	unsigned c = purge__drain_over_counts(q);
	uint64_t oldest;

	if (q->set.max_delay_ns && (oldest = purge__store_oldest(&q->s)) &&
	    now - oldest >= q->set.max_delay_ns)
		c |= PURGE_OVER_AGE;
	return c;
}

/* drain.c: rounds of the oldest until `need` pieces are free; the
 * automatic flush for thresholds c. */
__attribute__((cold)) void purge__drain_room(purge_queue *q, uint32_t need);
__attribute__((cold)) void purge__drain_auto(purge_queue *q, unsigned c, uint64_t now);

/* The enqueue of a plain queue with room at the end of its array: the
 * range and its books, without a call; the thresholds it crossed, or -1
 * when purge__drain_enqueue must do it all.  aged (a constant at each
 * caller): the queue keeps ages, now is the coarse time, and the age
 * threshold counts too; else only the counts (a queue without ages has no
 * max_delay_ns). */
static inline int purge__drain_enqueue_plain(purge_queue *q, uintptr_t start, uintptr_t end,
                                             uint64_t now, bool aged)
{
	if (!purge__store_add_plain(&q->s, start, end, now))
		return -1;
	purge__books_enqueued(q, end - start);
	return (int)(aged ? purge__drain_over(q, now) : purge__drain_over_counts(q));
}

/* An enqueue: room first (only after cancels split ranges), the range,
 * its books, then what its thresholds ask for. */
static inline void purge__drain_enqueue(purge_queue *q, uintptr_t start, uintptr_t end)
{
	if (purge__store_room(&q->s) == 0)
		purge__drain_room(q, 1);
	uint64_t now = purge__store_wants_time(&q->s) ? purge__now(q, true) : 0;
	purge__store_add(&q->s, start, end, now);
	purge__books_enqueued(q, end - start);
	unsigned c = purge__drain_over(q, now);
	if (c)
		purge__drain_auto(q, c, now);
}

/* drain.c: what to settle and when.  Enqueue and cancel settle what their
 * thresholds and room ask for; the drains return the on_failure reports
 * they made. */
int purge__drain_cancel(purge_queue *q, uintptr_t start, uintptr_t end);
int purge__drain_all(purge_queue *q);
int purge__drain_older(purge_queue *q, uint64_t age_ns);
int purge__drain_to(purge_queue *q, size_t keep_bytes);
int purge__drain_due(purge_queue *q, uint64_t age_ns, uint64_t *next_ns);
uint64_t purge__drain_oldest(purge_queue *q);
/* A shared queue: the thresholds other threads crossed during a flush;
 * a fork child's half-settled round (flight.h). */
void purge__drain_wanted(purge_queue *q);
void purge__drain_fork_child(purge_queue *q);

#pragma GCC visibility pop

#endif
