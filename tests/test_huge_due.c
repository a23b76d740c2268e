/* SPDX-License-Identifier: MIT */
/*
 * PURGE_HUGE on the fake kernel: the event loop that keeps the holds
 * (issue 22 item 8), purge_flush_older and purge_flush_due on held ranges.
 */
#include "huge_fixture.h"

/* ---- issue 22 item 8: an event loop that keeps the holds ---------------- */

#define SEC (1000 * MS)

/* The event loop of docs/allocator.md on a heap of 32 huge frames (64-page frames
 * here): their first halves freed at 0 s, their second halves at 3 s.
 * Each turn ends with the recipe's calls; the loop sleeps until the
 * deadline (or 3 s, when the program frees again).  Returns the wakes
 * that found nothing to do. */
static unsigned run_recipe(purge_queue *q, bool old_recipe, size_t fpages)
{
	const uint64_t t0 = fk.now, age = SEC;
	unsigned empty = 0;

	for (int turn = 0; turn < 20 && fk.now - t0 <= 20 * SEC; turn++) {
		if (turn == 0 || fk.now - t0 == 3 * SEC) /* the program's work */
			for (size_t f = 0; f < 32; f++)
				for (size_t off = 0; off < fpages / 2; off += 4)
					cr_assert_eq(
					    purge_enqueue(
					        q,
					        (void *)(FIXTURE_BASE + (f * fpages + off +
					                                 (turn ? fpages / 2 : 0)) *
					                                    PAGE),
					        4 * PAGE),
					    0);
		uint64_t flushes = stats_of(q).flushes, next;
		if (old_recipe) {
			purge_flush_older(q, age);
			uint64_t oldest = purge_oldest_ns(q);
			next = oldest ? oldest + age : UINT64_MAX;
		} else {
			cr_assert_geq(purge_flush_due(q, age, &next), 0);
		}
		empty += turn > 0 && stats_of(q).flushes == flushes && fk.now - t0 != 3 * SEC;
		if (next == UINT64_MAX && fk.now - t0 > 3 * SEC)
			break;
		cr_assert_gt(next, fk.now, "the deadline is in the future");
		uint64_t work = t0 + 3 * SEC;
		fk.now = fk.now < work && next > work ? work : next;
	}
	return empty;
}

Test(huge, the_event_loop_recipe_splits_nothing)
{
	const size_t fpages = 64;
	fake_set_frame(&fk, fpages * PAGE);
	purge_queue *q = mkhuge(0, 10 * SEC, 0);

	for (size_t f = 0; f < 32; f++)
		fake_set_huge(&fk, FIXTURE_BASE + f * fpages * PAGE, true);
	unsigned empty = run_recipe(q, false, fpages);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(fk.splits, 0, "%u huge pages split", fk.splits);
	cr_assert_eq(fk.whole_frees, 32);
	cr_assert_eq(st.frames_whole, 32);
	cr_assert_eq(st.pending_bytes, 0);
	cr_assert_eq(empty, 0, "%u wakes with nothing to do", empty);
	assert_identity(q);
}

/* What the recipe was: purge_flush_older settles what is held. */
Test(huge, purge_flush_older_settles_what_is_held)
{
	const size_t fpages = 64;
	fake_set_frame(&fk, fpages * PAGE);
	purge_queue *q = mkhuge(0, 10 * SEC, 0);

	for (size_t f = 0; f < 32; f++)
		fake_set_huge(&fk, FIXTURE_BASE + f * fpages * PAGE, true);
	run_recipe(q, true, fpages);
	cr_assert_eq(fk.splits, 32, "as documented: purge_flush_older takes held parts too");
	assert_identity(q);
}

/* A queue that holds only: the deadline is the held ranges' release, and
 * there they go (split: the rest of their frames stayed live). */
Test(huge, flush_due_releases_held_ranges_at_max_delay)
{
	purge_queue *q = mkhuge(0, 5 * SEC, 0);
	uint64_t next, t0 = fk.now;

	all_huge(4);
	free_frame(q, 1, 0, FRAME / 2, 128 * KIB);
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(next, t0 + SEC, "nothing held yet: due at its age");
	fk.now = next;
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(stats_of(q).held_ranges, 8, "held, not settled");
	cr_assert_eq(stats_of(q).purged_bytes, 0);
	cr_assert_eq(next, t0 + 5 * SEC, "due at max_delay_ns");
	uint64_t flushes = stats_of(q).flushes;
	fk.now = next - 1;
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(stats_of(q).flushes, flushes, "nothing due: no flush");
	fk.now = next;
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(next, UINT64_MAX, "nothing pending");
	cr_assert(fake_range_purged(&fk, fr(1), FRAME / 2, 1));
	cr_assert_eq(fk.splits, 1);
	cr_assert_eq(stats_of(q).frames_split, 1);
	assert_identity(q);
}

/* Without max_delay_ns a held range has no release time. */
Test(huge, flush_due_without_max_delay_holds_for_good)
{
	purge_queue *q = mkhuge(0, 0, 0);
	uint64_t next;

	all_huge(4);
	free_frame(q, 1, 0, FRAME / 2, 128 * KIB);
	fk.now += 2 * SEC;
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(next, UINT64_MAX);
	cr_assert_eq(stats_of(q).held_ranges, 8);
	free_frame(q, 5, 0, PAGE, PAGE); /* not huge: due at its age */
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(next, fk.now + SEC);
	cr_assert_eq(purge_flush_due(q, 0, &next), 0, "age 0: everything due");
	cr_assert(fake_range_purged(&fk, fr(5), PAGE, 1));
	cr_assert_eq(next, UINT64_MAX);
	cr_assert_eq(stats_of(q).held_ranges, 8);
	assert_identity(q);
}

/* Without PURGE_HUGE it is purge_flush_older with a deadline. */
Test(huge, flush_due_without_the_flag_is_flush_older)
{
	struct purge_config cfg = {.capacity = 64};
	purge_queue *q = mkq(&cfg);
	uint64_t next = 0, t0 = fk.now;

	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(next, UINT64_MAX, "empty");
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
	fk.now += SEC / 2;
	cr_assert_eq(purge_enqueue(q, (void *)pg(2), PAGE), 0);
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(stats_of(q).flushes, 0);
	cr_assert_eq(next, t0 + SEC, "the first page's age");
	fk.now = next;
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert_eq(fake_purged(&fk, pg(0)), 1);
	cr_assert_eq(fake_purged(&fk, pg(2)), 0);
	cr_assert_eq(next, t0 + SEC / 2 + SEC);
	cr_assert_eq(purge_flush_due(q, SEC, NULL), 0, "next_ns may be NULL");
	cr_assert_eq(purge_flush_due(NULL, SEC, &next), -EINVAL);
	cr_assert_eq(next, UINT64_MAX);
	assert_identity(q);
}

/* Only what has waited age_ns: a younger range stays pending, even in a
 * frame of small pages, where an automatic flush would settle it. */
Test(huge, flush_due_settles_only_what_is_old_enough)
{
	purge_queue *q = mkhuge(0, 0, PURGE_AGES);
	uint64_t next;

	free_frame(q, 1, 0, 4 * PAGE, 2 * PAGE);
	fk.now += SEC;
	free_frame(q, 1, 8 * PAGE, 12 * PAGE, 2 * PAGE);
	free_frame(q, 3, 0, FRAME, 256 * KIB); /* a whole frame, young too */
	cr_assert_eq(purge_flush_due(q, SEC, &next), 0);
	cr_assert(fake_range_purged(&fk, fr(1), 4 * PAGE, 1), "old enough");
	cr_assert(fake_range_purged(&fk, fr(1) + 8 * PAGE, 4 * PAGE, 0), "too young");
	cr_assert(fake_range_purged(&fk, fr(3), FRAME, 0), "too young, whole or not");
	cr_assert_eq(next, fk.now + SEC);
	cr_assert_eq(stats_of(q).held_ranges, 0);
	assert_identity(q);
}
