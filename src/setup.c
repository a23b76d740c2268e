/* SPDX-License-Identifier: MIT */
/*
 * Setting a queue up: the layout of the caller's memory, validation, the
 * advice check and probe (the only system calls at setup), the optional
 * lock, and the fork helpers that take and reset it.
 */
#include "compat.h"

#include <errno.h>
#include <stdalign.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ALIGN_UP(x, a) (((x) + (a)-1) & ~((size_t)(a)-1))
#define LINE           64

/* Where each array lives, as offsets from the queue's first byte. */
struct layout {
	uint32_t npieces, nnodes;
	uint64_t rsize;
	size_t pieces, ring, late, ovl, nodes, sel, iov, ioslot, total;
};

/* Pool pieces for a capacity: splits may hold more than capacity pending
 * for a while; the slack keeps a cancel from settling anything early. */
size_t purge__pool_pieces(unsigned capacity)
{
	return (size_t)capacity + capacity / 8 + 4;
}

/* a + n * size, aligned; false on overflow */
static bool place(size_t *at, size_t n, size_t size, size_t align, size_t *where)
{
	size_t start = ALIGN_UP(*at, align);

	if (start < *at || (size && n > (SIZE_MAX - start) / size))
		return false;
	*where = start;
	*at = start + n * size;
	return true;
}

static bool layout(unsigned capacity, struct layout *l)
{
	size_t cap = capacity ? capacity : PURGE_DEFAULT_CAPACITY, at = sizeof(struct purge_queue);

	if (cap > PURGE_CAPACITY_MAX)
		return false;
	l->npieces = (uint32_t)purge__pool_pieces((unsigned)cap);
	l->nnodes = (uint32_t)purge__idx_nodes(l->npieces);
	for (l->rsize = 2; l->rsize < 2 * (uint64_t)l->npieces;)
		l->rsize *= 2;
	return place(&at, l->npieces, sizeof(struct purge__piece), LINE, &l->pieces) &&
	       place(&at, l->rsize, sizeof(struct purge__ref), LINE, &l->ring) &&
	       place(&at, l->npieces, sizeof(struct purge__lref), LINE, &l->late) &&
	       place(&at, l->npieces, sizeof(uint32_t), LINE, &l->ovl) &&
	       place(&at, l->nnodes, sizeof(struct purge__node), LINE, &l->nodes) &&
	       place(&at, 2 * (size_t)l->npieces, sizeof(struct purge__kv), LINE, &l->sel) &&
	       place(&at, PURGE_BATCH_MAX, sizeof(struct iovec), LINE, &l->iov) &&
	       place(&at, PURGE_BATCH_MAX, sizeof(struct purge__slot), LINE, &l->ioslot) &&
	       place(&at, 1, 0, LINE, &l->total);
}

size_t purge_queue_bytes(unsigned capacity)
{
	struct layout l;

	return layout(capacity, &l) ? l.total : 0;
}

static void carve(purge_queue *q, const struct layout *l)
{
	char *base = (char *)q;

	q->sel = (struct purge__kv *)(base + l->sel);
	q->tmp = q->sel + l->npieces;
	q->iov = (struct iovec *)(base + l->iov);
	q->ioslot = (struct purge__slot *)(base + l->ioslot);
	purge__store_init(&q->s, base + l->pieces, l->npieces, base + l->ring, l->rsize,
	                  base + l->late, base + l->ovl, base + l->nodes, l->nnodes, q->sel);
}

/* Where the kernel lacks MADV_FREE (< 4.5) use DONTNEED and say so in the
 * stats; any other advice the kernel does not know is an error. */
static int resolve_advice(purge_queue *q)
{
	int ret = q->be->madv(q->be->ctx, NULL, 0, q->set.advice);

	if (ret == -EINVAL && q->set.advice == MADV_FREE) {
		q->set.advice = MADV_DONTNEED;
		ret = 0;
	}
	return ret ? -EOPNOTSUPP : 0;
}

/* Recursive, so that a call from on_failure answers -EBUSY instead of
 * deadlocking. */
static int init_lock(purge_queue *q)
{
	pthread_mutexattr_t at;
	int ret;

	if (!(q->set.flags & PURGE_LOCKED))
		return 0;
	pthread_mutexattr_init(&at);
	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
	ret = pthread_mutex_init(&q->lock, &at);
	pthread_mutexattr_destroy(&at);
	return -ret;
}

int purge__queue_init_backend(purge_queue **qp, void *mem, size_t size,
                              const struct purge_config *cfg, const struct purge__backend *be)
{
	struct purge__settings set;
	struct layout l;
	int ret;

	if (!qp || !mem || !be || ((uintptr_t)mem % 16))
		return -EINVAL;
	ret = purge__settings_init(&set, cfg);
	if (ret)
		return ret;
	if (!layout(set.capacity, &l))
		return -EINVAL;
	if (size < l.total)
		return -ENOSPC;
	purge_queue *q = mem;
	memset(q, 0, sizeof(*q));
	q->set = set;
	q->be = be;
	q->page = (size_t)sysconf(_SC_PAGESIZE);
	carve(q, &l);
	ret = resolve_advice(q);
	if (!ret)
		ret = init_lock(q);
	if (ret)
		return ret;
	if (q->set.mode == PURGE_MODE_AUTO)
		q->backend = be->path(be->ctx, q->set.advice, true);
	else
		q->backend =
		    q->set.mode == PURGE_MODE_LOOP ? PURGE_BACKEND_LOOP : PURGE_BACKEND_VECTORED;
	q->magic = PURGE_QUEUE_MAGIC;
	*qp = q;
	return 0;
}

void purge_fork_prepare(purge_queue *q)
{
	if (purge__alive(q))
		purge__lock(q);
}

void purge_fork_parent(purge_queue *q)
{
	if (purge__alive(q))
		purge__unlock(q);
}

/* The child has one thread, the one that forked and holds the lock, under
 * another thread id: a recursive mutex would refuse its unlock.  A fresh
 * mutex is what POSIX atfork child handlers do (glibc's malloc does too). */
void purge_fork_child(purge_queue *q)
{
	if (purge__alive(q) && (q->set.flags & PURGE_LOCKED))
		init_lock(q);
}
