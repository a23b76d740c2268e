/* SPDX-License-Identifier: MIT */
/*
 * The queue's statistics: latency, call sizes, a demotion seen by every
 * queue, and purge_stats_format's text and JSON.  On the fake kernel.
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

/* ---- stats: latency, call sizes, the printer ----------------------------- */

Test(queue, stats_time_flushes_and_calls)
{
	struct purge_config cfg = {.batch = 4};
	purge_queue *q = mkq(&cfg);

	fk.call_ns = 1000;
	for (size_t i = 0; i < 9; i++) /* calls of 4, 4 and 1 iovecs */
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	fk.call_ns = 5000;
	cr_assert_eq(purge_enqueue(q, (void *)pg(100), PAGE), 0);
	cr_assert_eq(purge_flush(q), 0);
	struct purge_stats st = stats_of(q);
	cr_assert_eq(st.flush_ns, 3 * 1000 + 5000);
	cr_assert_eq(st.flush_max_ns, 5000);
	cr_assert_eq(st.call_max_ns, 5000);
	cr_assert_eq(st.call_iovecs, 10);
	cr_assert_eq(st.calls_by_iovecs[0], 2, "1 iovec");
	cr_assert_eq(st.calls_by_iovecs[1], 2, "2-7 iovecs");
	for (int b = 2; b < PURGE_STATS_IOV_BUCKETS; b++)
		cr_assert_eq(st.calls_by_iovecs[b], 0);
}

/* Another queue's demotion shows in this queue's stats at once. */
Test(queue, stats_backend_follows_a_demotion)
{
	purge_queue *a = mkq(NULL), *b = mkq(NULL);

	cr_assert_eq(stats_of(a).backend, PURGE_BACKEND_VECTORED);
	fk.refuse = -ENOSYS;
	cr_assert_eq(purge_enqueue(b, (void *)pg(0), PAGE), 0);
	cr_assert_eq(purge_flush(b), 0);
	cr_assert_eq(stats_of(b).backend, PURGE_BACKEND_LOOP);
	cr_assert_eq(stats_of(a).backend, PURGE_BACKEND_LOOP, "a has not flushed since");
}

Test(queue, stats_format_text_and_json)
{
	purge_queue *q = mkq(NULL);
	char buf[4096], small[16];

	fake_fail_page(&fk, pg(2), -ENOMEM);
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
	cr_assert_eq(purge_flush(q), 1);
	struct purge_stats st = stats_of(q);
	int n = purge_stats_format(&st, buf, sizeof(buf), 0);
	cr_assert_gt(n, 0);
	cr_assert_eq((size_t)n, strlen(buf));
	cr_assert_not_null(strstr(buf, "enqueued_ranges 3\n"));
	cr_assert_not_null(strstr(buf, "failed_bytes 4096\n"));
	cr_assert_not_null(strstr(buf, "backend vectored\n"));
	cr_assert_not_null(strstr(buf, "calls_by_iovecs 1:1 2-7:1 "), "%s", buf);
	int j = purge_stats_format(&st, buf, sizeof(buf), PURGE_FORMAT_JSON);
	cr_assert_eq((size_t)j, strlen(buf));
	cr_assert_eq(buf[0], '{');
	cr_assert_eq(buf[j - 2], '}');
	cr_assert_not_null(strstr(buf, "\"purged_bytes\":8192,"));
	cr_assert_not_null(strstr(buf, "\"zeroed\":true"));
	cr_assert_not_null(strstr(buf, "\"calls_by_iovecs\":{\"1\":1,\"2-7\":1,"));
	/* snprintf style: the length needed, cut and terminated */
	cr_assert_eq(purge_stats_format(&st, small, sizeof(small), 0), n);
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	cr_assert_eq(strncmp(small, "enqueued_ranges", 15), 0);
	cr_assert_eq(purge_stats_format(&st, NULL, 0, 0), n);
	cr_assert_eq(purge_stats_format(NULL, buf, sizeof(buf), 0), -EINVAL);
	cr_assert_eq(purge_stats_format(&st, NULL, 5, 0), -EINVAL);
	cr_assert_eq(purge_stats_format(&st, buf, sizeof(buf), 1u << 5), -EINVAL);
}
