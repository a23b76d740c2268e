/* SPDX-License-Identifier: MIT */
/*
 * The queue's own rules: argument checks, trimming, cancel, thresholds,
 * configuration, environment knobs, errno preservation, calls from
 * on_failure and on a destroyed queue.  Uses the fake kernel so that what
 * gets purged is known exactly.  Ages: test_queue_age.c; stats:
 * test_queue_stats.c; threads: test_queue_threads.c.
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

Test(queue, rejects_bad_ranges_and_queues_nothing)
{
	purge_queue *q = mkq(NULL);

	cr_assert_eq(purge_enqueue(NULL, (void *)pg(0), PAGE), -EINVAL);
	cr_assert_eq(purge_enqueue(q, (void *)(pg(0) + 1), PAGE), -EINVAL, "unaligned start");
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE + 1), -EINVAL, "unaligned length");
	cr_assert_eq(purge_enqueue(q, NULL, PAGE), -EINVAL, "NULL");
	cr_assert_eq(purge_enqueue(q, (void *)(UINTPTR_MAX & ~(PAGE - 1)), 2 * PAGE), -EINVAL,
	             "overflow");
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), SIZE_MAX & ~(PAGE - 1)), -EINVAL);
#if defined(__x86_64__)
	cr_assert_eq(purge_enqueue(q, (void *)0xffff880000000000ull, PAGE), -EINVAL,
	             "kernel address");
#endif
	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 0), 0, "zero length is a no-op");
	cr_assert_eq(purge_enqueue(q, (void *)(pg(0) + 3), 0), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.enqueued_ranges, 0);
	cr_assert_eq(st.pending_ranges, 0);
	purge_flush(q);
	cr_assert_eq(fake_total_purges(&fk), 0);
}

Test(queue, trim_shrinks_inward)
{
	struct purge_config cfg = {.flags = PURGE_TRIM};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)(pg(0) + 1), 3 * PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)(pg(10) + 5), PAGE), 0, "no whole page: no-op");
	cr_assert_eq(stats_of(q).enqueued_bytes, 2 * PAGE);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert_eq(fake_purged(&fk, pg(0)), 0);
	cr_assert(fake_range_purged(&fk, pg(1), 2 * PAGE, 1));
	cr_assert_eq(fake_purged(&fk, pg(3)), 0);
	cr_assert_eq(fake_purged(&fk, pg(10)), 0);
	cr_assert_eq(fake_purged(&fk, pg(11)), 0);
}

Test(queue, enqueue_makes_no_syscall_until_full)
{
	struct purge_config cfg = {.capacity = 8};
	purge_queue *q = mkq(&cfg);

	for (size_t i = 0; i < 7; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
	cr_assert_eq(fk.pmadv_calls + fk.madv_calls, 0);
	cr_assert_eq(stats_of(q).pending_ranges, 7);
	cr_assert_eq(purge_enqueue(q, (void *)pg(100), PAGE), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.auto_flushes, 1);
	cr_assert_eq(st.pending_ranges, 0);
	cr_assert_eq(st.purged_bytes, 8 * PAGE, "the range that filled it is included");
	assert_identity(q);
}

Test(queue, byte_threshold_flushes)
{
	struct purge_config cfg = {.max_pending_bytes = 4 * PAGE};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 4 * PAGE), 0);
	cr_assert_eq(fk.pmadv_calls, 0, "at the limit, not over it");
	cr_assert_eq(purge_enqueue(q, (void *)pg(10), PAGE), 0);
	cr_assert_eq(stats_of(q).auto_flushes, 1);
	cr_assert_eq(stats_of(q).pending_bytes, 0);
}

Test(queue, age_threshold_flushes_on_enqueue)
{
	struct purge_config cfg = {.max_delay_ns = 20 * 1000 * 1000};
	purge_queue *q = mkq(&cfg);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
	fk.now += 19 * 1000 * 1000;
	cr_assert_eq(purge_enqueue(q, (void *)pg(2), PAGE), 0);
	cr_assert_eq(fk.pmadv_calls, 0, "19 ms old: not yet");
	fk.now += 1000 * 1000;
	cr_assert_eq(purge_enqueue(q, (void *)pg(4), PAGE), 0);
	cr_assert_eq(stats_of(q).auto_flushes, 1, "20 ms old: due");
	cr_assert_eq(stats_of(q).purged_bytes, 3 * PAGE);
}

Test(queue, cancel_removes_trims_and_splits)
{
	purge_queue *q = mkq(NULL);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), 4 * PAGE), 0);   /* trimmed left */
	cr_assert_eq(purge_enqueue(q, (void *)pg(10), 10 * PAGE), 0); /* split */
	cr_assert_eq(purge_enqueue(q, (void *)pg(30), 2 * PAGE), 0);  /* removed */
	cr_assert_eq(purge_enqueue(q, (void *)pg(40), 4 * PAGE), 0);  /* trimmed right */
	cr_assert_eq(purge_cancel(q, (void *)pg(2), 2 * PAGE), 1);
	cr_assert_eq(purge_cancel(q, (void *)pg(13), 3 * PAGE), 1);
	cr_assert_eq(purge_cancel(q, (void *)pg(29), 4 * PAGE), 1);
	cr_assert_eq(purge_cancel(q, (void *)(pg(39) + 7), 2 * PAGE), 1, "widened outward");
	cr_assert_eq(purge_cancel(q, (void *)pg(2), 2 * PAGE), 0, "nothing left there");
	cr_assert_eq(purge_cancel(q, (void *)pg(20), 10 * PAGE), 0, "between pending ranges");
	assert_identity(q);
	cr_assert_eq(stats_of(q).cancelled_bytes, (2 + 3 + 2 + 2) * PAGE);
	cr_assert_eq(purge_flush(q), 0);
	cr_assert(fake_range_purged(&fk, pg(0), 2 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(2), 2 * PAGE, 0));
	cr_assert(fake_range_purged(&fk, pg(10), 3 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(13), 3 * PAGE, 0));
	cr_assert(fake_range_purged(&fk, pg(16), 4 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(30), 2 * PAGE, 0));
	cr_assert(fake_range_purged(&fk, pg(40), 2 * PAGE, 0));
	cr_assert(fake_range_purged(&fk, pg(42), 2 * PAGE, 1));
	assert_identity(q);
}

Test(queue, cancel_straddling_many_ranges)
{
	purge_queue *q = mkq(NULL);

	for (size_t i = 0; i < 10; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(3 * i), 2 * PAGE), 0);
	cr_assert_eq(purge_cancel(q, (void *)pg(4), 20 * PAGE), 1);
	cr_assert_eq(stats_of(q).cancelled_bytes, (1 + 2 * 6) * PAGE);
	cr_assert_eq(stats_of(q).pending_ranges, 4);
	cr_assert_eq(purge_flush(q), 0);
	for (size_t p = 4; p < 24; p++)
		cr_assert_eq(fake_purged(&fk, pg(p)), 0, "page %zu", p);
	cr_assert_eq(fake_purged(&fk, pg(3)), 1);
	cr_assert_eq(fake_purged(&fk, pg(24)), 1);
	assert_identity(q);
}

/* Splits beyond the spare room: the oldest ranges are settled first (a
 * call), never a cancelled byte, and the split parts keep their bytes. */
Test(queue, cancel_splits_when_the_pool_is_full)
{
	struct purge_config cfg = {.capacity = 8, .batch = 2};
	purge_queue *q = mkq(&cfg);
	size_t spare = purge__pool_pieces(8) - 8;

	for (size_t i = 0; i < 7; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(100 * i), 64 * PAGE), 0);
	/* each cancel splits range 6 again: 7 + 1 + spare - 2 pieces fill the pool */
	for (size_t k = 0; k < spare + 2; k++)
		cr_assert_eq(purge_cancel(q, (void *)pg(600 + 2 * k + 1), PAGE), 1, "cut %zu", k);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.auto_flushes, 1, "one round made room");
	cr_assert_eq(st.purged_bytes, 2 * 64 * PAGE, "the two oldest ranges, a batch");
	cr_assert(fake_range_purged(&fk, pg(0), 64 * PAGE, 1));
	cr_assert(fake_range_purged(&fk, pg(100), 64 * PAGE, 1));
	cr_assert_eq(fake_purged(&fk, pg(200)), 0);
	assert_identity(q);
	cr_assert_eq(purge_flush(q), 0);
	for (size_t k = 0; k < spare + 2; k++) {
		cr_assert_eq(fake_purged(&fk, pg(600 + 2 * k + 1)), 0, "cancelled page %zu", k);
		cr_assert_eq(fake_purged(&fk, pg(600 + 2 * k)), 1, "kept page %zu", k);
	}
	assert_identity(q);
}

Test(queue, cancel_checks_arguments)
{
	purge_queue *q = mkq(NULL);

	cr_assert_eq(purge_cancel(NULL, (void *)pg(0), PAGE), -EINVAL);
	cr_assert_eq(purge_cancel(q, (void *)pg(0), 0), 0);
	cr_assert_eq(purge_cancel(q, (void *)UINTPTR_MAX, 2), -EINVAL);
	cr_assert_eq(purge_cancel(q, (void *)pg(0), PAGE), 0, "nothing pending");
	cr_assert_eq(purge_cancel(q, (void *)(UINTPTR_MAX - 10), 5), -EINVAL, "widening overflows");
}

Test(queue, batch_knob)
{
	purge_queue *q = mkq(NULL);

	cr_assert_eq(purge_get_batch(q), PURGE_DEFAULT_BATCH);
	cr_assert_eq(purge_set_batch(q, 0), -EINVAL);
	cr_assert_eq(purge_set_batch(q, PURGE_BATCH_MAX + 1), -EINVAL);
	cr_assert_eq(purge_get_batch(q), PURGE_DEFAULT_BATCH, "unchanged on error");
	cr_assert_eq(purge_get_batch(NULL), 0);
	for (size_t i = 0; i < 9; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
	cr_assert_eq(purge_set_batch(q, 3), 0, "while ranges are pending");
	cr_assert_eq(purge_get_batch(q), 3);
	purge_flush(q);
	cr_assert_eq(fk.max_vlen, 3);
	cr_assert_eq(fk.pmadv_calls, 3);
}

Test(queue, config_validation)
{
	int ret;
	struct purge_config bad[] = {
	    {.advice = MADV_WILLNEED},
	    {.advice = -1},
	    {.batch = 1025},
	    {.mode = 3},
	    {.mode = -1},
	    {.flags = 1u << 7},
	    {.capacity = PURGE_CAPACITY_MAX + 1},
	    {.reserved32 = 1},
	    {.reserved = {0, 0, 0, 0, 0, 0, 1}},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mkq_ret(&bad[i], &ret);
		cr_assert_eq(ret, -EINVAL, "case %zu", i);
	}
	purge_queue *q;
	char small[64] __attribute__((aligned(64)));
	cr_assert_eq(purge__queue_init_backend(&q, small, sizeof(small), NULL, &fk.be), -ENOSPC);
	cr_assert_eq(purge__queue_init_backend(&q, small + 1, 4096, NULL, &fk.be), -EINVAL);
	cr_assert_eq(purge_queue_init(NULL, small, sizeof(small), NULL), -EINVAL);
	cr_assert_gt(purge_queue_bytes(0), purge_queue_bytes(1));
	cr_assert_eq(purge_queue_bytes(UINT32_MAX), 0);
}

/* The field purge_config_check names: what its answer says before the colon. */
static void expect_names(struct purge_config cfg, const char *field, const char *what)
{
	const char *msg = purge_config_check(&cfg);
	size_t n = strlen(field);
	int ret;

	cr_assert_not_null(msg, "%s: accepted", what);
	cr_assert(strncmp(msg, field, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' && msg[n + 2],
	          "%s: \"%s\" does not name %s", what, msg, field);
	mkq_ret(&cfg, &ret);
	cr_assert_eq(ret, -EINVAL, "%s: the queue takes a config the check refuses", what);
}

Test(queue, config_check_names_the_invalid_field)
{
	struct purge_config c;

	expect_names((struct purge_config){.advice = MADV_WILLNEED}, "advice", "MADV_WILLNEED");
	expect_names((struct purge_config){.advice = -1}, "advice", "advice -1");
	expect_names((struct purge_config){.batch = PURGE_BATCH_MAX + 1}, "batch", "batch 1025");
	expect_names((struct purge_config){.batch = 5000}, "batch", "batch 5000");
	expect_names((struct purge_config){.capacity = PURGE_CAPACITY_MAX + 1}, "capacity",
	             "capacity max + 1");
	expect_names((struct purge_config){.capacity = 1u << 31}, "capacity", "capacity 2^31");
	expect_names((struct purge_config){.flags = 1u << 6}, "flags", "flag 1 << 6");
	expect_names((struct purge_config){.flags = PURGE_TRIM | 1u << 31}, "flags",
	             "flag 1 << 31");
	expect_names((struct purge_config){.flags = PURGE_HUGE | PURGE_NO_COALESCE}, "flags",
	             "HUGE | NO_COALESCE");
	cr_assert_str_eq(purge_config_check(&(struct purge_config){
	                     .flags = PURGE_HUGE | PURGE_NO_COALESCE | PURGE_LOCKED}),
	                 "flags: PURGE_HUGE with PURGE_NO_COALESCE");
	expect_names((struct purge_config){.mode = PURGE_MODE_LOOP + 1}, "mode", "mode 3");
	expect_names((struct purge_config){.mode = -1}, "mode", "mode -1");
	expect_names((struct purge_config){.reserved32 = 1u << 31}, "reserved32", "reserved32");
	for (size_t i = 0; i < sizeof(c.reserved) / sizeof(c.reserved[0]); i++) {
		char field[16];
		memset(&c, 0, sizeof(c));
		c.reserved[i] = UINT64_C(1) << 63;
		snprintf(field, sizeof(field), "reserved[%zu]", i);
		expect_names(c, field, field);
	}
	/* two invalid fields: the first in the struct's order */
	expect_names((struct purge_config){.batch = 5000, .reserved = {1}}, "batch", "batch first");
	expect_names((struct purge_config){.mode = 7, .flags = 1u << 9}, "flags", "flags first");
}

Test(queue, config_check_passes_every_valid_config)
{
	const int advice[] = {0,         MADV_DONTNEED, MADV_DONTNEED_LOCKED,
	                      MADV_FREE, MADV_COLD,     MADV_PAGEOUT};
	const unsigned all = PURGE_TRIM | PURGE_LOCKED | PURGE_INCREMENTAL | PURGE_AGES;
	int ret;

	cr_assert_null(purge_config_check(NULL), "NULL is the defaults");
	cr_assert_null(purge_config_check(
	    &(struct purge_config){.batch = PURGE_BATCH_MAX, .capacity = PURGE_CAPACITY_MAX}));
	for (size_t i = 0; i < sizeof(advice) / sizeof(advice[0]); i++) {
		struct purge_config c = {.advice = advice[i],
		                         .batch = 1,
		                         .capacity = 64,
		                         .flags = all | (i & 1 ? PURGE_HUGE : PURGE_NO_COALESCE),
		                         .max_delay_ns = UINT64_MAX,
		                         .max_pending_bytes = SIZE_MAX,
		                         .max_call_bytes = 1,
		                         .mode = (int)(i % 3)};
		cr_assert_null(purge_config_check(&c), "case %zu: %s", i, purge_config_check(&c));
		mkq_ret(&c, &ret);
		cr_assert_eq(ret, 0, "case %zu: the check passes, the queue refuses", i);
	}
	/* the environment never makes a config invalid: ignored and flagged */
	setenv("PURGE_BATCH", "5000", 1);
	setenv("PURGE_MODE", "fast", 1);
	cr_assert_null(purge_config_check(&(struct purge_config){0}));
	purge_queue *q = mkq(NULL);
	cr_assert_eq(stats_of(q).env_ignored, PURGE_ENV_BATCH | PURGE_ENV_MODE);
}

Test(queue, defaults_from_an_all_zero_config)
{
	purge_queue *q = mkq(NULL);
	struct purge_stats st = stats_of(q);

	cr_assert_eq(st.advice, MADV_DONTNEED);
	cr_assert_eq(st.zeroed, 1);
	cr_assert_eq(st.backend, PURGE_BACKEND_VECTORED);
	cr_assert_eq(purge_get_batch(q), PURGE_DEFAULT_BATCH);
}

Test(queue, env_batch_and_mode)
{
	setenv("PURGE_BATCH", "16", 1);
	setenv("PURGE_MODE", "loop", 1);
	purge_queue *q = mkq(NULL);
	cr_assert_eq(purge_get_batch(q), 16);
	cr_assert_eq(stats_of(q).backend, PURGE_BACKEND_LOOP);
	cr_assert_eq(stats_of(q).env_ignored, 0);
	struct purge_config cfg = {.batch = 8, .mode = PURGE_MODE_VECTORED};
	q = mkq(&cfg);
	cr_assert_eq(purge_get_batch(q), 8, "the config wins over the environment");
	cr_assert_eq(stats_of(q).backend, PURGE_BACKEND_VECTORED);
}

Test(queue, env_invalid_values_are_ignored_and_flagged)
{
	const char *bad[] = {"0", "1025", "-4", "12x", "", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("PURGE_BATCH", bad[i], 1);
		setenv("PURGE_MODE", "fast", 1);
		purge_queue *q = mkq(NULL);
		cr_assert_eq(purge_get_batch(q), PURGE_DEFAULT_BATCH, "PURGE_BATCH=%s", bad[i]);
		cr_assert_eq(stats_of(q).env_ignored, PURGE_ENV_BATCH | PURGE_ENV_MODE);
		cr_assert_eq(stats_of(q).backend, PURGE_BACKEND_VECTORED);
	}
}

Test(queue, errno_is_left_alone)
{
	purge_queue *q = mkq(NULL);

	fake_fail_page(&fk, pg(0), -ENOMEM);
	errno = 1234;
	/* the results are asserted after errno, which an assertion might touch */
	int unaligned = purge_enqueue(q, (void *)(pg(0) + 1), PAGE);
	int enqueued = purge_enqueue(q, (void *)pg(0), PAGE);
	int cancelled = purge_cancel(q, (void *)pg(5), PAGE);
	purge_flush(q);
	purge_backend(MADV_DONTNEED);
	purge_queue_destroy(q);
	cr_assert_eq(errno, 1234);
	cr_expect_eq(unaligned, -EINVAL);
	cr_expect_eq(enqueued, 0);
	cr_expect_eq(cancelled, 0, "page 5 was never enqueued");
}

static purge_queue *reentry_q;
static int reentry_ret[7];
static struct purge_stats reentry_st;

/* Every mutating call answers -EBUSY from inside the callback; the
 * read-only ones work, and set_batch leaves the flush in progress alone. */
static void reenter(void *arg, void *addr, size_t len, int err)
{
	(void)arg, (void)err;
	reentry_ret[0] = purge_enqueue(reentry_q, addr, len);
	reentry_ret[1] = purge_cancel(reentry_q, addr, len);
	reentry_ret[2] = purge_flush(reentry_q);
	reentry_ret[3] = purge_queue_destroy(reentry_q);
	reentry_ret[4] = purge_set_batch(reentry_q, 1);
	reentry_ret[5] = purge_flush_older(reentry_q, 1);
	reentry_ret[6] = purge_flush_to(reentry_q, 0);
	purge_get_stats(reentry_q, &reentry_st);
}

Test(queue, calls_from_on_failure_are_busy)
{
	for (int locked = 0; locked < 2; locked++) {
		struct purge_config cfg = {.flags = locked ? PURGE_LOCKED : 0, .batch = 4};
		size_t bytes = purge_queue_bytes(0);
		void *mem = test_alloc(bytes);
		cfg.on_failure = reenter;
		cr_assert_eq(purge__queue_init_backend(&reentry_q, mem, bytes, &cfg, &fk.be), 0);
		fake_fail_page(&fk, pg(0), -ENOMEM);
		for (size_t i = 0; i < 12; i++)
			cr_assert_eq(purge_enqueue(reentry_q, (void *)pg(2 * i), PAGE), 0);
		unsigned calls = fk.pmadv_calls;
		cr_assert_eq(purge_flush(reentry_q), 1);
		for (int i = 0; i < 7; i++)
			cr_assert_eq(reentry_ret[i], -EBUSY, "call %d locked=%d", i, locked);
		cr_assert_eq(reentry_st.failed_ranges, 1, "get_stats works inside");
		cr_assert_eq(purge_get_batch(reentry_q), 4, "batch unchanged");
		/* batch 4 throughout: the call that failed at once, then 11 ranges in 3 */
		cr_assert_eq(fk.pmadv_calls - calls, 4);
		cr_assert_eq(purge_enqueue(reentry_q, (void *)pg(2), PAGE), 0, "usable after");
		assert_identity(reentry_q);
		fake_fail_page(&fk, pg(0), 0);
	}
}

Test(queue, stats_of_null)
{
	struct purge_stats st;

	memset(&st, 0xff, sizeof(st));
	purge_get_stats(NULL, &st);
	cr_assert_eq(st.enqueued_bytes, 0);
	purge_get_stats(NULL, NULL);
	cr_assert_eq(purge_backend(MADV_WILLNEED), -EINVAL);
	cr_assert_eq(purge_queue_destroy(NULL), -EINVAL);
	cr_assert_eq(purge_flush(NULL), -EINVAL);
}

/* Issue 15.5 on the fake kernel: cancels wider than 64 MiB, up to 6 GiB,
 * over pending pages spread across the address space. */
Test(queue, large_cancels)
{
	struct fake_kernel big;
	const uintptr_t base = (uintptr_t)0x300000000000ull, gib = (uintptr_t)1 << 30;
	const size_t step = 64; /* pages between pending pieces: 256 KiB */

	fake_init(&big, base, (size_t)(8 * gib / PAGE));
	struct purge_config cfg = {.capacity = 40000};
	cfg.on_failure = record_failure;
	cfg.arg = &fails;
	size_t bytes = purge_queue_bytes(cfg.capacity);
	purge_queue *q;
	cr_assert_eq(purge__queue_init_backend(&q, test_alloc(bytes), bytes, &cfg, &big.be), 0);
	size_t n = (size_t)(8 * gib / PAGE) / step;
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(purge_enqueue(q, (void *)(base + i * step * PAGE), PAGE), 0);
	uintptr_t lo = base + gib, hi = lo + 6 * gib; /* 64 MiB, then the rest */
	cr_assert_eq(purge_cancel(q, (void *)lo, (size_t)64 << 20), 1);
	cr_assert_eq(purge_cancel(q, (void *)(lo + ((uintptr_t)64 << 20)),
	                          (size_t)(hi - lo - ((uintptr_t)64 << 20))),
	             1);
	size_t inside = (size_t)(6 * gib / PAGE) / step;
	cr_assert_eq(stats_of(q).cancelled_bytes, inside * PAGE);
	cr_assert_eq(stats_of(q).pending_ranges, n - inside);
	cr_assert_eq(purge_flush(q), 0);
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = base + i * step * PAGE;
		cr_assert_eq(fake_purged(&big, a), a < lo || a >= hi, "piece %zu", i);
	}
	assert_identity(q);
	fake_free(&big);
}

/* Issue 15.11: calls on a destroyed queue in caller memory fail. */
static void destroyed_answers_einval(unsigned flags)
{
	struct purge_config cfg = {.flags = flags};
	purge_queue *q = mkq(&cfg);
	struct purge_stats st;

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
	cr_assert_eq(purge_queue_destroy(q), 0);
	cr_assert(fake_range_purged(&fk, pg(0), PAGE, 1), "destroy flushed");
	cr_assert_eq(purge_enqueue(q, (void *)pg(1), PAGE), -EINVAL);
	cr_assert_eq(purge_cancel(q, (void *)pg(1), PAGE), -EINVAL);
	cr_assert_eq(purge_flush(q), -EINVAL);
	cr_assert_eq(purge_flush_older(q, 1), -EINVAL);
	cr_assert_eq(purge_flush_to(q, 0), -EINVAL);
	cr_assert_eq(purge_set_batch(q, 8), -EINVAL);
	cr_assert_eq(purge_get_batch(q), 0);
	cr_assert_eq(purge_oldest_ns(q), 0);
	purge_get_stats(q, &st);
	cr_assert_eq(st.enqueued_ranges, 0, "stats of a destroyed queue are zero");
	cr_assert_eq(purge_queue_destroy(q), -EINVAL, "a second destroy");
	purge_fork_prepare(q); /* no-ops: no lock to take */
	purge_fork_parent(q);
	purge_fork_child(q);
	cr_assert(fake_range_purged(&fk, pg(1), PAGE, 0));
}

Test(queue, a_destroyed_queue_answers_einval)
{
	destroyed_answers_einval(0);
}

Test(queue, a_destroyed_locked_queue_answers_einval)
{
	destroyed_answers_einval(PURGE_LOCKED);
}
