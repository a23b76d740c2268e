/* SPDX-License-Identifier: MIT */
/*
 * The queue and threads: cancellation held off while on_failure runs, and
 * a PURGE_LOCKED queue that waits for its lock on every call.  On the fake
 * kernel.
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

/* ---- thread cancellation inside on_failure ------------------------------- */

static pthread_barrier_t cancel_bar;

static void cancel_point(void *arg, void *addr, size_t len, int err)
{
	(void)arg, (void)addr, (void)len, (void)err;
	pthread_testcancel(); /* a cancellation point inside the callback */
}

static void *flush_then_exit(void *arg)
{
	purge_queue *q = arg;

	pthread_barrier_wait(&cancel_bar); /* cancelled by now */
	purge_flush(q);
	pthread_testcancel();
	return NULL;
}

/* Cancellation is held off while on_failure runs: the flush finishes, the
 * queue is not left busy (or locked), the thread goes at its next
 * cancellation point. */
Test(queue, cancellation_waits_for_the_callback)
{
	for (int locked = 0; locked < 2; locked++) {
		struct purge_config cfg = {.flags = locked ? PURGE_LOCKED : 0};
		size_t bytes = purge_queue_bytes(0);
		void *mem = test_alloc(bytes);
		purge_queue *q;
		pthread_t t;
		void *res;
		cfg.on_failure = cancel_point;
		cr_assert_eq(purge__queue_init_backend(&q, mem, bytes, &cfg, &fk.be), 0);
		fake_fail_page(&fk, pg(0), -ENOMEM);
		for (size_t i = 0; i < 4; i++)
			cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
		pthread_barrier_init(&cancel_bar, NULL, 2);
		cr_assert_eq(pthread_create(&t, NULL, flush_then_exit, q), 0);
		cr_assert_eq(pthread_cancel(t), 0);
		pthread_barrier_wait(&cancel_bar);
		cr_assert_eq(pthread_join(t, &res), 0);
		cr_assert_eq(res, PTHREAD_CANCELED);
		pthread_barrier_destroy(&cancel_bar);
		cr_assert_eq(stats_of(q).pending_ranges, 0, "the flush finished");
		cr_assert_eq(purge_enqueue(q, (void *)pg(20), PAGE), 0, "not left busy");
		assert_identity(q);
		fake_fail_page(&fk, pg(0), 0);
	}
}

/* Every call on a PURGE_LOCKED queue waits for its lock, the plain
 * enqueue's fast path included: a call made while another thread holds
 * the lock (here through purge_fork_prepare) has not returned when the
 * holder lets go.  A call that skipped the lock returns at once; one that
 * takes it can never be seen done early, so the wait only gives the
 * thread time to run. */
struct lock_call {
	purge_queue *q;
	int op;
	atomic_int done;
};

static void *lock_call_run(void *arg)
{
	struct lock_call *c = arg;

	if (c->op == 0)
		cr_assert_eq(purge_enqueue(c->q, (void *)pg(8), PAGE), 0);
	else if (c->op == 1)
		cr_assert_geq(purge_cancel(c->q, (void *)pg(8), PAGE), 0);
	else
		cr_assert_geq(purge_flush(c->q), 0);
	atomic_store(&c->done, 1);
	return NULL;
}

Test(queue, a_locked_queue_waits_for_its_lock_on_every_call)
{
	struct purge_config cfg = {.flags = PURGE_LOCKED};
	purge_queue *q = mkq(&cfg);

	for (int op = 0; op < 3; op++) {
		struct lock_call c = {.q = q, .op = op};
		pthread_t t;

		/* not into an empty store: the fast path takes only the rest */
		cr_assert_eq(purge_enqueue(q, (void *)pg(20), PAGE), 0);
		purge_fork_prepare(q);
		cr_assert_eq(pthread_create(&t, NULL, lock_call_run, &c), 0);
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
		int early = atomic_load(&c.done);
		purge_fork_parent(q);
		cr_assert_eq(pthread_join(t, NULL), 0);
		cr_assert_eq(early, 0, "call %d returned while another thread held the lock", op);
		cr_assert_eq(atomic_load(&c.done), 1);
	}
	cr_assert_eq(purge_queue_destroy(q), 0);
}
