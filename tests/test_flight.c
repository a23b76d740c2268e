/* SPDX-License-Identifier: MIT */
/*
 * Shared queues never hold their lock across the kernel (flight.h): while
 * thread A's flush is inside a system call of the fake kernel, thread B
 * enqueues, cancels, reads stats, flushes and forks, and each call must do
 * exactly what the contract says: a cancel of a range no call has taken
 * takes it out (it is never purged), a cancel of the range in the kernel
 * waits for that call and answers 0 (purged), a flush waits for A's, an
 * automatic flush B would start is left to A, a fork child finishes A's
 * round.  The waits are observed through the flight's own counters, never
 * through time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIXTURE_BASE   ((uintptr_t)0x100000000000ull)
#define FIXTURE_NPAGES 256
#include "fixture.h"

TestSuite(flight, .init = setup, .fini = teardown);

/* What thread B does during A's first system call, and what it saw. */
struct other {
	purge_queue *q;
	int op; /* OP_* */
	uintptr_t addr;
	size_t len;
	atomic_int done;
	int ret;
};

enum { OP_CANCEL, OP_FLUSH, OP_ENQUEUE, OP_STATS, OP_SET_BATCH };

static struct other b;
static atomic_int calls_seen;
static pthread_t bt;
static bool b_started;

static void *other_main(void *arg)
{
	struct other *o = arg;
	struct purge_stats st;

	switch (o->op) {
	case OP_CANCEL:
		o->ret = purge_cancel(o->q, (void *)o->addr, o->len);
		break;
	case OP_FLUSH:
		o->ret = purge_flush(o->q);
		break;
	case OP_ENQUEUE:
		o->ret = purge_enqueue(o->q, (void *)o->addr, o->len);
		break;
	case OP_STATS:
		purge_get_stats(o->q, &st);
		o->ret = st.enqueued_bytes ==
		         st.purged_bytes + st.cancelled_bytes + st.failed_bytes + st.pending_bytes;
		break;
	default:
		o->ret = purge_set_batch(o->q, 1);
	}
	atomic_store(&o->done, 1);
	return NULL;
}

/* Spins (yielding) until f() holds; a bounded loop, never a time check:
 * a condition that never comes fails the test. */
static bool eventually(bool (*f)(void))
{
	for (long i = 0; i < 2000000; i++) {
		if (f())
			return true;
		sched_yield();
	}
	return false;
}

static bool b_done(void)
{
	return atomic_load(&b.done);
}

static bool b_waits_for_zone(void)
{
	pthread_mutex_lock(&b.q->fl.m);
	bool w = b.q->fl.waiters > 0;
	pthread_mutex_unlock(&b.q->fl.m);
	return w;
}

/* B waits for A's flush: it is parked on the flight's condition, which
 * only the end of A's flush satisfies (nothing else moves it). */
static bool b_blocked_long(void)
{
	for (int i = 0; i < 1000; i++)
		sched_yield();
	return !atomic_load(&b.done);
}

/* A's first system call: start B, and see what B does while A is here. */
static bool (*expect)(void);
static bool seen;

static void first_call(void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&calls_seen, 1) != 0)
		return;
	cr_assert_eq(pthread_create(&bt, NULL, other_main, &b), 0);
	b_started = true;
	seen = eventually(expect);
}

static void run_other(purge_queue *q, int op, uintptr_t addr, size_t len, bool (*e)(void))
{
	b = (struct other){.q = q, .op = op, .addr = addr, .len = len};
	atomic_store(&calls_seen, 0);
	b_started = false;
	expect = e;
	fk.in_call = first_call;
}

static void join_other(void)
{
	cr_assert(b_started, "A made no system call");
	pthread_join(bt, NULL);
	fk.in_call = NULL;
}

static purge_queue *shared_queue(unsigned batch)
{
	struct purge_config cfg = {.batch = batch, .flags = PURGE_LOCKED, .capacity = 64};

	return mkq(&cfg);
}

static void enqueue_scattered(purge_queue *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(2 * i), PAGE), 0);
}

Test(flight, cancel_of_what_no_call_took_is_never_purged)
{
	purge_queue *q = shared_queue(2);

	enqueue_scattered(q, 6); /* calls: {0,2} {4,6} {8,10} */
	run_other(q, OP_CANCEL, pg(6), PAGE, b_done);
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen, "the cancel waited for a call it is not in");
	cr_assert_eq(b.ret, 1, "it was pending");
	cr_assert_eq(fake_purged(&fk, pg(6)), 0, "a cancelled page was purged");
	cr_assert(fake_range_purged(&fk, pg(0), PAGE, 1) &&
	          fake_range_purged(&fk, pg(10), PAGE, 1));
	struct purge_stats st;
	purge_get_stats(q, &st);
	cr_assert_eq(st.pending_ranges, 0, "a cancelled range was booked again");
	cr_assert_eq(fk.violations, 0, "an emptied range went to the kernel");
	assert_identity(q);
}

Test(flight, cancel_of_the_call_in_the_kernel_waits_for_it_and_answers_purged)
{
	purge_queue *q = shared_queue(2);

	enqueue_scattered(q, 6);
	run_other(q, OP_CANCEL, pg(2), PAGE, b_waits_for_zone);
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen, "the cancel did not wait for the call in the kernel");
	cr_assert_eq(b.ret, 0, "the page was purged by that call: 0");
	cr_assert_eq(fake_purged(&fk, pg(2)), 1);
	assert_identity(q);
}

Test(flight, cancel_splits_a_range_no_call_took)
{
	purge_queue *q = shared_queue(1);

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
	cr_assert_eq(purge_enqueue(q, (void *)pg(10), 4 * PAGE), 0);
	run_other(q, OP_CANCEL, pg(11), PAGE, b_done);
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen);
	cr_assert_eq(b.ret, 1);
	cr_assert_eq(fake_purged(&fk, pg(11)), 0, "the cancelled page was purged");
	cr_assert(fake_range_purged(&fk, pg(10), PAGE, 1), "the left part was not purged");
	cr_assert(fake_range_purged(&fk, pg(12), 2 * PAGE, 1), "the right part was not purged");
	struct purge_stats st;
	purge_get_stats(q, &st);
	cr_assert_eq(st.pending_bytes, 0);
	cr_assert_eq(st.pending_ranges, 0);
	cr_assert_eq(st.cancelled_bytes, PAGE);
	assert_identity(q);
}

Test(flight, other_threads_enqueue_read_stats_and_set_the_batch_meanwhile)
{
	static const int ops[] = {OP_ENQUEUE, OP_STATS, OP_SET_BATCH};

	for (unsigned k = 0; k < 3; k++) {
		purge_queue *q = shared_queue(2);
		enqueue_scattered(q, 6);
		run_other(q, ops[k], pg(100), PAGE, b_done);
		cr_assert_eq(purge_flush(q), 0);
		join_other();
		cr_assert(seen, "op %d waited for the flush", ops[k]);
		cr_assert_eq(b.ret, ops[k] == OP_STATS ? 1 : 0);
		assert_identity(q);
		cr_assert_eq(purge_flush(q), 0);
	}
}

Test(flight, a_second_flush_waits_for_the_first)
{
	purge_queue *q = shared_queue(2);

	enqueue_scattered(q, 6);
	run_other(q, OP_FLUSH, 0, 0, b_blocked_long);
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen, "the second flush did not wait");
	cr_assert_eq(b.ret, 0);
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1, "page %zu", 2 * i);
	assert_identity(q);
}

Test(flight, an_automatic_flush_of_another_thread_is_left_to_the_flusher)
{
	struct purge_config cfg = {.batch = 2, .flags = PURGE_LOCKED, .max_pending_bytes = PAGE};
	purge_queue *q = mkq(&cfg);
	struct purge_stats st;

	cr_assert_eq(purge_enqueue(q, (void *)pg(0), PAGE), 0);
	run_other(q, OP_ENQUEUE, pg(100), 2 * PAGE, b_done); /* crosses the threshold */
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen, "the enqueue waited for the flush");
	purge_get_stats(q, &st);
	cr_assert_eq(st.pending_bytes, 0, "the flusher left B's threshold crossed");
	cr_assert(fake_range_purged(&fk, pg(100), 2 * PAGE, 1));
	assert_identity(q);
}

/* on_failure of a call made without the lock: reported once, exactly; the
 * flusher's own calls from it answer -EBUSY, B's do not. */
static purge_queue *busy_q;
static int busy_ret;

static void on_failure_reenter(void *arg, void *addr, size_t len, int err)
{
	record_failure(arg, addr, len, err);
	busy_ret = purge_flush(busy_q);
}

Test(flight, a_failure_in_a_call_without_the_lock_is_reported_once)
{
	struct purge_config cfg = {.batch = 4, .flags = PURGE_LOCKED};
	cfg.on_failure = on_failure_reenter;
	cfg.arg = &fails;
	size_t bytes = purge_queue_bytes(0);
	void *mem = test_alloc(bytes);
	purge_queue *q;
	cr_assert_eq(purge__queue_init_backend(&q, mem, bytes, &cfg, &fk.be), 0);
	busy_q = q;

	enqueue_scattered(q, 8);
	fake_fail_page(&fk, pg(4), -ENOMEM);
	run_other(q, OP_ENQUEUE, pg(100), PAGE, b_done);
	cr_assert_eq(purge_flush(q), 1);
	join_other();
	cr_assert(seen);
	cr_assert_eq(b.ret, 0, "B's enqueue was refused during A's flush");
	cr_assert_eq(busy_ret, -EBUSY, "the flusher's own call from on_failure");
	cr_assert_eq(fails.n, 1);
	cr_assert_eq((uintptr_t)fails.f[0].addr, pg(4));
	cr_assert_eq(fails.f[0].len, PAGE);
	cr_assert_eq(fails.f[0].err, -ENOMEM);
	assert_identity(q);
}

/* ---- fork while a call is in the kernel ---------------------------------- */

static bool fork_requested(void)
{
	return b.q->fl.fork;
}

static void *forker(void *arg)
{
	struct other *o = arg;
	purge_queue *q = o->q;

	purge_fork_prepare(q); /* waits for A's call, parks A after it */
	pid_t pid = fork();
	if (pid == 0) {
		purge_fork_child(q);
		struct purge_stats st;
		purge_get_stats(q, &st);
		int ok = st.pending_bytes == 0 && !q->busy;
		for (size_t i = 0; i < 6; i++)
			ok = ok && fake_purged(&fk, pg(2 * i)) == 1;
		_exit(ok ? 0 : 1);
	}
	purge_fork_parent(q);
	int status = 0;
	waitpid(pid, &status, 0);
	o->ret = WIFEXITED(status) ? WEXITSTATUS(status) : 99;
	atomic_store(&o->done, 1);
	return NULL;
}

static void first_call_forks(void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&calls_seen, 1) != 0)
		return;
	cr_assert_eq(pthread_create(&bt, NULL, forker, &b), 0);
	b_started = true;
	seen = eventually(fork_requested);
}

Test(flight, a_fork_while_a_call_is_in_the_kernel_gives_a_settled_child)
{
	purge_queue *q = shared_queue(2);

	enqueue_scattered(q, 6);
	run_other(q, 0, 0, 0, fork_requested);
	fk.in_call = first_call_forks;
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen, "prepare did not ask the flusher to park");
	cr_assert_eq(b.ret, 0, "the child's queue was not settled (status %d)", b.ret);
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1);
	assert_identity(q);
}

/* ---- short rounds -------------------------------------------------------- */

/* A shared queue's flush takes its ranges out a few calls' worth at a time
 * (4 * batch), so that no hold of the lock is O(n): while its first call
 * is in the kernel, the rest are still in the store. */
static uint32_t live_in_first_call;

static void first_call_counts(void *arg)
{
	purge_queue *q = arg;

	if (atomic_fetch_add(&calls_seen, 1) != 0)
		return;
	pthread_mutex_lock(&q->lock);
	live_in_first_call = purge__store_live(&q->s);
	pthread_mutex_unlock(&q->lock);
}

Test(flight, a_shared_flush_takes_a_few_calls_worth_at_a_time)
{
	purge_queue *q = shared_queue(2);
	struct purge_stats st;

	enqueue_scattered(q, 40);
	atomic_store(&calls_seen, 0);
	fk.in_call = first_call_counts;
	fk.in_call_arg = q;
	cr_assert_eq(purge_flush(q), 0);
	fk.in_call = NULL;
	cr_assert_eq(live_in_first_call, 40 - 4 * 2, "the first round took %u of 40",
	             40 - live_in_first_call);
	for (size_t i = 0; i < 40; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1, "page %zu", 2 * i);
	purge_get_stats(q, &st);
	cr_assert_eq(st.pending_ranges, 0);
	cr_assert_eq(st.pmadv_calls, 20);
	assert_identity(q);
}

/* Another thread enqueues one page during each of A's first 20 calls: A's
 * flush settles what was pending when it began and ends; what came later
 * waits for the next flush (rounds are taken after B's enqueues, so a
 * flush that took "all there is" would run on as long as B enqueued). */
static purge_queue *late_q;

static void *enqueue_late(void *arg)
{
	size_t k = (size_t)(uintptr_t)arg;

	cr_assert_eq(purge_enqueue(late_q, (void *)pg(101 + 2 * k), PAGE), 0);
	return NULL;
}

static void each_call_enqueues(void *arg)
{
	pthread_t t;
	int k = atomic_fetch_add(&calls_seen, 1);

	(void)arg;
	if (k >= 20)
		return;
	cr_assert_eq(pthread_create(&t, NULL, enqueue_late, (void *)(uintptr_t)k), 0);
	pthread_join(t, NULL);
}

Test(flight, a_shared_flush_ends_though_others_enqueue_meanwhile)
{
	purge_queue *q = shared_queue(2);
	struct purge_stats st;

	late_q = q;
	enqueue_scattered(q, 41); /* the last round is one range short */
	atomic_store(&calls_seen, 0);
	fk.in_call = each_call_enqueues;
	cr_assert_eq(purge_flush(q), 0);
	fk.in_call = NULL;
	purge_get_stats(q, &st);
	cr_assert_eq(st.pending_ranges, 20, "the flush took %u pages enqueued after it began",
	             20 - (unsigned)st.pending_ranges);
	for (size_t k = 0; k < 20; k++)
		cr_assert_eq(fake_purged(&fk, pg(101 + 2 * k)), 0, "late page %zu purged", k);
	for (size_t i = 0; i < 41; i++)
		cr_assert_eq(fake_purged(&fk, pg(2 * i)), 1, "page %zu", 2 * i);
	assert_identity(q);
}

/* A cancel that splits a range the flush has not taken yet: both parts
 * were pending when the flush began, and it settles both. */
Test(flight, a_shared_flush_settles_both_parts_of_a_range_split_meanwhile)
{
	purge_queue *q = shared_queue(1);
	struct purge_stats st;

	for (size_t i = 0; i < 12; i++)
		cr_assert_eq(purge_enqueue(q, (void *)pg(4 * i), 3 * PAGE), 0);
	run_other(q, OP_CANCEL, pg(41), PAGE, b_done); /* the middle of the 11th */
	cr_assert_eq(purge_flush(q), 0);
	join_other();
	cr_assert(seen);
	cr_assert_eq(b.ret, 1);
	cr_assert_eq(fake_purged(&fk, pg(41)), 0, "the cancelled page was purged");
	cr_assert(fake_range_purged(&fk, pg(40), PAGE, 1), "the left part was left");
	cr_assert(fake_range_purged(&fk, pg(42), PAGE, 1), "the right part was left");
	purge_get_stats(q, &st);
	cr_assert_eq(st.pending_ranges, 0);
	assert_identity(q);
}

/* ---- a caller's lock ----------------------------------------------------- */

static pthread_mutex_t mine = PTHREAD_MUTEX_INITIALIZER;

static void lock_mine(void *arg)
{
	pthread_mutex_lock(arg);
}

static void unlock_mine(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *cancel_under_mine(void *arg)
{
	struct other *o = arg;

	pthread_mutex_lock(&mine);
	o->ret = purge_cancel(o->q, (void *)o->addr, o->len);
	pthread_mutex_unlock(&mine);
	atomic_store(&o->done, 1);
	return NULL;
}

static void first_call_mine(void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&calls_seen, 1) != 0)
		return;
	cr_assert_eq(pthread_create(&bt, NULL, cancel_under_mine, &b), 0);
	b_started = true;
	seen = eventually(expect);
}

Test(flight, the_callers_lock_is_let_go_in_the_kernel)
{
	struct purge_config cfg = {.batch = 2};
	purge_queue *q = mkq(&cfg);
	const struct purge_lock lk = {lock_mine, unlock_mine, &mine};

	cr_assert_eq(purge_set_lock(q, &lk), 0);
	pthread_mutex_lock(&mine);
	enqueue_scattered(q, 6);
	run_other(q, OP_CANCEL, pg(2), PAGE, b_waits_for_zone);
	fk.in_call = first_call_mine;
	cr_assert_eq(purge_flush(q), 0);
	pthread_mutex_unlock(&mine);
	join_other();
	cr_assert(seen, "B could not take the caller's lock, or did not wait for the call");
	cr_assert_eq(b.ret, 0);
	cr_assert_eq(fake_purged(&fk, pg(2)), 1);
	assert_identity(q);
}

Test(flight, set_lock_refuses_what_it_cannot_do)
{
	struct purge_config locked = {.flags = PURGE_LOCKED};
	const struct purge_lock half = {lock_mine, NULL, &mine};
	const struct purge_lock lk = {lock_mine, unlock_mine, &mine};

	cr_assert_eq(purge_set_lock(NULL, &lk), -EINVAL);
	cr_assert_eq(purge_set_lock(mkq(&locked), &lk), -EINVAL);
	cr_assert_eq(purge_set_lock(mkq(NULL), &half), -EINVAL);
	purge_queue *q = mkq(NULL);
	cr_assert_eq(purge_set_lock(q, &lk), 0);
	cr_assert_eq(purge_set_lock(q, NULL), 0);
}
