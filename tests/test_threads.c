/* SPDX-License-Identifier: MIT */
/*
 * PURGE_LOCKED queues shared by many threads, and one queue per thread:
 * accounting stays exact, and cancelled (live) memory keeps its bytes.
 */
#include <pthread.h>

#include "common.h"
#include "mem.h"

#define THREADS 4
#define SLOTS 256 /* pages per thread */

struct worker {
	purge_queue *q;
	char *r;
	unsigned seed;
	unsigned ops;
};

static unsigned next_rand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Each thread owns its pages: a page is "free" (enqueued, may be purged) or
 * "live" (cancelled, then written with its pattern, which must survive). */
static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned char live[SLOTS] = {0};

	for (unsigned op = 0; op < w->ops; op++) {
		unsigned i = next_rand(&w->seed) % SLOTS, k = next_rand(&w->seed) % 64;
		char *p = w->r + (size_t)i * PAGE;
		if (k < 32 && live[i]) {
			cr_assert(page_all(p, pattern_of(i)), "live page %u lost its bytes", i);
			cr_assert_eq(purge_enqueue(w->q, p, PAGE), 0);
			live[i] = 0;
		} else if (k < 63 && !live[i]) {
			cr_assert_eq(purge_cancel(w->q, p, PAGE), 0);
			memset(p, pattern_of(i), PAGE);
			live[i] = 1;
		} else if (k == 63) {
			cr_assert_geq(purge_flush(w->q), 0);
		}
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (live[i])
			cr_assert(page_all(w->r + (size_t)i * PAGE, pattern_of(i)));
	return NULL;
}

static void run(purge_queue **qs, unsigned ops)
{
	pthread_t t[THREADS];
	struct worker w[THREADS];

	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){qs[i], map_region(SLOTS), i * 7919u + 1, ops};
		cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < THREADS; i++) {
		assert_identity(qs[i]);
		cr_assert_eq(stats_of(qs[i]).failed_ranges, 0);
	}
}

Test(threads, one_locked_queue_shared)
{
	struct purge_config cfg = {.flags = PURGE_LOCKED, .capacity = 64};
	purge_queue *q, *qs[THREADS];

	cr_assert_eq(purge_queue_create(&q, &cfg), 0);
	for (unsigned i = 0; i < THREADS; i++)
		qs[i] = q;
	run(qs, 100000);
	struct purge_stats st = stats_of(q);
	cr_assert_gt(st.purged_bytes, 0);
	cr_assert_gt(st.cancelled_bytes, 0);
	cr_assert_eq(purge_queue_destroy(q), 0);
}

Test(threads, one_queue_per_thread)
{
	purge_queue *qs[THREADS];

	for (unsigned i = 0; i < THREADS; i++)
		cr_assert_eq(purge_queue_create(&qs[i], NULL), 0);
	run(qs, 100000);
	for (unsigned i = 0; i < THREADS; i++)
		cr_assert_eq(purge_queue_destroy(qs[i]), 0);
}
