/* SPDX-License-Identifier: MIT */
/*
 * Batching and error attribution against a fake kernel: short counts at every
 * position, each errno on iovec k, MAX_RW_COUNT truncation, refusals at the
 * probe and at run time.  Stats and on_failure must be exact.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#define FIXTURE_BASE   ((uintptr_t)0x100000000000ull)
#define FIXTURE_NPAGES 4096
#include "fixture.h"

TestSuite(fake, .init = setup, .fini = teardown);

/* n one-page ranges with a gap after each, so nothing coalesces */
static void enqueue_scattered(purge_queue *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
}

Test(fake, batches_of_batch_iovecs)
{
	struct purge_config cfg = {.batch = 4};
	purge_queue *q = mkq(&cfg);

	enqueue_scattered(q, 10);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.pmadv_calls, 3);
	cr_assert_eq(st.madv_calls, 0);
	cr_assert_eq(fk.max_vlen, 4);
	cr_assert_eq(st.purged_bytes, 10 * PAGE);
	for (size_t i = 0; i < 10; i++) {
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1);
		cr_assert_eq(fake_purged(&fk, pg(2 * i + 1)), 0, "gap page %zu purged", i);
	}
	cr_assert_eq(fk.violations, 0);
	assert_identity(q);
}

/* A failing iovec at every position k of one call: the kernel returns the
 * bytes before k (or -1 for k = 0); the library madvises k alone, reports it,
 * and resubmits the rest without touching what succeeded. */
static void short_count_at(size_t k, int err)
{
	struct purge_config cfg = {.batch = 8};
	purge_queue *q = mkq(&cfg);

	fake_fail_page(&fk, pg(2 * k), err);
	enqueue_scattered(q, 8);
	cr_assert_eq(purge_flush(q), 1);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(fails.n, 1);
	cr_assert_eq(fails.f[0].addr, (void *)pg(2 * k));
	cr_assert_eq(fails.f[0].len, PAGE);
	cr_assert_eq(fails.f[0].err, err);
	cr_assert_eq(st.failed_ranges, 1);
	cr_assert_eq(st.failed_bytes, PAGE);
	cr_assert_eq(st.purged_bytes, 7 * PAGE);
	/* -1 with an errno that names no iovec: each range of the call is
	 * asked alone; otherwise one madvise learns the errno of iovec k */
	bool whole = k == 0 && err != -EINVAL && err != -ENOMEM && err != -EPERM;
	cr_assert_eq(st.short_counts, k > 0);
	cr_assert_eq(st.madv_calls, whole ? 8 : 1);
	cr_assert_eq(st.pmadv_calls, whole || k == 7 ? 1 : 2);
	cr_assert_eq(st.fallbacks, 0);
	for (size_t i = 0; i < 8; i++)
		if (i != k)
			cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1, "k=%zu i=%zu", k, i);
	assert_identity(q);
}

Test(fake, short_count_every_position_enomem)
{
	for (size_t k = 0; k < 8; k++) {
		teardown();
		setup();
		short_count_at(k, -ENOMEM);
	}
}

Test(fake, each_errno_on_iovec_k)
{
	const int errs[] = {-EINVAL, -ENOMEM, -EFAULT, -EAGAIN};
	for (size_t e = 0; e < sizeof(errs) / sizeof(errs[0]); e++)
		for (size_t k = 0; k < 8; k += 3) {
			teardown();
			setup();
			short_count_at(k, errs[e]);
		}
}

/* EPERM that madvise reproduces: a sealed range, not a seccomp filter. */
Test(fake, sealed_range_eperm_keeps_vectored)
{
	for (size_t k = 0; k < 8; k += 7) {
		teardown();
		setup();
		short_count_at(k, -EPERM);
		cr_assert_eq(fk.demotions, 0);
	}
}

Test(fake, two_gib_truncation_never_reached)
{
	/* five 1 GiB ranges: 5 GiB in one flush; the kernel would clamp a
	 * call at MAX_RW_COUNT, so the library must cut calls there */
	size_t gib = (1ul << 30) / PAGE, n = 5 * gib + 16;
	teardown();
	fake_init(&fk, FIXTURE_BASE, n);
	struct purge_config cfg = {.max_call_bytes = SIZE_MAX}; /* the kernel's limit */
	purge_queue *q = mkq(&cfg);
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(i * gib + i), gib * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.short_counts, 0);
	cr_assert_eq(st.purged_bytes, 5 * gib * PAGE);
	cr_assert_leq(fk.max_call_bytes, (size_t)0x7fffffff);
	for (size_t i = 0; i < 5; i++)
		cr_assert(fake_range_purged(&fk, pg(i * gib + i), gib * PAGE, 1));
	cr_assert_eq(fake_total_purges(&fk), 5 * gib);
	assert_identity(q);
}

/* max_call_bytes 0: calls of PURGE_DEFAULT_CALL_BYTES (16 MiB), not the
 * kernel's 2 GiB; a value at the kernel's limit or above gives that limit. */
Test(fake, max_call_bytes_default_is_16_mib)
{
	size_t cap = PURGE_DEFAULT_CALL_BYTES / PAGE, n = 4 * cap + 64;
	teardown();
	fake_init(&fk, FIXTURE_BASE, n);
	purge_queue *q = mkq(NULL);
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), (4 * cap + 1) * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fk.max_call_bytes, PURGE_DEFAULT_CALL_BYTES);
	cr_assert_eq(stats_of(q).pmadv_calls, 5, "calls %u", stats_of(q).pmadv_calls);
	cr_assert(fake_range_purged(&fk, pg(0), (4 * cap + 1) * PAGE, 1));
	assert_identity(q);

	/* a second queue on the same fake kernel: one call */
	struct purge_config cfg = {.max_call_bytes = SIZE_MAX};
	q = mkq(&cfg);
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), (4 * cap + 1) * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fk.max_call_bytes, (4 * cap + 1) * PAGE);
	assert_identity(q);
}

Test(fake, max_call_bytes_splits_a_range)
{
	struct purge_config cfg = {.max_call_bytes = 4 * PAGE + 1};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 10 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(20), 2 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fk.max_call_bytes, 4 * PAGE);
	cr_assert_eq(stats_of(q).pmadv_calls, 3); /* 4+4, 2+2, done */
	cr_assert(fake_range_purged(&fk, pg(0), 10 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(20), 2 * PAGE, 1));
	assert_identity(q);
}

/* A failure inside a range that the byte cap cut: only that piece fails. */
Test(fake, failure_in_a_cut_piece)
{
	struct purge_config cfg = {.max_call_bytes = 2 * PAGE};
	purge_queue *q = mkq(&cfg);

	fake_fail_page(&fk, pg(3), -EINVAL);
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 6 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 1);
	cr_assert_eq(fails.n, 1);
	cr_assert_eq(fails.f[0].addr, (void *)pg(2));
	cr_assert_eq(fails.f[0].len, 2 * PAGE);
	cr_assert(fake_range_purged(&fk, pg(0), 2 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(4), 2 * PAGE, 1));
	assert_identity(q);
}

Test(fake, probe_refusal_uses_the_loop)
{
	fk.path = PURGE_BACKEND_LOOP;
	purge_queue *q = mkq(NULL);
	enqueue_scattered(q, 20);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.pmadv_calls, 0);
	cr_assert_eq(st.madv_calls, 20);
	cr_assert_eq(st.backend, PURGE_BACKEND_LOOP);
	for (size_t i = 0; i < 20; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1);
	assert_identity(q);
}

/* Refused mid-run (seccomp added later, ...): the batch in flight finishes
 * through the loop, nothing lost, nothing purged twice. */
static void refused_at_run_time(int err, bool madv_ok)
{
	struct purge_config cfg = {.batch = 4};
	purge_queue *q = mkq(&cfg);

	fk.refuse = err;
	fk.refuse_after = 2;
	fk.madv_refuses_too = !madv_ok;
	enqueue_scattered(q, 20);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(fk.demotions, 1);
	cr_assert_eq(st.fallbacks, 1);
	cr_assert_eq(st.backend, PURGE_BACKEND_LOOP);
	cr_assert_eq(st.pmadv_calls, 3);
	cr_assert_eq(st.purged_bytes, 20 * PAGE);
	for (size_t i = 0; i < 20; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1, "range %zu", i);
	/* the next flush goes straight to the loop */
	enqueue_scattered(q, 2);
	purge_flush(q);
	cr_assert_eq(stats_of(q).pmadv_calls, 3);
	assert_identity(q);
}

Test(fake, runtime_refusals_switch_to_the_loop)
{
	const int errs[] = {-ENOSYS, -EBADF, -ESRCH, -EPERM};
	for (size_t i = 0; i < 4; i++) {
		teardown();
		setup();
		refused_at_run_time(errs[i], true);
	}
}

Test(fake, forced_vectored_reports_refusal)
{
	struct purge_config cfg = {.mode = PURGE_MODE_VECTORED};
	purge_queue *q = mkq(&cfg);

	fk.path = PURGE_BACKEND_LOOP; /* ignored when forced */
	fk.refuse = -ENOSYS;
	enqueue_scattered(q, 5);
	cr_assert_eq(purge_flush(q), 5);
	cr_assert_eq(fails.n, 5);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_eq(fails.f[i].err, -ENOSYS);
		cr_assert_eq(fails.f[i].len, PAGE);
	}
	cr_assert_eq(stats_of(q).madv_calls, 0);
	cr_assert_eq(fake_total_purges(&fk), 0);
	assert_identity(q);
}

Test(fake, forced_vectored_attributes_without_madvise)
{
	struct purge_config cfg = {.mode = PURGE_MODE_VECTORED};
	purge_queue *q = mkq(&cfg);

	fake_fail_page(&fk, pg(4), -ENOMEM);
	enqueue_scattered(q, 5);
	cr_assert_eq(purge_flush(q), 1);
	cr_assert_eq(fails.f[0].addr, (void *)pg(4));
	cr_assert_eq(stats_of(q).madv_calls, 0);
	cr_assert_eq(fk.madv_calls, 0);
	assert_identity(q);
}

Test(fake, forced_loop_never_calls_process_madvise)
{
	struct purge_config cfg = {.mode = PURGE_MODE_LOOP};
	purge_queue *q = mkq(&cfg);

	enqueue_scattered(q, 5);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fk.pmadv_calls, 0);
	cr_assert_eq(fk.madv_calls, 5);
	cr_assert_eq(stats_of(q).backend, PURGE_BACKEND_LOOP);
}

Test(fake, free_missing_falls_back_to_dontneed)
{
	struct purge_config cfg = {.advice = MADV_FREE};

	fk.unknown_advice_mask = 1u << MADV_FREE;
	purge_queue *q = mkq(&cfg);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.advice, MADV_DONTNEED);
	cr_assert_eq(st.zeroed, 1);
}

Test(fake, free_present_is_kept)
{
	struct purge_config cfg = {.advice = MADV_FREE};
	purge_queue *q = mkq(&cfg);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.advice, MADV_FREE);
	cr_assert_eq(st.zeroed, 0);
}

Test(fake, unknown_locked_advice_is_an_error)
{
	struct purge_config cfg = {.advice = MADV_DONTNEED_LOCKED};
	size_t bytes = purge_queue_bytes(0);
	void *mem = test_alloc(bytes);
	purge_queue *q;

	fk.unknown_advice_mask = 1u << MADV_DONTNEED_LOCKED;
	cr_assert_eq(purge__queue_init_backend(&q, mem, bytes, &cfg, &fk.be), -EOPNOTSUPP);
}

/* Touching ranges merge into one iovec, whatever the enqueue order.  Bytes
 * enqueued again while pending are a range of their own: submitted after
 * the others, so the rest still merge, and booked by their own outcome. */
Test(fake, coalesces_adjacent_keeps_overlaps_apart)
{
	purge_queue *q = mkq(NULL);

	cr_assert_eq(purge_enqueue(q, (void *)pg(4), 2 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 4 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(1), 2 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(1), 2 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(10), PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.merged_ranges, 1, "[4,6) joined [0,4)");
	cr_assert_eq(fk.max_vlen, 4, "[0,6) [10,11) then [1,3) twice");
	cr_assert_eq(st.enqueued_bytes, 11 * PAGE);
	cr_assert_eq(st.purged_bytes, 11 * PAGE, "every enqueue counts");
	cr_assert(fake_range_purged(&fk, pg(1), 2 * PAGE, 3));
	cr_assert_eq(fake_purged(&fk, pg(0)), 1);
	cr_assert(fake_range_purged(&fk, pg(3), 3 * PAGE, 1));
	cr_assert_eq(fake_purged(&fk, pg(6)), 0);
	assert_identity(q);
}

Test(fake, overlap_bytes_fail_with_their_range)
{
	purge_queue *q = mkq(NULL);

	fake_fail_page(&fk, pg(2), -EINVAL);
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 3 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(1), 3 * PAGE), 0);
	cr_assert_eq(purge_flush(q), 2);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(fails.f[0].addr, (void *)pg(0));
	cr_assert_eq(fails.f[0].len, 3 * PAGE);
	cr_assert_eq(fails.f[1].addr, (void *)pg(1));
	cr_assert_eq(fails.f[1].len, 3 * PAGE);
	cr_assert_eq(st.failed_bytes, 6 * PAGE);
	cr_assert_eq(st.purged_bytes, 0);
	assert_identity(q);
}

/* Page A enqueued twice, B once, one page per call: each enqueue is booked
 * by what happened to its own bytes, and failed_bytes is what on_failure
 * reported. */
Test(fake, duplicate_bytes_take_their_own_outcome)
{
	for (int bad = 0; bad < 2; bad++) {
		teardown();
		setup();
		struct purge_config cfg = {.max_call_bytes = PAGE};
		purge_queue *q = mkq(&cfg);
		fake_fail_page(&fk, pg(bad), -ENOMEM);
		cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
		cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
		cr_assert_eq(purge_enqueue(q, (void *)pg(1), PAGE), 0);
		cr_assert_eq(purge_flush(q), bad ? 1 : 2);
		struct purge_stats st = stats_of(q);
		cr_assert_eq(st.purged_bytes, (bad ? 2 : 1) * PAGE, "bad page %d", bad);
		cr_assert_eq(st.failed_bytes, (bad ? 1 : 2) * PAGE, "bad page %d", bad);
		size_t reported = 0;
		for (unsigned i = 0; i < fails.n; i++) {
			cr_assert_eq(fails.f[i].addr, (void *)pg(bad));
			reported += fails.f[i].len;
		}
		cr_assert_eq(reported, st.failed_bytes);
		assert_identity(q);
	}
}

/* One bad page among ten pages enqueued one by one, which coalescing
 * merges into one iovec: the bad page alone is reported, every good page
 * is purged, wherever the bad one is and on every path. */
static void bad_in_merged(size_t bad, int mode, int err)
{
	struct purge_config cfg = {.mode = mode};
	purge_queue *q = mkq(&cfg);

	fake_fail_page(&fk, pg(bad), err);
	for (size_t i = 0; i < 10; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(i), PAGE), 0);
	cr_assert_eq(purge_flush(q), 1, "bad %zu mode %d err %d", bad, mode, err);
	cr_assert_eq(fails.f[0].addr, (void *)pg(bad));
	cr_assert_eq(fails.f[0].len, PAGE);
	cr_assert_eq(fails.f[0].err, err);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.failed_bytes, PAGE);
	cr_assert_eq(st.purged_bytes, 9 * PAGE);
	for (size_t i = 0; i < 10; i++)
		if (i != bad)
			cr_assert_geq(fake_purged(&fk, pg(i)), 1, "good page %zu", i);
	cr_assert_eq(fake_purged(&fk, pg(bad)), 0);
	if (mode == PURGE_MODE_VECTORED)
		cr_assert_eq(st.madv_calls, 0);
	if (mode == PURGE_MODE_LOOP)
		cr_assert_eq(st.pmadv_calls, 0);
	assert_identity(q);
}

Test(fake, one_bad_page_never_stops_merged_neighbours)
{
	const int modes[] = {PURGE_MODE_AUTO, PURGE_MODE_VECTORED, PURGE_MODE_LOOP};
	const int errs[] = {-EINVAL, -ENOMEM, -EPERM};
	const size_t where[] = {0, 4, 9};

	for (size_t m = 0; m < 3; m++)
		for (size_t e = 0; e < 3; e++)
			for (size_t w = 0; w < 3; w++) {
				teardown();
				setup();
				bad_in_merged(where[w], modes[m], errs[e]);
			}
}

Test(fake, no_coalesce_submits_as_enqueued)
{
	struct purge_config cfg = {.flags = PURGE_NO_COALESCE};
	purge_queue *q = mkq(&cfg);

	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(5 - i), PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fk.max_vlen, 6);
	cr_assert_eq(stats_of(q).merged_ranges, 0);
	assert_identity(q);
}

/* Issue 15.7: A and B touch and are merged, C (in the same call) fails:
 * every path counts the one join the kernel took whole. */
static void merged_with_a_hole(int mode)
{
	struct purge_config cfg = {.mode = mode};
	purge_queue *q = mkq(&cfg);

	unsigned before = fake_purged(&fk, pg(0));

	fake_fail_page(&fk, pg(10), -ENOMEM);
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);  /* A */
	cr_assert_eq(purge_enqueue(q, (void *)pg(1), PAGE), 0);  /* B */
	cr_assert_eq(purge_enqueue(q, (void *)pg(10), PAGE), 0); /* C */
	cr_assert_eq(purge_flush(q), 1);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.merged_ranges, 1, "mode %d: %llu joins", mode,
	             (unsigned long long)st.merged_ranges);
	cr_assert_eq(st.failed_bytes, PAGE);
	cr_assert(fake_range_purged(&fk, pg(0), 2 * PAGE, before + 1), "A and B purged once");
}

Test(fake, merged_ranges_alike_on_every_path)
{
	merged_with_a_hole(PURGE_MODE_AUTO);
	merged_with_a_hole(PURGE_MODE_VECTORED);
	merged_with_a_hole(PURGE_MODE_LOOP);
}

/* The page size comes through the backend: 16 KiB and 64 KiB pages. */
static void pages_of(size_t page)
{
	struct fake_kernel big;
	const uintptr_t base = (uintptr_t)0x400000000000ull;
	struct purge_config cfg = {.batch = 2};

	fake_init_page(&big, base, 64, page);
	size_t bytes = purge_queue_bytes(0);
	purge_queue *q;
	cr_assert_eq(purge__queue_init_backend(&q, test_alloc(bytes), bytes, &cfg, &big.be), 0);
	cr_assert_eq(purge_enqueue(q, (void *)(base + 4096), page), -EINVAL, "4 KiB aligned only");
	cr_assert_eq(purge_enqueue(q, (void *)base, page + 4096), -EINVAL);
	cr_assert_eq(purge_enqueue(q, (void *)base, 2 * page), 0);
	cr_assert_eq(purge_enqueue(q, (void *)(base + 4 * page), page), 0);
	cr_assert_eq(purge_enqueue(q, (void *)(base + 8 * page), page), 0);
	cr_assert_eq(purge_cancel(q, (void *)(base + page + 100), 1), 1, "widened to its page");
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(big.violations, 0, "every iovec a multiple of %zu", page);
	cr_assert(fake_range_purged(&big, base, page, 1));
	cr_assert(fake_range_purged(&big, base + page, page, 0));
	cr_assert(fake_range_purged(&big, base + 4 * page, page, 1));
	cr_assert_eq(stats_of(q).pmadv_calls, 2, "batch 2: 3 ranges in 2 calls");
	fake_free(&big);
}

Test(fake, sixteen_and_sixty_four_kib_pages)
{
	pages_of(16384);
	pages_of(65536);
}
