/* SPDX-License-Identifier: MIT */
/*
 * Public entry points: argument checks, the optional queue lock, the
 * re-entry guard, and errno preservation (functions report through their
 * return value and leave errno as they found it).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

static void lock(const purge_queue *q)
{
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_lock((pthread_mutex_t *)&q->lock);
}

static void unlock(const purge_queue *q)
{
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_unlock((pthread_mutex_t *)&q->lock);
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
	int saved = errno, ret;

	if (!q)
		return -EINVAL;
	lock(q);
	if (q->busy) {
		unlock(q);
		return -EBUSY;
	}
	ret = purge__flush(q);
	unlock(q);
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_destroy(&q->lock);
	if (q->map_len)
		munmap(q, q->map_len);
	errno = saved;
	return ret;
}

/* Runs op under the queue's lock unless the queue is inside a flush. */
static int guarded(purge_queue *q, int (*op)(purge_queue *, void *, size_t), void *addr, size_t len)
{
	int saved = errno, ret;

	if (!q)
		return -EINVAL;
	lock(q);
	ret = q->busy ? -EBUSY : op(q, addr, len);
	unlock(q);
	errno = saved;
	return ret;
}

int purge_enqueue(purge_queue *q, void *addr, size_t len)
{
	return guarded(q, purge__enqueue, addr, len);
}

int purge_cancel(purge_queue *q, void *addr, size_t len)
{
	return guarded(q, purge__cancel, addr, len);
}

static int flush_op(purge_queue *q, void *addr, size_t len)
{
	(void)addr;
	(void)len;
	return purge__flush(q);
}

int purge_flush(purge_queue *q)
{
	return guarded(q, flush_op, NULL, 0);
}

int purge_set_batch(purge_queue *q, unsigned batch)
{
	if (!q || batch == 0 || batch > PURGE_BATCH_MAX)
		return -EINVAL;
	lock(q);
	q->set.batch = batch; /* a flush in progress keeps planning with it: harmless */
	unlock(q);
	return 0;
}

unsigned purge_get_batch(const purge_queue *q)
{
	if (!q)
		return 0;
	lock(q);
	unsigned b = q->set.batch;
	unlock(q);
	return b;
}

void purge_get_stats(const purge_queue *q, struct purge_stats *out)
{
	if (!out)
		return;
	if (!q) {
		memset(out, 0, sizeof(*out));
		return;
	}
	lock(q);
	*out = q->st;
	out->advice = q->set.advice;
	out->backend = q->backend;
	out->zeroed = purge__advice_zeroes(q->set.advice);
	out->env_ignored = q->set.env_ignored;
	unlock(q);
}

int purge_backend(int advice)
{
	int saved = errno, why = 0, ret;

	if (advice == 0)
		advice = MADV_DONTNEED;
	if (!purge__advice_supported(advice))
		return -EINVAL;
	if (purge__env_mode() == PURGE_MODE_LOOP)
		ret = PURGE_BACKEND_LOOP;
	else
		ret = purge__probe(advice, &why);
	errno = saved;
	return ret;
}
