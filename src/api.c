/* SPDX-License-Identifier: MIT */
/*
 * Public entry points: argument checks, the optional queue lock and the
 * re-entry guard (calls from on_failure answer -EBUSY).  Functions report
 * through their return value and leave errno as they found it: the system
 * calls of a flush save and restore it (flush.c), setup does it here.
 */
#include "compat.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "trace.h"

/* Highest user address + 1 where the ABI fixes it; elsewhere the kernel's
 * EFAULT on such a range is handled by flush.c. */
#if defined(__x86_64__) || (defined(__riscv) && __riscv_xlen == 64)
#define USER_TOP ((uintptr_t)1 << 56) /* 5-level paging; 4-level stops at 2^47 */
#elif defined(__aarch64__)
#define USER_TOP ((uintptr_t)1 << 52)
#else
#define USER_TOP UINTPTR_MAX
#endif

int purge_version(void)
{
	return PURGE_VERSION;
}

/* Takes the queue: its lock, unless the caller is inside its flush.
 * On 0 the caller must leave(). */
static int enter(purge_queue *q)
{
	if (!purge__alive(q))
		return -EINVAL;
	purge__lock(q);
	if (q->busy) {
		purge__unlock(q);
		return -EBUSY;
	}
	return 0;
}

static int leave(purge_queue *q, int ret)
{
	purge__unlock(q);
	return ret;
}

int purge_queue_init(purge_queue **qp, void *mem, size_t size, const struct purge_config *cfg)
{
	int saved = errno;
	int ret = purge__queue_init_backend(qp, mem, size, cfg, &purge__sys_backend);

	errno = saved;
	return ret;
}

int purge_queue_create(purge_queue **qp, const struct purge_config *cfg)
{
	int saved = errno;
	size_t bytes = purge_queue_bytes(cfg ? cfg->capacity : 0);

	if (!qp || !bytes)
		return -EINVAL;
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		errno = saved;
		return -ENOMEM;
	}
	int ret = purge__queue_init_backend(qp, mem, bytes, cfg, &purge__sys_backend);
	if (ret)
		munmap(mem, bytes);
	else
		(*qp)->map_len = bytes;
	errno = saved;
	return ret;
}

int purge_queue_destroy(purge_queue *q)
{
	int saved = errno, ret = enter(q);

	if (ret)
		return ret;
	ret = purge__drain_all(q, false);
	q->magic = 0; /* later calls on the memory answer -EINVAL */
	purge__unlock(q);
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_destroy(&q->lock);
	if (q->map_len)
		munmap(q, q->map_len);
	errno = saved;
	return ret;
}

/* Validate and page-trim [addr, addr+len) into [*s, *e); 1 = nothing left. */
static int normalise(const purge_queue *q, void *addr, size_t len, uintptr_t *s, uintptr_t *e)
{
	uintptr_t a = (uintptr_t)addr, mask = q->page - 1;

	if (!addr || a + len < a || a + len > USER_TOP)
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

/* Worth asking drain.c whether a threshold is crossed? */
static bool may_be_over(const purge_queue *q)
{
	return q->s.live >= q->set.capacity || q->set.max_delay_ns ||
	       (q->set.max_pending_bytes && q->st.pending_bytes > q->set.max_pending_bytes);
}

int purge_enqueue(purge_queue *q, void *addr, size_t len)
{
	int ret = enter(q);
	uintptr_t s, e;

	if (ret || len == 0)
		return ret ? ret : leave(q, 0);
	ret = normalise(q, addr, len, &s, &e);
	if (ret)
		return leave(q, ret < 0 ? ret : 0);
	if (purge__store_room(&q->s) < 1) /* only after cancels split ranges */
		purge__drain_room(q, 1);
	uint64_t now = purge__now(q, true);
	purge__store_add(&q->s, s, e, now);
	purge__books_enqueued(q, e - s);
	if (may_be_over(q))
		purge__drain_auto(q, now);
	return leave(q, 0);
}

int purge_cancel(purge_queue *q, void *addr, size_t len)
{
	int ret = enter(q);
	uintptr_t a = (uintptr_t)addr;

	if (ret || len == 0)
		return ret ? ret : leave(q, 0);
	if (a + len < a || a + len > UINTPTR_MAX - (q->page - 1))
		return leave(q, -EINVAL);
	/* widen outward: cancelling too much is safe, too little is not */
	uintptr_t s = a & ~(q->page - 1), e = (a + len + q->page - 1) & ~(q->page - 1);
	struct purge__cut cut;
	/* settles the oldest: some of them may be the ranges to split */
	for (uint32_t need; (need = purge__store_cancel(&q->s, s, e, &cut)) != 0;)
		purge__drain_room(q, need);
	purge__books_cancelled(q, &cut);
	PURGE_TRACE4(cancel, q, s, e - s, cut.bytes);
	if (q->s.novl > PURGE_OVL_MAX)
		purge__drain_ovl(q);
	return leave(q, cut.bytes != 0);
}

int purge_flush(purge_queue *q)
{
	int ret = enter(q);

	return ret ? ret : leave(q, purge__drain_all(q, false));
}

int purge_flush_older(purge_queue *q, uint64_t age_ns)
{
	int ret = enter(q);

	return ret ? ret : leave(q, purge__drain_older(q, age_ns));
}

int purge_flush_to(purge_queue *q, size_t keep_bytes)
{
	int ret = enter(q);

	return ret ? ret : leave(q, purge__drain_to(q, keep_bytes));
}

uint64_t purge_oldest_ns(const purge_queue *q)
{
	if (!purge__alive(q))
		return 0;
	purge__lock(q);
	uint64_t t = purge__store_oldest(&q->s);
	purge__unlock(q);
	return t;
}

int purge_set_batch(purge_queue *q, unsigned batch)
{
	int ret = enter(q);

	if (ret)
		return ret;
	if (batch == 0 || batch > PURGE_BATCH_MAX)
		return leave(q, -EINVAL);
	q->set.batch = batch;
	return leave(q, 0);
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
	out->advice = q->set.advice;
	out->backend = q->backend;
	/* another queue may have demoted the process since our last flush */
	int now =
	    q->set.mode == PURGE_MODE_AUTO ? q->be->path(q->be->ctx, q->set.advice, false) : 0;
	if (now > 0)
		out->backend = now;
	out->zeroed = purge__advice_zeroes(q->set.advice);
	out->env_ignored = q->set.env_ignored;
	purge__unlock(q);
}

int purge_backend(int advice)
{
	int saved = errno, ret;

	if (advice == 0)
		advice = MADV_DONTNEED;
	if (!purge__advice_supported(advice))
		return -EINVAL;
	if (purge__env_mode() == PURGE_MODE_LOOP)
		ret = PURGE_BACKEND_LOOP;
	else
		ret = purge__probe(advice);
	errno = saved;
	return ret;
}
