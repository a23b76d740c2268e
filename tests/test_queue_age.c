/* SPDX-License-Identifier: MIT */
/*
 * The queue's ages: partial flushes oldest first (purge_flush_older,
 * purge_flush_to), PURGE_INCREMENTAL, the age of split parts, and the
 * clock reads ages cost.  On the fake kernel and its clock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define FIXTURE_BASE   ((uintptr_t)0x200000000000ull)
#define FIXTURE_NPAGES 8192
#include "fixture.h"

TestSuite(queue, .init = setup, .fini = teardown);

/* ---- age: partial flushes, oldest first ---------------------------------- */

#define MS (1000 * 1000ull)

/* Ranges 0..n-1 at pages 10*i, 2 pages each, enqueued 100 ms apart. */
/* n ranges of 2 pages, 100 ms apart, in a queue that keeps ages */
static purge_queue *aged(struct purge_config *cfg, size_t n)
{
	struct purge_config def = {0};
	cfg = cfg ? cfg : &def;
	cfg->flags |= PURGE_AGES;
	purge_queue *q = mkq(cfg);

	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(purge_enqueue(q, (void *)pg(10 * i), 2 * PAGE), 0);
		fk.now += 100 * MS;
	}
	return q;
}

static bool settled(size_t i)
{
	return fake_range_purged(&fk, pg(10 * i), 2 * PAGE, 1);
}

Test(queue, flush_older_settles_exactly_the_old_ranges)
{
	uint64_t t0 = fk.now;
	purge_queue *q = aged(NULL, 5); /* stamps t0 .. t0 + 400 ms; now t0 + 500 ms */

	cr_assert_eq(purge_oldest_ns(q), t0);
	cr_assert_eq(purge_flush_older(q, 300 * MS), 0);
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(settled(i), i <= 2, "range %zu (age %zu ms)", i, 500 - 100 * i);
	cr_assert_eq(purge_oldest_ns(q), t0 + 300 * MS);
	cr_assert_eq(stats_of(q).flushes, 1);
	cr_assert_eq(purge_flush_older(q, 300 * MS), 0, "nothing that old is left");
	cr_assert_eq(stats_of(q).flushes, 1, "an empty selection is no flush");
	cr_assert_eq(purge_flush_older(q, fk.now + 1), 0, "older than the clock");
	cr_assert_eq(purge_flush_older(q, 0), 0, "0: everything");
	cr_assert(settled(3) && settled(4));
	cr_assert_eq(purge_oldest_ns(q), 0);
	assert_identity(q);
}

Test(queue, flush_to_keeps_the_youngest_bytes)
{
	purge_queue *q = aged(NULL, 5); /* 10 pages pending */

	cr_assert_eq(purge_flush_to(q, 5 * PAGE), 0);
	cr_assert_eq(stats_of(q).pending_bytes, 4 * PAGE, "oldest first until <= 5 pages");
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(settled(i), i <= 2, "range %zu", i);
	cr_assert_eq(purge_flush_to(q, 4 * PAGE), 0);
	cr_assert_eq(stats_of(q).flushes, 1, "already at the limit: no flush");
	cr_assert_eq(purge_flush_to(q, 0), 0);
	cr_assert_eq(stats_of(q).pending_bytes, 0);
	assert_identity(q);
}

/* A range's age is its oldest enqueued part's: the part a cancel splits
 * off keeps it, and of equal ages the split part goes last. */
Test(queue, split_parts_keep_their_age)
{
	struct purge_config cfg = {.flags = PURGE_AGES};
	purge_queue *q = mkq(&cfg);
	uint64_t t0 = fk.now;

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 10 * PAGE), 0);
	fk.now += 100 * MS;
	cr_assert_eq(purge_enqueue(q, (void *)pg(20), PAGE), 0);
	fk.now += 100 * MS;
	cr_assert_eq(purge_cancel(q, (void *)pg(4), 2 * PAGE), 1);
	cr_assert_eq(stats_of(q).pending_ranges, 3);
	cr_assert_eq(purge_oldest_ns(q), t0);
	cr_assert_eq(purge_flush_to(q, 5 * PAGE), 0, "[0,4) alone leaves 5 pages");
	cr_assert(fake_range_purged(&fk, pg(0), 4 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(6), 4 * PAGE, 0), "the split part goes after");
	cr_assert_eq(purge_oldest_ns(q), t0, "the split part is as old");
	cr_assert_eq(purge_flush_older(q, 150 * MS), 0);
	cr_assert(fake_range_purged(&fk, pg(6), 4 * PAGE, 1));
	cr_assert_eq(fake_purged(&fk, pg(20)), 0);
	cr_assert(fake_range_purged(&fk, pg(4), 2 * PAGE, 0));
	assert_identity(q);
}

/* PURGE_INCREMENTAL: the enqueue that fills the queue settles the oldest
 * `batch` ranges, one call, not the queue. */
Test(queue, incremental_settles_the_oldest_batch)
{
	struct purge_config cfg = {.capacity = 8, .batch = 3, .flags = PURGE_INCREMENTAL};
	purge_queue *q = aged(&cfg, 8);
	struct purge_stats st = stats_of(q);

	cr_assert_eq(st.auto_flushes, 1);
	cr_assert_eq(st.pending_ranges, 5);
	cr_assert_eq(fk.pmadv_calls, 1, "one call");
	for (size_t i = 0; i < 8; i++)
		cr_assert_eq(settled(i), i < 3, "range %zu", i);
	assert_identity(q);
	/* without the flag: the whole queue */
	teardown();
	setup();
	struct purge_config whole = {.capacity = 8, .batch = 3};
	q = aged(&whole, 8);
	cr_assert_eq(stats_of(q).pending_ranges, 0);
	cr_assert_eq(fk.pmadv_calls, 3);
}

/* ... until it is back under every threshold it crossed: bytes here, so
 * several rounds. */
Test(queue, incremental_rounds_until_under_the_bytes)
{
	struct purge_config cfg = {
	    .batch = 1, .max_pending_bytes = 6 * PAGE, .flags = PURGE_INCREMENTAL};
	purge_queue *q = aged(&cfg, 3); /* 6 pages: at the limit */

	cr_assert_eq(stats_of(q).auto_flushes, 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(100), 5 * PAGE), 0); /* 11 pages */
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.auto_flushes, 1, "one flush, in rounds");
	cr_assert_eq(fk.pmadv_calls, 3, "three oldest ranges, a call each: 11 -> 5 pages");
	cr_assert_eq(st.pending_bytes, 5 * PAGE);
	cr_assert_eq(fake_purged(&fk, pg(100)), 0, "the new range is not the oldest");
	assert_identity(q);
}

Test(queue, incremental_settles_what_aged)
{
	struct purge_config cfg = {
	    .batch = 2, .max_delay_ns = 250 * MS, .flags = PURGE_INCREMENTAL};
	purge_queue *q = aged(&cfg, 3); /* ages 300, 200, 100 ms: range 0 is due */

	cr_assert_eq(stats_of(q).auto_flushes, 0, "checked on enqueue only");
	cr_assert_eq(purge_enqueue(q, (void *)pg(100), PAGE), 0);
	cr_assert(settled(0) && settled(1), "one round of 2: the oldest");
	cr_assert(!settled(2), "100 ms old: under the threshold, kept");
	cr_assert_eq(fake_purged(&fk, pg(100)), 0);
	cr_assert_eq(stats_of(q).pending_ranges, 2);
}

/* Equal ages settle in enqueue order. */
Test(queue, equal_ages_settle_in_enqueue_order)
{
	purge_queue *q = mkq(NULL);

	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(100 - 10 * i), PAGE), 0);
	cr_assert_eq(purge_flush_to(q, 3 * PAGE), 0);
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(fake_purged(&fk, pg(100 - 10 * i)), i < 3, "range %zu", i);
}

/* A queue pays for ages only once it uses them: no clock read on enqueue
 * but the first into an empty store; ranges enqueued before the first
 * purge_oldest_ns() count as enqueued when the store last became
 * non-empty (never younger than they are), later ones have their own. */
Test(queue, ages_cost_nothing_until_asked_for)
{
	purge_queue *q = mkq(NULL);
	uint64_t t0 = fk.now;

	unsigned reads = fk.now_calls;
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
		fk.now += 100 * MS;
	}
	cr_assert_eq(fk.now_calls - reads, 1, "one read: the store became non-empty");
	cr_assert_eq(purge_flush(q), 0); /* empty again; non-empty from t0 + 400 ms on */
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
		fk.now += 100 * MS;
	}
	t0 += 400 * MS;
	cr_assert_eq(purge_oldest_ns(q), t0, "the epoch is when the store last became non-empty");
	cr_assert_eq(purge_enqueue(q, (void *)pg(20), PAGE), 0); /* at t0 + 400 ms, stamped */
	fk.now += 100 * MS;
	cr_assert_eq(purge_flush_older(q, 150 * MS), 0);
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 2, "range %zu counts from t0", i);
	cr_assert_eq(fake_purged(&fk, pg(20)), 0, "stamped at t0 + 400 ms: 100 ms old");
	cr_assert_eq(purge_oldest_ns(q), t0 + 400 * MS);
	assert_identity(q);
}

/* A part split off a range keeps the range's place in the age order, in
 * address order, before ranges enqueued after it even when the clock did
 * not move in between. */
Test(queue, split_parts_keep_their_range_place)
{
	struct purge_config cfg = {.flags = PURGE_AGES};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 10 * PAGE), 0); /* A */
	cr_assert_eq(purge_enqueue(q, (void *)pg(20), PAGE), 0);     /* B, same time */
	cr_assert_eq(purge_enqueue(q, (void *)pg(30), PAGE), 0);     /* C */
	cr_assert_eq(purge_cancel(q, (void *)pg(4), 2 * PAGE), 1);   /* A: [0,4) [6,10) */
	cr_assert_eq(purge_flush_to(q, 2 * PAGE), 0);
	cr_assert(fake_range_purged(&fk, pg(0), 4 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(6), 4 * PAGE, 1), "A's second part before B");
	cr_assert_eq(fake_purged(&fk, pg(20)) + fake_purged(&fk, pg(30)), 0);
	assert_identity(q);
}
