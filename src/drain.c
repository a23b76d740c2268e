/* SPDX-License-Identifier: MIT */
/*
 * What to settle, and when: the whole queue (purge_flush), the oldest
 * ranges (purge_flush_older, purge_flush_to, PURGE_INCREMENTAL), room for
 * a cancel that splits, the overlap list.  Takes ranges out of the store
 * (queue.c), sorts them, and hands them to flush.c.  One drain is one
 * flush in the stats.
 */
#include "compat.h"

#include <limits.h>
#include <string.h>

#include "internal.h"
#include "trace.h"

enum { OVER_COUNT = 1, OVER_BYTES = 2, OVER_AGE = 4 };

/* After sorting: ranges that overlap an earlier one (bytes enqueued again
 * while pending) move to the end, so that the others still merge with
 * their neighbours.  Each is settled, and booked, on its own. */
static void overlaps_last(struct purge__kv *a, struct purge__kv *tmp, size_t n)
{
	size_t k = 0, r = 0;
	uintptr_t end = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && a[i].key < end) {
			tmp[r++] = a[i];
			continue;
		}
		a[k++] = a[i];
		end = a[i].key + a[i].val;
	}
	memcpy(a + k, tmp, r * sizeof(*a));
}

/* Settle sel[0..n) (ordered: already sorted, no overlaps): returns the
 * on_failure reports it made. */
static int run(purge_queue *q, size_t n, bool ordered)
{
	const struct purge_stats was = q->st;

	PURGE_TRACE3(flush_start, q, n, q->st.pending_bytes);
	/* PURGE_NO_COALESCE: as taken, enqueue order for a full flush */
	if (!ordered && !(q->set.flags & PURGE_NO_COALESCE)) {
		purge__sort(q->sel, q->tmp, n);
		overlaps_last(q->sel, q->tmp, n);
	}
	purge__flush_run(q, q->sel, n);
	uint64_t failed = q->st.failed_ranges - was.failed_ranges;
	PURGE_TRACE5(flush_done, q, n,
	             q->st.purged_bytes + q->st.failed_bytes - was.purged_bytes - was.failed_bytes,
	             q->st.pmadv_calls + q->st.madv_calls - was.pmadv_calls - was.madv_calls,
	             failed);
	return failed > INT_MAX ? INT_MAX : (int)failed;
}

static int add_reports(int a, int b)
{
	return a > INT_MAX - b ? INT_MAX : a + b;
}

int purge__drain_all(purge_queue *q, bool automatic)
{
	if (q->s.live == 0)
		return 0;
	bool ordered;
	q->busy = true;
	uint64_t t0 = purge__books_flush_begin(q, automatic);
	size_t n = purge__store_take_all(&q->s, q->sel, &ordered);
	int ret = run(q, n, ordered);
	purge__books_flush_end(q, t0);
	q->busy = false;
	return ret;
}

/* The oldest ranges while they pass the limits, as one flush. */
static int drain_oldest(purge_queue *q, bool automatic, uint64_t max_stamp, uint64_t max_bytes)
{
	q->busy = true;
	uint64_t t0 = purge__books_flush_begin(q, automatic);
	size_t n = purge__store_take_oldest(&q->s, q->sel, SIZE_MAX, max_stamp, max_bytes);
	int ret = run(q, n, false);
	purge__books_flush_end(q, t0);
	q->busy = false;
	return ret;
}

int purge__drain_older(purge_queue *q, uint64_t age_ns)
{
	if (age_ns == 0)
		return purge__drain_all(q, false);
	/* stamps come from the coarse clock, never ahead of this one: a range
	 * may pass for up to a tick older than it is, never younger */
	uint64_t now = purge__now(q, false), oldest = purge__store_oldest(&q->s);
	if (oldest == 0 || now < age_ns || oldest > now - age_ns)
		return 0;
	return drain_oldest(q, false, now - age_ns, UINT64_MAX);
}

int purge__drain_to(purge_queue *q, size_t keep_bytes)
{
	if (q->st.pending_bytes <= keep_bytes)
		return 0;
	return drain_oldest(q, false, UINT64_MAX, q->st.pending_bytes - keep_bytes);
}

/* Rounds of the oldest `batch` ranges, one call each, while over(q, arg)
 * still has a bit of `which`; one flush in the stats. */
static int rounds(purge_queue *q, unsigned (*over)(purge_queue *, uint64_t), uint64_t arg,
                  unsigned which)
{
	int ret = 0;
	size_t n;

	q->busy = true;
	uint64_t t0 = purge__books_flush_begin(q, true);
	do {
		n = purge__store_take_oldest(&q->s, q->sel, q->set.batch, UINT64_MAX, UINT64_MAX);
		ret = add_reports(ret, run(q, n, false));
	} while (n && (over(q, arg) & which));
	purge__books_flush_end(q, t0);
	q->busy = false;
	return ret;
}

static unsigned short_of_room(purge_queue *q, uint64_t need)
{
	return purge__store_room(&q->s) < need;
}

int purge__drain_room(purge_queue *q, uint32_t need)
{
	if (purge__store_room(&q->s) >= need)
		return 0;
	return rounds(q, short_of_room, need, 1);
}

/* Thresholds crossed now (now: coarse clock, as the stamps). */
static unsigned over(purge_queue *q, uint64_t now)
{
	unsigned c = 0;
	uint64_t oldest;

	if (q->s.live >= q->set.capacity)
		c |= OVER_COUNT;
	if (q->set.max_pending_bytes && q->st.pending_bytes > q->set.max_pending_bytes)
		c |= OVER_BYTES;
	if (q->set.max_delay_ns && (oldest = purge__store_oldest(&q->s)) &&
	    now - oldest >= q->set.max_delay_ns)
		c |= OVER_AGE;
	return c;
}

int purge__drain_auto(purge_queue *q, uint64_t now)
{
	unsigned c = over(q, now);

	if (!c)
		return 0;
	if (!(q->set.flags & PURGE_INCREMENTAL))
		return purge__drain_all(q, true);
	return rounds(q, over, now, c);
}

int purge__drain_ovl(purge_queue *q)
{
	if (q->s.novl <= PURGE_OVL_MAX)
		return 0;
	q->busy = true;
	uint64_t t0 = purge__books_flush_begin(q, true);
	int ret = run(q, purge__store_take_ovl(&q->s, q->sel), false);
	purge__books_flush_end(q, t0);
	q->busy = false;
	return ret;
}
