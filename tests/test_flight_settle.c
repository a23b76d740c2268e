/* SPDX-License-Identifier: MIT */
/*
 * What a shared queue's flush settles when other threads cancel during it
 * (issue 35): every part a cancel splits off, even past the flight's spare
 * slots, with its range's age; and a cancel that waited for a call that
 * failed never answers 1 ("kept their bytes") for pages that call may have
 * freed.  Thread B runs inside A's system calls (the fake kernel's in_call
 * hook, where A holds no lock), so every interleaving here is forced, not
 * hoped for.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#define FIXTURE_BASE   ((uintptr_t)0x100000000000ull)
#define FIXTURE_NPAGES 256
#include "fixture.h"

TestSuite(flight_settle, .init = setup, .fini = teardown);

static atomic_int calls_seen;

/* ---- split parts past the spare slots ------------------------------------ */

/* A range of SPLIT_PAGES pages, one call of one page at a time; during the
 * first call B cancels one page in every other from the top down, each
 * cancel splitting what is left of the range no call took: the first
 * parts fill the flight's spare slots, the last SPILL go back to the
 * store (few: the store stays under capacity, so that no threshold
 * settles them behind the flush's back). */
#define SPLIT_PAGES 200
#define SPILL       3

struct splitter {
	purge_queue *q;
	unsigned cancels; /* done by B */
	unsigned spilled; /* parts the flight gave back to the store */
	uintptr_t late;   /* B enqueues this page after its cancels (0: none) */
	unsigned base;    /* ranges the round left in the store */
};

static struct splitter sp;

static uintptr_t split_page(unsigned k)
{
	return pg(SPLIT_PAGES - 2 - 2 * (size_t)k);
}

static void *split_main(void *arg)
{
	struct splitter *s = arg;

	pthread_mutex_lock(&s->q->lock);
	/* every split takes a spare slot or a free piece: no cancel waits */
	unsigned spare = (unsigned)(s->q->fl.cap - s->q->fl.n), n = spare + SPILL;
	cr_assert_leq(SPILL + 1, purge__store_room(&s->q->s));
	cr_assert_eq(purge__store_live(&s->q->s), s->base, "the round took the range");
	pthread_mutex_unlock(&s->q->lock);
	cr_assert_lt(2 * n + 2, SPLIT_PAGES, "the range is too short for the pool");
	for (unsigned k = 0; k < n; k++, s->cancels++)
		cr_assert_eq(purge_cancel(s->q, (void *)split_page(k), PAGE), 1, "cancel %u", k);
	pthread_mutex_lock(&s->q->lock);
	s->spilled = purge__store_live(&s->q->s) - s->base; /* past the spare slots */
	pthread_mutex_unlock(&s->q->lock);
	if (s->late)
		cr_assert_eq(purge_enqueue(s->q, (void *)s->late, PAGE), 0);
	return NULL;
}

static void split_in_first_call(void *arg)
{
	pthread_t t;

	if (atomic_fetch_add(&calls_seen, 1) != 0)
		return;
	cr_assert_eq(pthread_create(&t, NULL, split_main, arg), 0);
	pthread_join(t, NULL);
}

static purge_queue *split_queue(void)
{
	struct purge_config cfg = {
	    .batch = 1, .capacity = 16, .flags = PURGE_LOCKED, .max_call_bytes = PAGE};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), SPLIT_PAGES * PAGE), 0);
	sp = (struct splitter){.q = q};
	atomic_store(&calls_seen, 0);
	fk.in_call = split_in_first_call;
	fk.in_call_arg = &sp;
	return q;
}

/* Every page of the range purged once but the cancelled ones, never. */
static void assert_split_settled(void)
{
	cr_assert_eq(sp.spilled, SPILL, "%u parts went past the spare slots", sp.spilled);
	for (size_t i = 0; i < SPLIT_PAGES; i++) {
		bool cancelled = false;
		for (unsigned k = 0; k < sp.cancels; k++)
			cancelled = cancelled || split_page(k) == pg(i);
		cr_assert_eq(fake_purged(&fk, pg(i)), cancelled ? 0 : 1, "page %zu (%s)", i,
		             cancelled ? "cancelled" : "enqueued");
	}
}

Test(flight_settle, a_flush_settles_parts_split_past_the_spare_slots)
{
	purge_queue *q = split_queue();
	struct purge_stats st;

	sp.late = pg(250); /* enqueued after the flush began: may wait */
	cr_assert_eq(purge_flush(q), 0);
	fk.in_call = NULL;
	purge_get_stats(q, &st);
	assert_split_settled();
	cr_assert_eq(st.pending_ranges, 1, "%lu ranges pending, only the late one may be",
	             (unsigned long)st.pending_ranges);
	cr_assert_eq(st.pending_bytes, PAGE);
	cr_assert_eq(fake_purged(&fk, pg(250)), 0, "the late page was taken before a split part");
	assert_identity(q);
}

Test(flight_settle, destroy_leaves_nothing_pending_after_such_splits)
{
	purge_queue *q = split_queue();

	cr_assert_eq(purge_queue_destroy(q), 0);
	fk.in_call = NULL;
	assert_split_settled();
}

/* The parts keep their range's age: a flush of what is older than an age
 * takes them too, and leaves a range enqueued later. */
Test(flight_settle, split_parts_keep_their_ranges_age)
{
	purge_queue *q = split_queue();
	struct purge_stats st;

	cr_assert_eq(purge_oldest_ns(q) != 0, true);
	fk.now += 10 * 1000 * 1000; /* 10 ms later */
	cr_assert_eq(purge_enqueue(q, (void *)pg(250), PAGE), 0);
	sp.base = 1;
	cr_assert_eq(purge_flush_older(q, 5 * 1000 * 1000), 0);
	fk.in_call = NULL;
	purge_get_stats(q, &st);
	assert_split_settled();
	cr_assert_eq(st.pending_ranges, 1, "%lu ranges pending: split parts looked young",
	             (unsigned long)st.pending_ranges);
	cr_assert_eq(fake_purged(&fk, pg(250)), 0, "the young range was purged");
	assert_identity(q);
}

/* ---- a cancel that waited for a call that failed ------------------------- */

/* B cancels one page while A's first call is in the kernel. */
struct waiter {
	purge_queue *q;
	uintptr_t addr;
	pthread_t t;
	atomic_int done;
	int ret;
	unsigned purged; /* times the page was purged when the cancel returned */
};

static struct waiter wt;

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = purge_cancel(w->q, (void *)w->addr, PAGE);
	w->purged = fake_purged(&fk, w->addr);
	atomic_store(&w->done, 1);
	return NULL;
}

/* Spins (yielding) until B waits on the call in the kernel; bounded, never
 * a time check. */
static bool waiter_parked(struct waiter *w)
{
	for (long i = 0; i < 2000000; i++) {
		pthread_mutex_lock(&w->q->fl.m);
		bool parked = w->q->fl.waiters > 0;
		pthread_mutex_unlock(&w->q->fl.m);
		if (parked)
			return true;
		sched_yield();
	}
	return false;
}

/* The first call starts B and returns once B waits on it.  A later call
 * first lets B return if B can (a bounded wait): a call that comes after
 * B's cancel returned must not purge B's page. */
static void cancel_in_first_call(void *arg)
{
	struct waiter *w = arg;

	if (atomic_fetch_add(&calls_seen, 1) != 0) {
		for (int i = 0; i < 20000 && !atomic_load(&w->done); i++)
			sched_yield();
		return;
	}
	cr_assert_eq(pthread_create(&w->t, NULL, waiter_main, w), 0);
	cr_assert(waiter_parked(w), "the cancel did not wait for the call in the kernel");
}

/* Two touching ranges go as one merged iovec; a hole in the first fails
 * the call, but the kernel has advised every other page of it (as
 * madvise does around a hole), the second range's too.  A cancel of a
 * page of the second range that waited for that call answers 0: its
 * page may be zero. */
Test(flight_settle, a_cancel_that_waited_for_a_failed_call_never_answers_kept)
{
	struct purge_config cfg = {.batch = 2, .capacity = 16, .flags = PURGE_LOCKED};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 4 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(4), 4 * PAGE), 0);
	fake_fail_page(&fk, pg(1), -ENOMEM);
	wt = (struct waiter){.q = q, .addr = pg(6)};
	atomic_store(&calls_seen, 0);
	fk.in_call = cancel_in_first_call;
	fk.in_call_arg = &wt;
	cr_assert_eq(purge_flush(q), 1, "the range with the hole is reported");
	pthread_join(wt.t, NULL);
	fk.in_call = NULL;
	cr_assert_geq(fake_purged(&fk, pg(6)), 1, "the failed call advised the page");
	cr_assert_eq(wt.ret, 0, "cancel answered %d for a page a failed call freed", wt.ret);
	cr_assert_eq(fake_purged(&fk, pg(6)), wt.purged, "the page was purged after its cancel");
	assert_identity(q);
}
