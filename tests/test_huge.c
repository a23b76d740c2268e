/* SPDX-License-Identifier: MIT */
/*
 * PURGE_HUGE against a fake kernel that models huge pages (a purge of part
 * of a huge frame splits it, of all of it frees it): what the frame plan
 * settles, holds and settles later, and what it never does (split a huge
 * page when waiting would have freed it).
 */
#include <errno.h>

#define FIXTURE_BASE   ((uintptr_t)0x500000000000ull) /* 2 MiB aligned */
#define FIXTURE_NPAGES (16 * 512)                     /* 16 frames of 2 MiB */
#include "fixture.h"

TestSuite(huge, .init = setup, .fini = teardown);

#define FRAME ((uintptr_t)2 << 20)
#define KIB   ((size_t)1024)
#define MS    1000000ull

static uintptr_t fr(size_t f)
{
	return FIXTURE_BASE + f * FRAME;
}

static void all_huge(size_t nframes)
{
	for (size_t f = 0; f < nframes; f++)
		fake_set_huge(&fk, fr(f), true);
}

static purge_queue *mkhuge(size_t max_pending, uint64_t delay, unsigned flags)
{
	struct purge_config cfg = {.capacity = 4096,
	                           .flags = PURGE_HUGE | flags,
	                           .max_pending_bytes = max_pending,
	                           .max_delay_ns = delay};
	return mkq(&cfg);
}

/* pieces of `piece` bytes of frame f, from `from` to `to` (offsets) */
static void free_frame(purge_queue *q, size_t f, size_t from, size_t to, size_t piece)
{
	for (size_t off = from; off < to; off += piece)
		cr_assert_eq(purge_enqueue(q, (void *)(fr(f) + off), piece), 0);
}

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
