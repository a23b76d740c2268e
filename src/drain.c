/* SPDX-License-Identifier: MIT */
/*
 * Every decision about what to settle, and when: the thresholds an enqueue
 * crosses (capacity, max_pending_bytes, max_delay_ns), room for an enqueue
 * or for a cancel that splits, the overlap list's limit, and the explicit
 * flushes (all, older than an age, down to a byte count).  Each is one
 * plan run by one bracket, drain_settle(): one flush in the stats, taken
 * from the store round by round, sorted, and handed to flush.c.
 */
#include "compat.h"

#include <limits.h>
#include <string.h>

#include "drain.h"
#include "flight.h"
#include "flush.h"
#include "frames.h"
#include "sort.h"
#include "trace.h"

enum { TAKE_ALL, TAKE_OLDEST, TAKE_OVL };

/* One flush: what it takes, round by round, and when it stops. */
struct drain_plan {
	bool automatic;     /* started inside enqueue or cancel */
	int take;           /* TAKE_* */
	size_t per_round;   /* TAKE_OLDEST: pieces a round at most */
	uint64_t max_stamp; /* TAKE_OLDEST: enqueued no later than this */
	uint64_t keep;      /* TAKE_OLDEST: stop once this many bytes are pending */
	unsigned over;      /* rounds go on while a threshold of these is crossed */
	uint64_t now;       /* coarse, for the age threshold */
	uint32_t room;      /* rounds go on while fewer pieces are free */
	bool holds;         /* PURGE_HUGE: parts of huge frames wait (frames.c) */
	bool counted;       /* a shared queue's "everything": the pieces below */
	uint64_t budget;    /* counted: pieces pending at the start, plus splits since */
	uint64_t splits;    /* counted: the store's splits at the start */
	uint64_t spilled;   /* counted: the flight's parts given back at the start */
};

/* Held pieces stamped no later than this are past their hold
 * (max_delay_ns) and, for this plan, due (0: none). */
static uint64_t drain_old_until(const purge_queue *q, const struct drain_plan *p)
{
	uint64_t until =
	    q->set.max_delay_ns && p->now > q->set.max_delay_ns ? p->now - q->set.max_delay_ns : 0;

	return until < p->max_stamp ? until : p->max_stamp;
}

/* Has a frame plan anything left to look at: a new piece due, or a held
 * one past its hold? */
static bool drain_candidates(const purge_queue *q, const struct drain_plan *p)
{
	const struct purge__store *s = &q->s;
	uint32_t id = purge__store_first_new(s);
	uint64_t old = drain_old_until(q, p), oldest = purge__store_oldest(s);

	if (id != PURGE_STORE_NONE &&
	    (!purge__store_aged(s) || purge__store_stamp_of(s, id) <= p->max_stamp))
		return true;
	return old && oldest && oldest <= old;
}

/* A counted plan: pieces it may still take (modulo 2^64, never below 0:
 * a round takes no more). */
static uint64_t drain_left(const purge_queue *q, const struct drain_plan *p)
{
	return p->budget + (purge__store_splits(&q->s) - p->splits) + (q->fl.spilled - p->spilled);
}

/* Another round of the same flush? */
static bool drain_more(const purge_queue *q, const struct drain_plan *p)
{
	if (purge__store_live(&q->s) == 0)
		return false;
	if (p->holds && !drain_candidates(q, p))
		return false;
	if (p->holds && p->take == TAKE_ALL)
		return true;
	switch (p->take) {
	case TAKE_OVL:
		return purge__store_overlapping(&q->s) > 0;
	case TAKE_OLDEST:
		if (p->counted)
			return drain_left(q, p) > 0;
		if (p->over)
			return purge__drain_over(q, p->now) & p->over;
		if (p->room)
			return purge__store_room(&q->s) < p->room;
		return q->st.pending_bytes > p->keep && purge__store_oldest(&q->s) <= p->max_stamp;
	default:
		return false;
	}
}

/* A round of the frame plan; one that can take nothing though pieces
 * wait (a frame's parts fill the selection, or splits lack room) takes
 * the oldest instead, so that every round settles something.  As a cancel
 * does, it first settles the ranges enqueued over pending bytes when more
 * than PURGE_OVL_MAX are (each costs the plan a look at every frame). */
static bool drain_take_frames(purge_queue *q, const struct drain_plan *p, uint64_t over,
                              struct purge__take *t)
{
	const struct purge__frames_plan fp = {
	    .max_pieces = p->take == TAKE_ALL ? SIZE_MAX : p->per_round,
	    .max_bytes = p->keep ? over : UINT64_MAX,
	    .old_until = drain_old_until(q, p),
	    .max_stamp = p->max_stamp,
	};
	uint32_t fresh = purge__store_first_new(&q->s);

	purge__store_link(&q->s);
	if (purge__store_overlapping(&q->s) > PURGE_OVL_MAX) {
		purge__store_take_ovl(&q->s, t);
		return t->n != 0;
	}
	purge__frames_take(q, &fp, t);
	if (t->n == 0 && purge__store_live(&q->s) && purge__store_fresh(&q->s) == fresh &&
	    drain_candidates(q, p))
		purge__store_take_oldest(&q->s, q->set.batch, p->max_stamp, over, true, t);
	/* a round that held all it saw made progress too */
	return t->n || purge__store_fresh(&q->s) != fresh;
}

/* How many pieces a round of the oldest may take. */
static size_t drain_per_round(const purge_queue *q, const struct drain_plan *p)
{
	if (!p->counted)
		return p->per_round;
	uint64_t left = drain_left(q, p);
	return left < p->per_round ? (size_t)left : p->per_round;
}

/* One round's take; false when it made no progress. */
static bool drain_take(purge_queue *q, const struct drain_plan *p, struct purge__take *t)
{
	uint64_t over = q->st.pending_bytes > p->keep ? q->st.pending_bytes - p->keep : 0;

	if (p->holds)
		return drain_take_frames(q, p, over, t);
	if (p->take == TAKE_ALL)
		purge__store_take_all(&q->s, t);
	else if (p->take == TAKE_OVL)
		purge__store_take_ovl(&q->s, t);
	else
		purge__store_take_oldest(&q->s, drain_per_round(q, p), p->max_stamp, over,
		                         !(q->set.flags & PURGE_NO_COALESCE), t);
	return t->n != 0;
}

/* In address order, none overlapping the one before: the common case of
 * an allocator that frees in address order, settled without a sort. */
static bool drain_ordered(const struct iovec *a, size_t n)
{
	uintptr_t end = 0;

	for (size_t i = 0; i < n; i++) {
		if ((uintptr_t)a[i].iov_base < end)
			return false;
		end = (uintptr_t)a[i].iov_base + a[i].iov_len;
	}
	return true;
}

/* One round: sorted (PURGE_NO_COALESCE: as taken), then settled; a
 * shared queue's from the flight array, so that other threads can use
 * the store while it is in the kernel. */
static uint64_t drain_round(purge_queue *q, struct purge__take *t, uint64_t stamp)
{
	size_t ordered = t->sorted ? SIZE_MAX : t->n; /* none of v[0..ordered) overlaps */
	struct iovec *v = t->v;

	if (!(q->set.flags & PURGE_NO_COALESCE) && !t->sorted && !drain_ordered(t->v, t->n)) {
		purge__sort_iov(t->v, t->tmp, t->n);
		/* each settled, and booked, alone */
		ordered = purge__sort_overlaps_last(t->v, t->tmp, t->n);
	}
	if (q->frame && !t->counted) /* a frame plan counts its own */
		purge__frames_tally(q, t->v, ordered, t->n);
	if (purge__flight_shared(q))
		v = purge__flight_load(q, t->v, t->n, stamp);
	PURGE_TRACE3(flush_start, q, t->n, q->st.pending_bytes);
	struct purge__flush_out out = purge__flush_run(q, v, t->n);
	PURGE_TRACE5(flush_done, q, t->n, out.bytes, out.calls, out.reports);
	purge__flight_unload(q);
	return out.reports;
}

/* Another thread flushes a shared queue: an automatic plan is left to it
 * (it checks the thresholds again when it ends); any other waits for it
 * to end.  True when this plan has nothing left to do. */
static bool drain_defer(purge_queue *q, const struct drain_plan *p)
{
	if (!q->busy)
		return false;
	if (p->automatic && !p->room) {
		q->fl.want = true;
		return true;
	}
	purge__flight_wait_idle(q);
	return p->room && purge__store_room(&q->s) >= p->room;
}

/* A shared queue's plan in short rounds: a round is taken out, sorted
 * and loaded under the lock, so that a round of the whole store would
 * hold the lock O(n) (20 ms for 131,072 pieces here) however short the
 * calls are.  Rounds of the oldest, DRAIN_SHARED_ROUND calls' worth at
 * most, keep each hold near one call's.  "Everything" becomes as many
 * pieces as were pending at the start, plus those a cancel splits off
 * meanwhile (a split part follows its piece in age order), so that other
 * threads' enqueues cannot keep the flush going; a piece cancelled
 * meanwhile lets it take as many of the newest.  Neighbours in different
 * rounds are not joined.  A frame plan keeps its rounds (it sees whole
 * frames). */
#define DRAIN_SHARED_ROUND 4
static struct drain_plan drain_shared(const purge_queue *q, const struct drain_plan *p)
{
	struct drain_plan sp = *p;
	size_t most = (size_t)q->set.batch * DRAIN_SHARED_ROUND;

	if (p->holds || !purge__flight_shared(q))
		return sp;
	if (sp.take == TAKE_ALL) {
		sp = (struct drain_plan){.automatic = p->automatic,
		                         .take = TAKE_OLDEST,
		                         .per_round = most,
		                         .max_stamp = UINT64_MAX,
		                         .counted = true,
		                         .budget = purge__store_live(&q->s),
		                         .splits = purge__store_splits(&q->s),
		                         .spilled = q->fl.spilled};
	}
	if (sp.take == TAKE_OLDEST && sp.per_round > most)
		sp.per_round = most;
	return sp;
}

/* The bracket every flush goes through. */
static int drain_settle(purge_queue *q, const struct drain_plan *plan)
{
	uint64_t reports = 0;
	struct purge__take t;

	if (drain_defer(q, plan) || purge__store_live(&q->s) == 0)
		return 0;
	struct drain_plan sp = drain_shared(q, plan), *p = &sp;
	uint64_t t0 = purge__books_flush_begin(q, p->automatic);
	purge__flight_begin(q, t0);
	for (bool progress = true; progress;) {
		uint64_t oldest = purge__store_oldest(&q->s); /* no younger than the round */
		progress = drain_take(q, p, &t);
		sp.budget -= sp.counted ? t.n : 0;
		reports += t.n ? drain_round(q, &t, oldest) : 0;
		progress = progress && drain_more(q, p);
	}
	purge__books_flush_end(q, t0);
	purge__flight_end(q);
	return reports > INT_MAX ? INT_MAX : (int)reports;
}

/* ---- the plans ----------------------------------------------------------- */

int purge__drain_all(purge_queue *q)
{
	const struct drain_plan p = {.take = TAKE_ALL};

	return drain_settle(q, &p);
}

int purge__drain_older(purge_queue *q, uint64_t age_ns)
{
	if (age_ns == 0)
		return purge__drain_all(q);
	purge__store_age(&q->s);
	/* stamps come from the coarse clock, never ahead of this one: a range
	 * may pass for up to two ticks older than it is, never younger */
	uint64_t now = purge__now(q, false), oldest = purge__store_oldest(&q->s);
	if (oldest == 0 || now < age_ns || oldest > now - age_ns)
		return 0;
	const struct drain_plan p = {
	    .take = TAKE_OLDEST, .per_round = SIZE_MAX, .max_stamp = now - age_ns};
	return drain_settle(q, &p);
}

int purge__drain_to(purge_queue *q, size_t keep_bytes)
{
	const struct drain_plan p = {.take = TAKE_OLDEST,
	                             .per_round = SIZE_MAX,
	                             .max_stamp = UINT64_MAX,
	                             .keep = keep_bytes,
	                             .now =
	                                 q->frame && q->set.max_delay_ns ? purge__now(q, true) : 0,
	                             .holds = q->frame != 0};

	if (q->st.pending_bytes <= keep_bytes)
		return 0;
	return drain_settle(q, &p);
}

/* a + b, or UINT64_MAX when that does not fit */
static uint64_t drain_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* When purge_flush_due has something to settle next: the first piece not
 * held, age_ns after its stamp; the oldest piece, when held, once also
 * past its hold (never without max_delay_ns).  UINT64_MAX: never.  Every
 * piece before fresh is held (store.h), and pieces held from fresh on are
 * few, so this is O(1) but for them. */
static uint64_t drain_next_due(const purge_queue *q, uint64_t age_ns)
{
	const struct purge__store *s = &q->s;
	uint64_t next = UINT64_MAX, hold;

	if (purge__store_live(s) == 0)
		return next;
	uint32_t id = purge__store_first_unheld(s, purge__store_first_new(s));
	if (id != PURGE_STORE_NONE)
		next = drain_add(purge__store_stamp_of(s, id), age_ns);
	if (purge__store_held(s) && q->set.max_delay_ns) {
		hold = q->set.max_delay_ns > age_ns ? q->set.max_delay_ns : age_ns;
		hold = drain_add(purge__store_stamp_of(s, purge__store_first(s)), hold);
		next = hold < next ? hold : next;
	}
	return next;
}

int purge__drain_due(purge_queue *q, uint64_t age_ns, uint64_t *next_ns)
{
	int ret = 0;

	purge__store_age(&q->s);
	/* the stamps' coarse clock is never ahead of this one: a range may
	 * pass for up to two ticks older than it is, never younger */
	uint64_t now = purge__now(q, false);
	if (drain_next_due(q, age_ns) <= now) {
		const struct drain_plan p = {.take = TAKE_OLDEST,
		                             .per_round = SIZE_MAX,
		                             .max_stamp = now - age_ns,
		                             .now = now,
		                             .holds = q->frame != 0};
		ret = drain_settle(q, &p);
	}
	if (next_ns)
		*next_ns = drain_next_due(q, age_ns);
	return ret;
}

uint64_t purge__drain_oldest(purge_queue *q)
{
	purge__store_age(&q->s);
	return purge__store_oldest(&q->s);
}

/* Rounds of the oldest `batch` pieces until `need` pieces have room again (after
 * another thread's flush, when one runs). */
void purge__drain_room(purge_queue *q, uint32_t need)
{
	const struct drain_plan p = {.automatic = true,
	                             .take = TAKE_OLDEST,
	                             .per_round = q->set.batch,
	                             .max_stamp = UINT64_MAX,
	                             .room = need};

	if (purge__store_room(&q->s) < need)
		drain_settle(q, &p);
}

/* A threshold was crossed: the whole queue, or rounds of the oldest
 * `batch` while any threshold of c is still crossed. */
void purge__drain_auto(purge_queue *q, unsigned c, uint64_t now)
{
	const struct drain_plan all = {.automatic = true,
	                               .take = TAKE_ALL,
	                               .max_stamp = UINT64_MAX,
	                               .now = now,
	                               .holds = q->frame != 0};
	/* a frame plan cuts ranges at frame boundaries: its parts may fill the
	 * queue, so its rounds go on while any threshold is crossed */
	const struct drain_plan rounds = {.automatic = true,
	                                  .take = TAKE_OLDEST,
	                                  .per_round = q->set.batch,
	                                  .max_stamp = UINT64_MAX,
	                                  .over = c | (q->frame ? PURGE_OVER_COUNT : 0),
	                                  .now = now,
	                                  .holds = q->frame != 0};

	drain_settle(q, (q->set.flags & PURGE_INCREMENTAL) ? &rounds : &all);
}

/* More than PURGE_OVL_MAX pieces overlap others: settle those. */
static void drain_ovl(purge_queue *q)
{
	const struct drain_plan p = {.automatic = true, .take = TAKE_OVL};

	if (purge__store_overlapping(&q->s) > PURGE_OVL_MAX)
		drain_settle(q, &p);
}

/* The store's part of a cancel: the pending bytes it removed. */
static size_t drain_cancel_store(purge_queue *q, uintptr_t start, uintptr_t end)
{
	struct purge__cut cut;

	/* settles the oldest: some of them may be the ranges to split */
	for (uint32_t need; (need = purge__store_cancel(&q->s, start, end, &cut)) != 0;)
		purge__drain_room(q, need);
	purge__books_cancelled(q, &cut);
	return cut.bytes;
}

/* The part of another thread's round in flight that no call has taken:
 * false when a split finds no room (nothing changed). */
static bool drain_cancel_flight(purge_queue *q, uintptr_t start, uintptr_t end, size_t *bytes)
{
	struct purge__cut cut = {0};
	bool ok = purge__flight_cancel(q, start, end, &cut);

	purge__books_cancelled(q, &cut);
	*bytes += cut.bytes;
	return ok;
}

/* A cancel while another thread flushes: what no call has taken comes
 * out; what the call in the kernel covers is waited for (that plan only),
 * then what it left comes out too.  When a split finds the store full,
 * the flush is waited for: its bytes are then purged, not pending. */
static size_t drain_cancel_shared(purge_queue *q, uintptr_t start, uintptr_t end)
{
	size_t bytes = 0;
	bool ok = drain_cancel_flight(q, start, end, &bytes);

	if (ok && purge__flight_touches(q, start, end)) {
		purge__flight_wait_zone(q);
		ok = drain_cancel_flight(q, start, end, &bytes);
		purge__flight_waited(q);
	}
	/* ranges a failed call touched are never taken (their pages may be
	 * freed in part): they go to the kernel again, and are waited for */
	while (ok && purge__flight_unbooked(q, start, end)) {
		purge__flight_wait_booked(q);
		ok = drain_cancel_flight(q, start, end, &bytes);
	}
	if (!ok)
		purge__flight_wait_idle(q);
	return bytes;
}

int purge__drain_cancel(purge_queue *q, uintptr_t start, uintptr_t end)
{
	size_t bytes = drain_cancel_store(q, start, end);

	if (q->busy && q->fl.n)
		bytes += drain_cancel_shared(q, start, end);
	PURGE_TRACE4(cancel, q, start, end - start, bytes);
	drain_ovl(q);
	return bytes != 0;
}

/* Thresholds other threads crossed while this one flushed. */
void purge__drain_wanted(purge_queue *q)
{
	while (q->fl.want && !q->busy) {
		q->fl.want = false;
		uint64_t now = purge__now(q, true);
		unsigned c = purge__drain_over(q, now);
		if (c)
			purge__drain_auto(q, c, now);
		drain_ovl(q);
	}
}

/* A fork child whose parent was flushing in another thread: the child
 * settles the rest of that round alone (its books and pages are the
 * child's own), so that it never keeps a half-settled queue. */
void purge__drain_fork_child(purge_queue *q)
{
	struct purge__flight *f = &q->fl;

	if (!purge__flight_fork_child(q))
		return;
	f->alone = true;
	if (f->next < f->n && f->next_off && f->next_off >= f->v[f->next].iov_len) {
		purge__books_purged(q, 0, 1); /* its last bytes were settled */
		f->next++;
	} else if (f->next < f->n) {
		f->v[f->next].iov_base = (char *)f->v[f->next].iov_base + f->next_off;
		f->v[f->next].iov_len -= f->next_off;
	}
	if (f->next < f->n)
		purge__flush_run(q, f->v + f->next, f->n - f->next);
	purge__flight_unload(q);
	purge__books_flush_end(q, f->t0);
	q->busy = false;
	f->alone = false;
}
