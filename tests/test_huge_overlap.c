/* SPDX-License-Identifier: MIT */
/*
 * PURGE_HUGE on the fake kernel: ranges enqueued over pending bytes
 * (issue 22 item 9), a refused call, and the room and rounds of ranges a
 * flush cuts.
 */
#include "huge_fixture.h"

/* ---- issue 22 item 9: ranges enqueued over pending bytes ---------------- */

/* The overlap list is built when the store is indexed: a cancel between
 * pending ranges (nothing of it pending) does it. */
static void index_now(purge_queue *q, uintptr_t gap)
{
	cr_assert_eq(purge_cancel(q, (void *)gap, PAGE), 0);
}

/* A frame wholly pending, part of it only through a range enqueued over
 * another: it is whole, and goes whole. */
Test(huge, a_frame_whole_through_an_overlapping_range_goes_whole)
{
	purge_queue *q = mkhuge(0, 0, 0);

	all_huge(4);
	free_frame(q, 1, 0, FRAME / 2, FRAME / 2);             /* A */
	free_frame(q, 1, FRAME / 4, 3 * FRAME / 4, FRAME / 2); /* B, over A */
	free_frame(q, 1, 3 * FRAME / 4, FRAME, FRAME / 4);     /* C */
	free_frame(q, 3, 0, PAGE, PAGE);                       /* for the gap */
	index_now(q, fr(2));
	cr_assert_eq(purge_flush_to(q, 0), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(fk.splits, 0, "%u splits", fk.splits);
	cr_assert_eq(fk.whole_frees, 1, "frame 1 freed whole");
	cr_assert_eq(st.frames_whole, 1);
	cr_assert_eq(st.frames_split, 0);
	cr_assert(fake_range_purged(&fk, fr(1), FRAME / 4, 1));
	cr_assert(fake_range_purged(&fk, fr(1) + FRAME / 4, FRAME / 4, 2), "A and B both");
	cr_assert_eq(st.pending_bytes, PAGE, "frame 3's page is held");
	assert_identity(q);
}

/* Part of a huge frame through an overlapping range: held, like the rest,
 * so that purge_flush_to keeps nothing above keep_bytes but what it holds. */
Test(huge, an_overlapping_range_in_a_huge_frame_is_held)
{
	purge_queue *q = mkhuge(0, 0, 0);

	all_huge(4);
	free_frame(q, 1, 0, FRAME / 4, FRAME / 4);             /* A */
	free_frame(q, 1, FRAME / 8, 3 * FRAME / 8, FRAME / 4); /* B, over A */
	free_frame(q, 3, 0, PAGE, PAGE);
	index_now(q, fr(2));
	cr_assert_eq(purge_flush_to(q, 0), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.purged_bytes, 0, "nothing of a huge frame's part is purged");
	cr_assert_eq(st.pending_bytes - st.held_bytes, 0, "%llu KiB neither held nor settled",
	             (unsigned long long)((st.pending_bytes - st.held_bytes) >> 10));
	cr_assert_eq(st.held_ranges, st.pending_ranges);
	cr_assert_eq(purge_flush(q), 0);
	assert_identity(q);
}

/* Without huge pages, a range over another that leaves it alone in the
 * overlap list (the other was settled first) is settled like any other. */
Test(huge, an_overlapping_range_left_alone_is_settled)
{
	purge_queue *q = mkhuge(0, 0, PURGE_AGES);

	free_frame(q, 1, 0, 2 * PAGE, 2 * PAGE); /* A */
	fk.now += MS;
	free_frame(q, 1, PAGE, 4 * PAGE, 3 * PAGE);   /* B, over A */
	free_frame(q, 1, 10 * PAGE, 11 * PAGE, PAGE); /* C */
	index_now(q, fr(1) + 6 * PAGE);
	cr_assert_eq(purge_flush_older(q, MS), 0, "A alone");
	cr_assert_eq(stats_of(q).pending_bytes, 4 * PAGE, "%zu pages pending",
	             (size_t)(stats_of(q).pending_bytes / PAGE));
	cr_assert_eq(purge_flush_to(q, 0), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.pending_bytes, 0, "%zu pages neither held nor settled",
	             (size_t)(st.pending_bytes / PAGE));
	cr_assert_eq(st.held_ranges, 0);
	assert_identity(q);
}

/* ... and it makes no automatic flush of its own: a PURGE_HUGE queue over
 * small pages flushes as often as one without the flag. */
static uint64_t flushes_of_a_stream(unsigned flags)
{
	struct purge_config cfg = {.capacity = 2, .flags = flags};
	purge_queue *q = mkq(&cfg);

	free_frame(q, 1, 0, 2 * PAGE, 2 * PAGE);    /* A */
	free_frame(q, 1, PAGE, 3 * PAGE, 2 * PAGE); /* B, over A: fills the queue */
	for (size_t i = 0; i < 100; i++)
		free_frame(q, 4, 2 * i * PAGE, (2 * i + 1) * PAGE, PAGE);
	cr_assert_eq(purge_flush(q), 0);
	assert_identity(q);
	return stats_of(q).auto_flushes;
}

Test(huge, an_overlapping_range_makes_no_flush_of_its_own)
{
	uint64_t plain = flushes_of_a_stream(0), huge = flushes_of_a_stream(PURGE_HUGE);

	cr_assert_eq(huge, plain, "%llu automatic flushes with PURGE_HUGE, %llu without",
	             (unsigned long long)huge, (unsigned long long)plain);
}

/* A merged range the kernel refuses without saying why (process_madvise
 * answering EINVAL for every call, as a sandbox may) is asked again whole
 * before range by range: a whole frame of many pieces still goes whole. */
Test(huge, a_refused_call_still_frees_a_frame_whole)
{
	purge_queue *q = mkhuge(0, 0, 0);

	all_huge(4);
	fk.refuse = -EINVAL;
	fk.refuse_after = 0;
	free_frame(q, 1, 0, FRAME, 256 * KIB);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert(fake_range_purged(&fk, fr(1), FRAME, 1));
	cr_assert_eq(fk.splits, 0, "%u huge pages split", fk.splits);
	cr_assert_eq(fk.whole_frees, 1);
	cr_assert_eq(st.failed_ranges, 0);
	cr_assert_eq(fk.madv_calls, 1, "one madvise for the merged range, not %u", fk.madv_calls);
	assert_identity(q);
}

/* A small queue's round selects more ranges than the scratch it sorts
 * them with held (capacity 8: 8 entries, 5 of scratch): the sort wrote
 * over the selection, and ranges went twice or not at all. */
Test(huge, a_small_queue_sorts_its_selection_in_room_of_its_own)
{
	struct purge_config cfg = {.capacity = 8, .flags = PURGE_HUGE};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 8 * PAGE), 0);
	for (size_t i = 7; i-- > 0;) /* over it, in falling order: the 8th fills the queue */
		cr_assert_eq(purge_enqueue(q, (void *)pg(i), PAGE), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.auto_flushes, 1);
	cr_assert(fake_range_purged(&fk, pg(0), 7 * PAGE, 2), "each page once for each range");
	cr_assert(fake_range_purged(&fk, pg(7), PAGE, 1));
	cr_assert_eq(st.pending_bytes, 0);
	cr_assert_eq(st.purged_bytes, 15 * PAGE);
	cr_assert_eq(fk.violations, 0);
	assert_identity(q);
}

/* A whole frame covered through an overlapping range that an indexed one
 * overlaps again: two cuts for one overlapping range, in a selection
 * barely large enough (capacity 8: 5 entries).  Each page goes once for
 * each range over it, none twice more, none left. */
Test(huge, cuts_of_overlapping_ranges_have_their_room)
{
	struct purge_config cfg = {.capacity = 8, .flags = PURGE_HUGE};
	fake_set_frame(&fk, 8 * PAGE); /* frames at pages 0, 8, 16, ... */
	purge_queue *q = mkq(&cfg);
	static const size_t r[][2] = {{7, 10}, {8, 15}, {12, 18}, {30, 31}};

	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(r[i][0]), (r[i][1] - r[i][0]) * PAGE), 0);
	index_now(q, pg(25));
	cr_assert_eq(purge_flush_to(q, 0), 0);
	for (size_t p = 6; p < 19; p++) {
		unsigned n = 0;
		for (size_t i = 0; i < 3; i++)
			n += p >= r[i][0] && p < r[i][1];
		cr_assert_eq(fake_purged(&fk, pg(p)), n, "page %zu purged %u times, %u ranges", p,
		             fake_purged(&fk, pg(p)), n);
	}
	cr_assert_eq(stats_of(q).pending_bytes, 0, "no huge page here: nothing held");
	cr_assert_eq(fake_purged(&fk, pg(30)), 1);
	cr_assert_eq(fk.violations, 0);
	assert_identity(q);
}

/* PURGE_INCREMENTAL rounds that cut ranges (a take inside two ranges
 * enqueued over it splits both) go on until the queue is under capacity
 * too, not only under the threshold the enqueue crossed. */
Test(huge, incremental_rounds_that_cut_ranges_end_under_capacity)
{
	struct purge_config cfg = {
	    .capacity = 4, .flags = PURGE_HUGE | PURGE_INCREMENTAL, .max_pending_bytes = 13 * PAGE};
	purge_queue *q = mkq(&cfg);

	fake_set_frame(&fk, 8 * PAGE);
	free_frame(q, 0, 26 * PAGE, 28 * PAGE, 2 * PAGE); /* A */
	free_frame(q, 0, 25 * PAGE, 30 * PAGE, 5 * PAGE); /* B, over A */
	cr_assert_eq(stats_of(q).flushes, 0);
	free_frame(q, 0, 24 * PAGE, 31 * PAGE, 7 * PAGE); /* C, over both: 14 pages */
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.auto_flushes, 1);
	cr_assert_lt(st.pending_ranges - st.held_ranges, 4, "%llu ranges pending after an enqueue",
	             (unsigned long long)st.pending_ranges);
	cr_assert_leq(st.pending_bytes, 13 * PAGE);
	assert_identity(q);
}

/* Held ranges past max_delay_ns that a round cannot fit (a queue of
 * capacity 1 selects one entry a round; two overlapping ranges need two)
 * are settled all the same. */
Test(huge, held_ranges_past_their_hold_go_even_when_a_round_cannot_fit_them)
{
	struct purge_config cfg = {.capacity = 1, .flags = PURGE_HUGE, .max_delay_ns = 10 * MS};
	purge_queue *q = mkq(&cfg);
	uint64_t next;

	all_huge(4);
	free_frame(q, 1, 0, 4 * PAGE, 4 * PAGE);    /* fills the queue: held */
	free_frame(q, 1, 3 * PAGE, 4 * PAGE, PAGE); /* over it: held too */
	cr_assert_eq(stats_of(q).held_ranges, 2);
	fk.now += 20 * MS;
	cr_assert_eq(purge_flush_due(q, 0, &next), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.pending_ranges, 0, "%llu ranges still pending",
	             (unsigned long long)st.pending_ranges);
	cr_assert_eq(next, UINT64_MAX);
	assert_identity(q);
}
