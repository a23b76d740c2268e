/* SPDX-License-Identifier: MIT */
/*
 * Public entry points of a queue's calls: argument checks, the optional
 * queue lock and the re-entry guard (calls from on_failure answer -EBUSY),
 * then one call into drain.c for whatever changes the queue; the stats and
 * the unlocked fast enqueue also read the store through its accessors, and
 * purge_backend() asks advice.c, config.c and the backend.  Functions
 * report through their return value and leave errno as they found it: the
 * system calls of a flush save and restore it (flush.c).  A queue's
 * lifetime is in setup.c.
 */
#include "compat.h"

#include <errno.h>
#include <string.h>

#include "drain.h"
#include "internal.h"

/* Highest user address + 1 where the ABI fixes it; elsewhere the kernel's
 * EFAULT on such a range is handled by flush.c. */
#if defined(__x86_64__) || (defined(__riscv) && __riscv_xlen == 64)
#define API_USER_TOP ((uintptr_t)1 << 56) /* 5-level paging; 4-level stops at 2^47 */
#elif defined(__aarch64__)
#define API_USER_TOP ((uintptr_t)1 << 52)
#else
#define API_USER_TOP UINTPTR_MAX
#endif

int purge_version(void)
{
	return PURGE_VERSION;
}

/* On 0 the caller must api_leave(). */
static int api_enter(purge_queue *q)
{
	return purge__enter(q);
}

/* A shared queue's flush ended: the thresholds others crossed meanwhile. */
static int api_leave(purge_queue *q, int ret)
{
	if (q->fl.want && !q->busy)
		purge__drain_wanted(q);
	purge__unlock(q);
	return ret;
}

/* Validate and page-trim [addr, addr+len) into [*s, *e); 1 = nothing left. */
static int api_normalise(const purge_queue *q, void *addr, size_t len, uintptr_t *s, uintptr_t *e)
{
	uintptr_t a = (uintptr_t)addr, mask = q->page - 1;

	if (!addr || a + len < a || a + len > API_USER_TOP)
		return -EINVAL;
	if (q->set.flags & PURGE_TRIM) {
		*s = (a + mask) & ~mask;
		*e = (a + len) & ~mask;
		return *e > *s ? 0 : 1;
	}
	if ((a | len) & mask)
		return -EINVAL;
	*s = a;
	*e = a + len;
	return 0;
}

/* Every enqueue but the plain one. */
__attribute__((noinline)) static int api_enqueue(purge_queue *q, void *addr, size_t len)
{
	int ret = api_enter(q);
	uintptr_t s, e;

	if (ret || len == 0)
		return ret ? ret : api_leave(q, 0);
	ret = api_normalise(q, addr, len, &s, &e);
	if (ret == 0)
		purge__drain_enqueue(q, s, e);
	return api_leave(q, ret < 0 ? ret : 0);
}

/* A plain enqueue crossed the count thresholds c. */
__attribute__((noinline)) static int api_enqueue_settle(purge_queue *q, unsigned c)
{
	purge__drain_auto(q, c, 0);
	return 0;
}

/* The enqueue of an aged queue that would otherwise be plain: the clock
 * read, and no lock or normalising (purge_enqueue checked for both). */
__attribute__((noinline)) static int api_enqueue_aged(purge_queue *q, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	uint64_t now = purge__now(q, true);
	int c = purge__drain_enqueue_plain(q, a, a + len, now, true);

	if (c < 0)
		return api_enqueue(q, addr, len);
	if (c)
		purge__drain_auto(q, (unsigned)c, now);
	return 0;
}

/* The common enqueue (an unlocked queue, whole pages, nothing but counts
 * to check) makes no call, so it saves no register; anything else goes
 * the general way. */
int purge_enqueue(purge_queue *q, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	if (!purge__alive(q) || (q->set.flags & PURGE_LOCKED) || q->busy || !a || !len ||
	    a + len < a || a + len > API_USER_TOP || ((a | len) & (q->page - 1)))
		return api_enqueue(q, addr, len);
	if (purge__store_aged(&q->s))
		return api_enqueue_aged(q, addr, len);
	int c = purge__drain_enqueue_plain(q, a, a + len, 0, false);
	if (c < 0)
		return api_enqueue(q, addr, len);
	return c ? api_enqueue_settle(q, (unsigned)c) : 0;
}

int purge_cancel(purge_queue *q, void *addr, size_t len)
{
	int ret = api_enter(q);
	uintptr_t a = (uintptr_t)addr, mask;

	if (ret || len == 0)
		return ret ? ret : api_leave(q, 0);
	mask = q->page - 1;
	if (a + len < a || a + len > UINTPTR_MAX - mask)
		return api_leave(q, -EINVAL);
	/* widen outward: cancelling too much is safe, too little is not */
	return api_leave(q, purge__drain_cancel(q, a & ~mask, (a + len + mask) & ~mask));
}

int purge_flush(purge_queue *q)
{
	int ret = api_enter(q);

	return ret ? ret : api_leave(q, purge__drain_all(q));
}

int purge_flush_older(purge_queue *q, uint64_t age_ns)
{
	int ret = api_enter(q);

	return ret ? ret : api_leave(q, purge__drain_older(q, age_ns));
}

int purge_flush_to(purge_queue *q, size_t keep_bytes)
{
	int ret = api_enter(q);

	return ret ? ret : api_leave(q, purge__drain_to(q, keep_bytes));
}

int purge_flush_due(purge_queue *q, uint64_t age_ns, uint64_t *next_ns)
{
	int ret = api_enter(q);

	if (ret) {
		if (next_ns)
			*next_ns = UINT64_MAX;
		return ret;
	}
	return api_leave(q, purge__drain_due(q, age_ns, next_ns));
}

/* The queue starts keeping ages here if it did not yet: the API's const is
 * the caller's promise, the queue's memory is the library's. */
uint64_t purge_oldest_ns(const purge_queue *q)
{
	if (!purge__alive(q))
		return 0;
	purge__lock(q);
	uint64_t t = purge__drain_oldest((purge_queue *)q);
	purge__unlock(q);
	return t;
}

int purge_set_batch(purge_queue *q, unsigned batch)
{
	int ret = api_enter(q);

	if (ret)
		return ret;
	if (batch == 0 || batch > PURGE_BATCH_MAX)
		return api_leave(q, -EINVAL);
	q->set.batch = batch;
	return api_leave(q, 0);
}

int purge_set_lock(purge_queue *q, const struct purge_lock *lk)
{
	int ret = api_enter(q);

	if (ret)
		return ret;
	if (q->busy)
		return api_leave(q, -EBUSY);
	if ((q->set.flags & PURGE_LOCKED) || (lk && (!lk->lock || !lk->unlock)))
		return api_leave(q, -EINVAL);
	q->guard = lk ? *lk : (struct purge_lock){0};
	return api_leave(q, 0);
}

unsigned purge_get_batch(const purge_queue *q)
{
	if (!purge__alive(q))
		return 0;
	purge__lock(q);
	unsigned b = q->set.batch;
	purge__unlock(q);
	return b;
}

void purge_get_stats(const purge_queue *q, struct purge_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!purge__alive(q))
		return;
	purge__lock(q);
	*out = q->st;
	out->advice = q->set.advice->value;
	/* another queue may have demoted the process since our last flush */
	int now = purge__path(q, false);
	out->backend = now > 0 ? now : q->backend;
	out->zeroed = q->set.advice->zeroes;
	out->held_ranges = purge__store_held(&q->s);
	out->held_bytes = purge__store_held_bytes(&q->s);
	out->env_ignored = q->set.env_ignored;
	purge__unlock(q);
}

/* The process-wide path, through the real kernel's backend. */
int purge_backend(int advice)
{
	const struct purge__backend *be = &purge__sys_backend;
	int saved = errno, ret;

	if (advice == 0)
		advice = MADV_DONTNEED;
	if (!purge__advice_find(advice))
		return -EINVAL;
	if (purge__env_mode() == PURGE_MODE_LOOP)
		ret = PURGE_BACKEND_LOOP;
	else
		ret = be->path(be->ctx, advice, true);
	errno = saved;
	return ret;
}
