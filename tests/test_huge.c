/* SPDX-License-Identifier: MIT */
/*
 * PURGE_HUGE against a fake kernel that models huge pages (a purge of part
 * of a huge frame splits it, of all of it frees it): what the frame plan
 * settles, holds and settles later, and what it never does (split a huge
 * page when waiting would have freed it); the frames a flush scans.
 * Overlapping ranges and cut rounds: test_huge_overlap.c; the event loop
 * and purge_flush_due: test_huge_due.c.
 */
#include "huge_fixture.h"

Test(huge, whole_frames_go_whole_and_first)
{
	purge_queue *q = mkhuge(1024 * KIB, 0, 0);

	all_huge(4);
	free_frame(q, 0, 0, FRAME, 128 * KIB); /* crossings hold frame 0's first parts */
	struct purge_stats st = stats_of(q);
	cr_assert_gt(st.auto_flushes, 0);
	cr_assert_eq(st.purged_bytes, 0, "parts of a huge frame wait for the rest of it");
	cr_assert_gt(st.held_ranges, 0);
	free_frame(q, 1, 0, FRAME / 2, 128 * KIB); /* frame 0 is whole now: it goes */
	st = stats_of(q);
	cr_assert_eq(fk.splits, 0, "no huge page split");
	cr_assert_eq(fk.whole_frees, 1);
	cr_assert(fake_range_purged(&fk, fr(0), FRAME, 1));
	cr_assert(fake_range_purged(&fk, fr(1), FRAME / 2, 0), "frame 1's half waits");
	cr_assert_eq(st.frames_whole, 1);
	cr_assert_eq(st.frames_split, 0);
	cr_assert_eq(st.pending_bytes, FRAME / 2);
	cr_assert_gt(st.held_bytes, 0, "what the last plan held of it");
	cr_assert_eq(purge_flush(q), 0, "purge_flush settles what is held");
	cr_assert(fake_range_purged(&fk, fr(1), FRAME / 2, 1));
	st = stats_of(q);
	cr_assert_eq(st.held_ranges, 0);
	cr_assert_eq(st.frames_split, 1, "purge_flush split frame 1: counted");
	cr_assert_eq(fk.splits, 1);
	assert_identity(q);
}

Test(huge, a_held_half_settles_by_age)
{
	purge_queue *q = mkhuge(256 * KIB, 100 * MS, 0);

	all_huge(4);
	free_frame(q, 2, 0, FRAME / 2, 64 * KIB); /* held: its other half stays live */
	cr_assert_eq(stats_of(q).purged_bytes, 0);
	fk.now += 50 * MS;
	free_frame(q, 3, 0, 64 * KIB, 64 * KIB);
	cr_assert_eq(stats_of(q).purged_bytes, 0, "not old enough");
	fk.now += 60 * MS;
	free_frame(q, 3, 64 * KIB, 128 * KIB, 64 * KIB); /* frame 2's parts are 110 ms old */
	cr_assert(fake_range_purged(&fk, fr(2), FRAME / 2, 1), "settled at max_delay_ns");
	cr_assert_eq(fake_purged(&fk, fr(3)), 0, "frame 3's parts are younger");
	cr_assert_eq(stats_of(q).frames_split, 1);
	assert_identity(q);
}

Test(huge, frames_without_huge_pages_are_not_held)
{
	purge_queue *q = mkhuge(256 * KIB, 0, 0);

	fake_set_huge(&fk, fr(1), true); /* frame 0 is small pages */
	free_frame(q, 0, 0, 512 * KIB, 128 * KIB);
	free_frame(q, 1, 0, 512 * KIB, 128 * KIB);
	cr_assert(fake_range_purged(&fk, fr(0), 512 * KIB, 1), "small pages: settled");
	cr_assert_eq(fake_purged(&fk, fr(1)), 0, "huge: held");
	cr_assert_eq(stats_of(q).frames_split, 0, "a purge of small pages is no split");
	cr_assert_gt(fk.scans, 0);
	assert_identity(q);
}

Test(huge, without_pagemap_scan_every_frame_may_be_huge)
{
	purge_queue *q = mkhuge(256 * KIB, 0, 0);

	fk.spans_err = -ENOTTY;
	free_frame(q, 0, 0, 512 * KIB, 128 * KIB);
	cr_assert_eq(stats_of(q).purged_bytes, 0, "held: the flag is trusted");
	cr_assert_gt(stats_of(q).held_ranges, 0);
	assert_identity(q);
}

/* purge_flush holds nothing, and counts what it purged: a frame freed in
 * many pieces is whole, part of a huge one is a split, part of one of small
 * pages is neither. */
Test(huge, purge_flush_counts_whole_and_split_frames)
{
	purge_queue *q = mkhuge(64 * FRAME, 0, 0);

	fake_set_huge(&fk, fr(0), true);
	fake_set_huge(&fk, fr(1), true);
	free_frame(q, 0, 0, FRAME, 128 * KIB);
	free_frame(q, 1, 0, FRAME / 2, 128 * KIB);
	free_frame(q, 2, 0, FRAME / 4, 64 * KIB);
	cr_assert_eq(stats_of(q).purged_bytes, 0, "no threshold crossed");
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.frames_whole, 1, "16 pieces of frame 0: one whole frame");
	cr_assert_eq(st.frames_split, 1, "half of huge frame 1");
	cr_assert_eq(fk.whole_frees, 1);
	cr_assert_eq(fk.splits, 1);
	cr_assert_eq(st.pending_ranges, 0);
	assert_identity(q);
}

/* A range across frames: the frames it covers go at once, its ends wait. */
Test(huge, a_range_across_frames)
{
	purge_queue *q = mkhuge(FRAME, 0, 0);

	all_huge(6);
	cr_assert_eq(purge_enqueue(q, (void *)(fr(0) + FRAME / 2), 3 * FRAME), 0);
	struct purge_stats st = stats_of(q);
	cr_assert(fake_range_purged(&fk, fr(1), 2 * FRAME, 1), "frames 1 and 2 freed");
	cr_assert(fake_range_purged(&fk, fr(0) + FRAME / 2, FRAME / 2, 0));
	cr_assert(fake_range_purged(&fk, fr(3), FRAME / 2, 0));
	cr_assert_eq(fk.splits, 0);
	cr_assert_eq(st.frames_whole, 2);
	cr_assert_eq(st.held_ranges, 2);
	cr_assert_eq(st.pending_ranges, 2, "the range, in two parts");
	cr_assert_eq(st.held_bytes, FRAME);
	assert_identity(q);
}

Test(huge, flush_to_and_incremental_hold_too)
{
	purge_queue *q = mkhuge(0, 0, 0);

	all_huge(2);
	free_frame(q, 0, 0, FRAME / 2, 128 * KIB);
	free_frame(q, 1, 0, FRAME, 128 * KIB);
	cr_assert_eq(purge_flush_to(q, 0), 0);
	cr_assert(fake_range_purged(&fk, fr(1), FRAME, 1), "the whole frame goes");
	cr_assert(fake_range_purged(&fk, fr(0), FRAME / 2, 0), "the half frame waits");
	cr_assert_eq(fk.splits, 0);
	purge_queue *qi = mkhuge(512 * KIB, 0, PURGE_INCREMENTAL);
	all_huge(4);
	free_frame(qi, 2, 0, FRAME / 2, 128 * KIB);
	cr_assert_eq(fake_purged(&fk, fr(2)), 0, "incremental rounds hold");
	free_frame(qi, 2, FRAME / 2, FRAME, 128 * KIB);
	cr_assert_eq(purge_flush_to(qi, 0), 0, "a whole frame goes at the next plan");
	cr_assert(fake_range_purged(&fk, fr(2), FRAME, 1));
	cr_assert_eq(fk.splits, 0);
	assert_identity(q);
	assert_identity(qi);
}

/* What is held does not count against the thresholds: an enqueue after
 * them does not plan again (no scan) until new bytes cross. */
Test(huge, held_bytes_make_no_empty_flushes)
{
	purge_queue *q = mkhuge(256 * KIB, 0, 0);

	all_huge(8);
	for (size_t f = 0; f < 8; f++) /* every second piece crosses: all of it held */
		free_frame(q, f, 0, 1024 * KIB, 256 * KIB);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.purged_bytes, 0);
	cr_assert_eq(st.held_bytes + 256 * KIB >= st.pending_bytes, 1);
	unsigned scans = fk.scans, n = 0;
	uint64_t flushes = st.flushes;
	/* frame 10 has small pages: new bytes, not held, under the threshold */
	for (; st.pending_bytes - st.held_bytes + 4 * KIB <= 256 * KIB; n++, st = stats_of(q)) {
		cr_assert_eq(purge_enqueue(q, (void *)(fr(10) + n * 4 * KIB), 4 * KIB), 0);
		cr_assert_eq(fk.scans, scans, "enqueue %u: no plan under the threshold", n);
	}
	cr_assert_gt(n, 0);
	cr_assert_eq(st.flushes, flushes, "%llu MiB held, no flush",
	             (unsigned long long)(st.held_bytes >> 20));
	cr_assert_eq(purge_enqueue(q, (void *)(fr(10) + n * 4 * KIB), 4 * KIB), 0); /* crosses */
	st = stats_of(q);
	cr_assert_eq(st.flushes, flushes + 1);
	cr_assert(fake_range_purged(&fk, fr(10), (n + 1) * 4 * KIB, 1), "small pages settled");
	cr_assert_eq(st.purged_bytes, (n + 1) * 4 * KIB, "nothing held was settled");
	assert_identity(q);
}

Test(huge, needs_coalescing)
{
	struct purge_config cfg = {.flags = PURGE_HUGE | PURGE_NO_COALESCE};
	int ret;

	mkq_ret(&cfg, &ret);
	cr_assert_eq(ret, -EINVAL, "a whole frame must reach the kernel as one range");
}

/* Held ranges do not count against capacity either. */
Test(huge, held_ranges_do_not_count_against_capacity)
{
	struct purge_config cfg = {.capacity = 16, .flags = PURGE_HUGE};
	purge_queue *q = mkq(&cfg);

	all_huge(1);
	free_frame(q, 0, 0, FRAME / 2, 64 * KIB); /* 16 pieces: the 16th plans, holds all */
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.held_ranges, 16);
	unsigned scans = fk.scans;
	for (size_t i = 0; i < 4; i++) /* the pool's room beyond what is held */
		cr_assert_eq(purge_enqueue(q, (void *)(fr(8) + i * 4 * KIB), 4 * KIB), 0);
	cr_assert_eq(fk.scans, scans, "4 new ranges of 16: no plan");
	cr_assert_eq(stats_of(q).flushes, st.flushes);
	assert_identity(q);
}

/* A round that must stop (a whole frame of more parts than its selection
 * holds) leaves the new ranges after it to the next round. */
Test(huge, a_round_that_stops_leaves_the_rest_to_the_next)
{
	struct purge_config cfg = {
	    .capacity = 64, .flags = PURGE_HUGE, .max_pending_bytes = 320 * KIB};
	purge_queue *q = mkq(&cfg);
	const size_t p = 64 * KIB;

	all_huge(1);                    /* frame 5: small pages */
	free_frame(q, 0, 0, 30 * p, p); /* crossings every 6: all 30 held */
	cr_assert_eq(stats_of(q).held_ranges, 30);
	free_frame(q, 5, 0, p, p);          /* qA */
	free_frame(q, 0, 30 * p, FRAME, p); /* frame 0 whole: 32 parts, too many */
	free_frame(q, 5, p, 4 * p, p);      /* qB, qC, qD: the crossing */
	cr_assert(fake_range_purged(&fk, fr(5), 4 * p, 1), "qA to qD all settled");
	cr_assert(fake_range_purged(&fk, fr(0), FRAME, 1));
	cr_assert_eq(fk.splits, 0);
	assert_identity(q);
}

/* Issue 22 item 10: a flush that takes more than half the pool by address
 * (a linked store: one cancel made it so) counted no frame it split. */
Test(huge, a_big_take_by_address_counts_its_frames)
{
	struct purge_config cfg = {.capacity = 16, .flags = PURGE_HUGE};
	purge_queue *q = mkq(&cfg);

	all_huge(14);
	for (size_t f = 0; f < 12; f++) /* 12 half frames: more than half the pool (21) */
		free_frame(q, f, 0, FRAME / 2, FRAME / 2);
	cr_assert_eq(purge_cancel(q, (void *)(fr(0) + FRAME - PAGE), PAGE), 0, "links the store");
	fk.now += MS;
	cr_assert_eq(purge_flush_older(q, 1), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(fk.splits, 12);
	cr_assert_eq(st.frames_split, 12, "%u splits, %llu counted", fk.splits,
	             (unsigned long long)st.frames_split);
	assert_identity(q);
}

/* The room drain too: cancels' splits fill the pool, and the round of the
 * oldest `batch` that makes room is more than half of it. */
Test(huge, the_room_drain_counts_its_frames)
{
	struct purge_config cfg = {.capacity = 16, .flags = PURGE_HUGE};
	purge_queue *q = mkq(&cfg);
	struct purge_stats st;

	all_huge(16);
	for (size_t f = 0; f < 15; f++) /* 15 frames, each pending but for one page */
		free_frame(q, f, 0, FRAME - PAGE, FRAME - PAGE);
	cr_assert_eq(stats_of(q).held_ranges, 0, "under every threshold: no plan yet");
	/* each cancel splits a range: 21 pieces fill the pool, and the next
	 * cancel settles the oldest batch (1024: all of them) first */
	for (size_t k = 0; (st = stats_of(q)).flushes == 0; k++)
		cr_assert_geq(purge_cancel(q, (void *)(fr(k) + FRAME / 2), PAGE), 0);
	cr_assert_gt(fk.splits, 11, "the room drain split %u frames", fk.splits);
	cr_assert_eq(st.frames_split, fk.splits, "%u splits, %llu counted", fk.splits,
	             (unsigned long long)st.frames_split);
	assert_identity(q);
}

/* Issue 22 item 11: the kernel walks every page-table entry of a scan, so a
 * flush asks only about the frames it touches (one scan for each run of
 * them), through one open, not about everything from the first to the
 * last. */
Test(huge, a_flush_scans_only_the_frames_it_touches)
{
	purge_queue *q = mkhuge(0, 0, 0);

	all_huge(16);
	free_frame(q, 0, 0, FRAME / 2, 128 * KIB); /* the two ends of the heap */
	free_frame(q, 15, 0, FRAME / 2, 128 * KIB);
	cr_assert_eq(purge_flush_to(q, 0), 0);
	cr_assert_eq(stats_of(q).held_ranges, 16, "both halves held");
	cr_assert_eq(fk.scans, 2, "one scan each: %u", fk.scans);
	cr_assert_eq(fk.scanned, 2 * FRAME, "scanned %llu MiB",
	             (unsigned long long)(fk.scanned >> 20));
	cr_assert_eq(fk.scan_opens, 1, "one open a round");
	cr_assert_eq(fk.open_scans, 0, "closed");
	/* purge_flush holds nothing, and counts the frames it splits the same way */
	fk.scans = 0, fk.scanned = 0;
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(stats_of(q).frames_split, 2);
	cr_assert_eq(fk.scanned, 2 * FRAME, "purge_flush scanned %llu MiB",
	             (unsigned long long)(fk.scanned >> 20));
	cr_assert_eq(fk.open_scans, 0);
	cr_assert_eq(fk.violations, 0);
	assert_identity(q);
}

/* Frames next to each other, or one frame apart, take one scan; a scan
 * whose answer stops short (32 spans) goes on where it stopped. */
Test(huge, runs_of_frames_take_one_scan_each)
{
	purge_queue *q = mkhuge(0, 0, 0);

	all_huge(16);
	for (size_t f = 2; f < 5; f++) /* 2, 3, 4: one run; 6: one apart, the same run */
		free_frame(q, f, 0, FRAME / 4, 128 * KIB);
	free_frame(q, 6, 0, FRAME / 4, 128 * KIB);
	free_frame(q, 9, 0, FRAME / 4, 128 * KIB); /* two apart: its own */
	cr_assert_eq(purge_flush_to(q, 0), 0);
	cr_assert_eq(fk.scans, 2);
	cr_assert_eq(fk.scanned, 6 * FRAME);
	cr_assert_eq(stats_of(q).held_ranges, 5 * 4);
	assert_identity(q);
}

Test(huge, a_scan_cut_short_goes_on)
{
	const size_t fpages = 4, nf = 80; /* 80 frames of 4 pages, every other huge */
	fake_set_frame(&fk, fpages * PAGE);
	purge_queue *q = mkhuge(0, 0, 0);

	for (size_t f = 0; f < nf; f += 2)
		fake_set_huge(&fk, FIXTURE_BASE + f * fpages * PAGE, true);
	for (size_t f = 0; f < nf; f++) /* the first page of each: 40 spans */
		cr_assert_eq(purge_enqueue(q, (void *)(FIXTURE_BASE + f * fpages * PAGE), PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fk.splits, nf / 2);
	cr_assert_eq(stats_of(q).frames_split, nf / 2, "%llu counted",
	             (unsigned long long)stats_of(q).frames_split);
	cr_assert_geq(fk.scans, 2, "40 spans need two answers of 32");
	cr_assert_eq(fk.violations, 0);
	assert_identity(q);
}
