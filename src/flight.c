/* SPDX-License-Identifier: MIT */
/*
 * The flight of a shared queue (flight.h): the round a flush settles
 * without holding the queue's lock across the kernel, the zone a call
 * covers, the cancels that take from the round or wait for the zone, and
 * the waits (for a zone, for a flush, for a fork) on the flight's own
 * mutex and condition.  Knows the store only to give back the right part
 * of a range a cancel splits; never makes a system call.
 */
#include "compat.h"

#include <errno.h>
#include <string.h>

#include "internal.h"
#include "flight.h"

void purge__flight_drop(purge_queue *q)
{
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_unlock(&q->lock);
	else
		q->guard.unlock(q->guard.arg);
}

void purge__flight_retake(purge_queue *q)
{
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_lock(&q->lock);
	else
		q->guard.lock(q->guard.arg);
}

/* ---- waits --------------------------------------------------------------- */

typedef bool flight_until(const purge_queue *q, uint64_t arg);

/* Called with the queue's lock, returns with it once `until` holds with
 * the lock held: waits on the flight's condition meanwhile, with the
 * queue's lock let go.  The fields `until` reads are written under `m`: no
 * wake-up is missed; a thread that takes the lock first may change them
 * again (another flush may start): then it waits again.  Cancellation is
 * held off (a wait must never leave the lock let go). */
static void flight_wait(purge_queue *q, flight_until *until, uint64_t arg)
{
	int old;

	for (;;) {
		pthread_mutex_lock(&q->fl.m);
		if (until(q, arg)) {
			pthread_mutex_unlock(&q->fl.m);
			return;
		}
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		purge__flight_drop(q);
		while (!until(q, arg))
			pthread_cond_wait(&q->fl.c, &q->fl.m);
		pthread_mutex_unlock(&q->fl.m);
		purge__flight_retake(q);
		pthread_setcancelstate(old, &old);
	}
}

/* Under the queue's lock: a field a wait tests changes, with `m`. */
static void flight_lock(purge_queue *q)
{
	pthread_mutex_lock(&q->fl.m);
}

static void flight_wake(purge_queue *q)
{
	pthread_cond_broadcast(&q->fl.c);
	pthread_mutex_unlock(&q->fl.m);
}

static bool flight_idle(const purge_queue *q, uint64_t arg)
{
	(void)arg;
	return !q->busy;
}

static bool flight_seq_moved(const purge_queue *q, uint64_t seq)
{
	return q->fl.seq != seq;
}

static bool flight_no_waiters(const purge_queue *q, uint64_t arg)
{
	(void)arg;
	return q->fl.waiters == 0;
}

static bool flight_parked_or_idle(const purge_queue *q, uint64_t arg)
{
	(void)arg;
	return q->fl.parked || !q->busy;
}

static bool flight_fork_over(const purge_queue *q, uint64_t arg)
{
	(void)arg;
	return !q->fl.fork;
}

/* ---- a flush's span ------------------------------------------------------ */

void purge__flight_begin(purge_queue *q, uint64_t t0)
{
	flight_lock(q);
	q->busy = true;
	q->fl.owner = pthread_self();
	q->fl.t0 = t0;
	flight_wake(q);
}

void purge__flight_end(purge_queue *q)
{
	flight_lock(q);
	q->busy = false;
	flight_wake(q);
}

void purge__flight_wait_idle(purge_queue *q)
{
	flight_wait(q, flight_idle, 0);
}

/* ---- the round ----------------------------------------------------------- */

/* How many of v[0..n) are in address order, each after the end of the
 * one before (cancel searches them); the hull of the rest. */
static size_t flight_ordered(const struct iovec *v, size_t n, uintptr_t *lo, uintptr_t *hi)
{
	size_t k = 0;
	uintptr_t end = 0;

	for (; k < n && (uintptr_t)v[k].iov_base >= end; k++)
		end = (uintptr_t)v[k].iov_base + v[k].iov_len;
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (size_t i = k; i < n; i++) {
		uintptr_t a = (uintptr_t)v[i].iov_base, b = a + v[i].iov_len;
		*lo = a < *lo ? a : *lo;
		*hi = b > *hi ? b : *hi;
	}
	return k;
}

struct iovec *purge__flight_load(purge_queue *q, const struct iovec *v, size_t n, uint64_t stamp)
{
	struct purge__flight *f = &q->fl;

	memcpy(f->v, v, n * sizeof(*v));
	f->n = n;
	f->ordered = flight_ordered(f->v, n, &f->tail_lo, &f->tail_hi);
	f->next = f->next_off = f->taint = 0;
	f->stamp = stamp;
	f->zone_lo = f->zone_hi = 0;
	return f->v;
}

void purge__flight_unload(purge_queue *q)
{
	q->fl.n = 0;
	q->fl.zone_lo = q->fl.zone_hi = 0;
}

/* ---- zones --------------------------------------------------------------- */

void purge__flight_zone(purge_queue *q, size_t i, size_t off, size_t pi, size_t poff)
{
	struct purge__flight *f = &q->fl;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	for (size_t j = i; j < pi || (j == pi && poff && j < f->n); j++) {
		uintptr_t a = (uintptr_t)f->v[j].iov_base + (j == i ? off : 0);
		uintptr_t b = j == pi ? (uintptr_t)f->v[j].iov_base + poff
		                      : (uintptr_t)f->v[j].iov_base + f->v[j].iov_len;
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	f->zone_lo = lo;
	f->zone_hi = hi;
	f->next = pi;
	f->next_off = poff;
}

void purge__flight_complete(purge_queue *q, size_t i, size_t off, size_t taint)
{
	struct purge__flight *f = &q->fl;

	f->zone_lo = f->zone_hi = 0;
	f->next = i;
	f->next_off = off;
	f->taint = taint > i ? taint : 0;
	flight_lock(q);
	f->seq++;
	flight_wake(q);
	/* the cancels that waited for this plan take their part first */
	flight_wait(q, flight_no_waiters, 0);
	if (!f->fork)
		return;
	flight_lock(q);
	f->parked = true;
	flight_wake(q);
	flight_wait(q, flight_fork_over, 0);
	flight_lock(q);
	f->parked = false;
	flight_wake(q);
}

bool purge__flight_touches(const purge_queue *q, uintptr_t a, uintptr_t b)
{
	return q->fl.n && a < q->fl.zone_hi && q->fl.zone_lo < b;
}

bool purge__flight_unbooked(const purge_queue *q, uintptr_t a, uintptr_t b)
{
	const struct purge__flight *f = &q->fl;

	if (purge__flight_touches(q, a, b))
		return true;
	for (size_t j = f->next; j < f->taint && j < f->n; j++) {
		uintptr_t s = (uintptr_t)f->v[j].iov_base + (j == f->next ? f->next_off : 0);
		if (a < (uintptr_t)f->v[j].iov_base + f->v[j].iov_len && s < b)
			return true;
	}
	return false;
}

void purge__flight_wait_booked(purge_queue *q)
{
	flight_wait(q, flight_seq_moved, q->fl.seq);
}

void purge__flight_wait_zone(purge_queue *q)
{
	flight_lock(q);
	q->fl.waiters++;
	uint64_t seq = q->fl.seq;
	flight_wake(q);
	flight_wait(q, flight_seq_moved, seq);
}

void purge__flight_waited(purge_queue *q)
{
	flight_lock(q);
	q->fl.waiters--;
	flight_wake(q);
}

/* ---- cancels ------------------------------------------------------------- */

/* What of v[j] no call has taken: [*u0, *u1). */
static void flight_unsent(const struct purge__flight *f, size_t j, uintptr_t *u0, uintptr_t *u1)
{
	*u0 = (uintptr_t)f->v[j].iov_base + (j == f->next ? f->next_off : 0);
	*u1 = (uintptr_t)f->v[j].iov_base + f->v[j].iov_len;
}

/* Does taking [a, b) out of v[j] split it (a part is left on each side)? */
static bool flight_splits(const struct purge__flight *f, size_t j, uintptr_t a, uintptr_t b)
{
	uintptr_t u0, u1;

	flight_unsent(f, j, &u0, &u1);
	uintptr_t s = a > u0 ? a : u0, t = b < u1 ? b : u1;
	return s < t && s > (uintptr_t)f->v[j].iov_base && t < u1;
}

/* The right part of a split: settled by this round (an unsorted tail
 * range), or, when the spare slots are used up, pending in the store
 * again, with the round's age and ahead of everything no older, counted
 * (spilled) so that a flush that settles "everything" takes it too. */
static void flight_give_back(purge_queue *q, uintptr_t a, uintptr_t b)
{
	struct purge__flight *f = &q->fl;

	if (f->n < f->cap) {
		f->v[f->n++] = (struct iovec){(void *)a, b - a};
		f->tail_lo = a < f->tail_lo ? a : f->tail_lo;
		f->tail_hi = b > f->tail_hi ? b : f->tail_hi;
		return;
	}
	purge__store_put_back(&q->s, a, b, f->stamp);
	f->spilled++;
}

/* Take [a, b) out of v[j]'s unsent part: trim, empty (length 0: the
 * flusher steps over it) or split (the right part back to the store). */
static void flight_cut(purge_queue *q, size_t j, uintptr_t a, uintptr_t b, struct purge__cut *cut)
{
	struct iovec *e = &q->fl.v[j];
	uintptr_t u0, u1, base = (uintptr_t)e->iov_base;

	flight_unsent(&q->fl, j, &u0, &u1);
	uintptr_t s = a > u0 ? a : u0, t = b < u1 ? b : u1;
	if (s >= t)
		return;
	cut->bytes += t - s;
	if (s > base && t < u1) {
		flight_give_back(q, t, u1);
		cut->split++;
	}
	if (s > base) {
		e->iov_len = s - base;
	} else if (t < u1) {
		e->iov_base = (void *)t;
		e->iov_len = u1 - t;
	} else {
		e->iov_len = 0;
		cut->gone++;
	}
}

/* The first of v[0..ordered) that ends after a (ends ascend). */
static size_t flight_search(const struct purge__flight *f, uintptr_t a)
{
	size_t lo = 0, hi = f->ordered;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)f->v[mid].iov_base + f->v[mid].iov_len <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Visit (count splits, or cut) every unsent range that [a, b) touches;
 * those a failed call touched (before taint) are not taken: they go to
 * the kernel again, and the cancel waits for them. */
static uint32_t flight_each(purge_queue *q, uintptr_t a, uintptr_t b, struct purge__cut *cut)
{
	struct purge__flight *f = &q->fl;
	uint32_t splits = 0;
	size_t from = f->taint > f->next ? f->taint : f->next, j = flight_search(f, a);

	for (j = j > from ? j : from; j < f->ordered && (uintptr_t)f->v[j].iov_base < b; j++)
		cut ? flight_cut(q, j, a, b, cut) : (void)(splits += flight_splits(f, j, a, b));
	if (a >= f->tail_hi || b <= f->tail_lo)
		return splits;
	for (j = f->ordered > from ? f->ordered : from; j < f->n; j++)
		cut ? flight_cut(q, j, a, b, cut) : (void)(splits += flight_splits(f, j, a, b));
	return splits;
}

bool purge__flight_cancel(purge_queue *q, uintptr_t a, uintptr_t b, struct purge__cut *cut)
{
	if (q->fl.n == 0)
		return true;
	if (flight_each(q, a, b, NULL) > q->fl.cap - q->fl.n + purge__store_room(&q->s))
		return false; /* changes nothing: the caller waits for the flush */
	flight_each(q, a, b, cut);
	return true;
}

/* ---- fork ---------------------------------------------------------------- */

void purge__flight_fork_prepare(purge_queue *q)
{
	if (!purge__flight_shared(q) || !q->busy || purge__flight_mine(q))
		return;
	flight_lock(q);
	q->fl.fork = true;
	flight_wake(q);
	flight_wait(q, flight_parked_or_idle, 0);
}

void purge__flight_fork_parent(purge_queue *q)
{
	flight_lock(q);
	q->fl.fork = false;
	flight_wake(q);
}

/* The child's one thread (its waits' mutex and condition are fresh,
 * setup.c): nobody waits, nobody is parked. */
bool purge__flight_fork_child(purge_queue *q)
{
	q->fl.fork = q->fl.parked = false;
	q->fl.waiters = 0;
	return q->busy && !pthread_equal(q->fl.owner, pthread_self());
}
