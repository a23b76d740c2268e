/* SPDX-License-Identifier: MIT */
/*
 * A queue's whole lifetime: the layout of its memory, validation, the
 * advice check and the probe (the only system calls at setup), storage
 * from mmap, the optional lock, the fork helpers that take and reset it,
 * and destroy.
 */
#include "compat.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "drain.h"
#include "flush.h"
#include "internal.h"
#include "flight.h"

#define SETUP_ALIGN(x, a) (((x) + (a)-1) & ~((size_t)(a)-1))
#define SETUP_LINE        64

/* Where each array lives, as offsets from the queue's first byte. */
struct setup_layout {
	uint32_t npieces, nnodes;
	size_t rng, link, stamp, ovl, nodes, scratch, flight, iov, ioslot, total;
};

/* Pool pieces for a capacity: splits may hold more than capacity pending
 * for a while; the slack keeps a cancel from settling anything early. */
size_t purge__pool_pieces(unsigned capacity)
{
	return (size_t)capacity + capacity / 16 + 4;
}

/* *at + n * size, aligned; false on overflow */
static bool setup_carve(size_t *at, size_t n, size_t size, size_t *where)
{
	size_t start = SETUP_ALIGN(*at, SETUP_LINE);

	if (start < *at || (size && n > (SIZE_MAX - start) / size))
		return false;
	*where = start;
	*at = start + n * size;
	return true;
}

/* Index nodes: as many as its worst case needs, and room for bulk
 * indexing to sort the pairs in them. */
static uint32_t setup_nodes(uint32_t npieces)
{
	size_t need = purge__idx_nodes(npieces);
	size_t sort =
	    ((size_t)npieces * sizeof(struct purge__kv) + sizeof(struct purge__node) - 1) /
	    sizeof(struct purge__node);

	return (uint32_t)(need > sort ? need : sort);
}

static bool setup_layout(unsigned capacity, struct setup_layout *l)
{
	size_t cap = capacity ? capacity : PURGE_DEFAULT_CAPACITY, at = sizeof(struct purge_queue);

	if (cap > PURGE_CAPACITY_MAX)
		return false;
	l->npieces = (uint32_t)purge__pool_pieces((unsigned)cap);
	l->nnodes = setup_nodes(l->npieces);
	size_t n = l->npieces;
	return setup_carve(&at, n, sizeof(struct iovec), &l->rng) &&
	       setup_carve(&at, n, sizeof(struct purge__link), &l->link) &&
	       setup_carve(&at, n, sizeof(uint64_t), &l->stamp) &&
	       setup_carve(&at, n, sizeof(uint32_t), &l->ovl) &&
	       setup_carve(&at, l->nnodes, sizeof(struct purge__node), &l->nodes) &&
	       setup_carve(&at, n + 1, sizeof(struct iovec), &l->scratch) &&
	       setup_carve(&at, n + 1 + PURGE_FLIGHT_SPARE, sizeof(struct iovec), &l->flight) &&
	       setup_carve(&at, PURGE_BATCH_MAX, sizeof(struct iovec), &l->iov) &&
	       setup_carve(&at, PURGE_BATCH_MAX, sizeof(struct purge__slot), &l->ioslot) &&
	       setup_carve(&at, 1, 0, &l->total);
}

size_t purge_queue_bytes(unsigned capacity)
{
	struct setup_layout l;

	return setup_layout(capacity, &l) ? l.total : 0;
}

static void setup_arrays(purge_queue *q, const struct setup_layout *l)
{
	char *base = (char *)q;

	q->iov = (struct iovec *)(base + l->iov);
	q->ioslot = (struct purge__slot *)(base + l->ioslot);
	q->fl.v = (struct iovec *)(base + l->flight); /* written by shared queues only */
	q->fl.cap = l->npieces + 1 + PURGE_FLIGHT_SPARE;
	purge__store_init(&q->s, l->npieces, (struct iovec *)(base + l->rng),
	                  (struct purge__link *)(base + l->link), (uint64_t *)(base + l->stamp),
	                  (uint32_t *)(base + l->ovl), (struct purge__node *)(base + l->nodes),
	                  l->nnodes, base + l->scratch);
	/* a queue with an age threshold, or told to, stamps every enqueue */
	if (q->set.max_delay_ns || (q->set.flags & PURGE_AGES))
		purge__store_age(&q->s);
}

/* Where the kernel lacks MADV_FREE (< 4.5) use DONTNEED and say so in the
 * stats; any other advice the kernel does not know is an error. */
static int setup_advice(purge_queue *q)
{
	int ret = q->be->madv(q->be->ctx, NULL, 0, q->set.advice->value);

	if (ret == -EINVAL && q->set.advice->value == MADV_FREE) {
		q->set.advice = purge__advice_find(MADV_DONTNEED);
		ret = 0;
	}
	return ret ? -EOPNOTSUPP : 0;
}

/* The flight's waits (flight.h): every queue has them, used once shared. */
static void setup_waits(purge_queue *q)
{
	pthread_mutex_init(&q->fl.m, NULL);
	pthread_cond_init(&q->fl.c, NULL);
}

/* Recursive, so that a call from on_failure answers -EBUSY instead of
 * deadlocking. */
static int setup_lock(purge_queue *q)
{
	pthread_mutexattr_t at;
	int ret;

	setup_waits(q);
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
	struct setup_layout l;
	int ret;

	if (!qp || !mem || !be || ((uintptr_t)mem % 16))
		return -EINVAL;
	size_t page = be->page_size(be->ctx);
	ret = purge__settings_init(&set, cfg, page);
	if (ret)
		return ret;
	if (!setup_layout(set.capacity, &l))
		return -EINVAL;
	if (size < l.total)
		return -ENOSPC;
	purge_queue *q = mem;
	memset(q, 0, sizeof(*q));
	q->set = set;
	q->be = be;
	q->page = page;
	if (set.flags & PURGE_HUGE) {
		q->frame = be->frame_size(be->ctx);
		if (q->frame < page || (q->frame & (q->frame - 1)))
			return -EINVAL;
	}
	setup_arrays(q, &l);
	ret = setup_advice(q);
	if (!ret)
		ret = setup_lock(q);
	if (ret)
		return ret;
	q->backend = purge__path(q, true);
	q->magic = PURGE_QUEUE_MAGIC;
	*qp = q;
	return 0;
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
	int saved = errno, ret = purge__enter(q);

	if (ret)
		return ret;
	ret = purge__drain_all(q);
	q->magic = 0; /* later calls on the memory answer -EINVAL */
	purge__unlock(q);
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->fl.c);
	pthread_mutex_destroy(&q->fl.m);
	if (q->map_len)
		munmap(q, q->map_len);
	errno = saved;
	return ret;
}

/* Takes the queue, and waits for the call a flush of another thread has
 * in the kernel (that flush parks after it, holding no lock, until
 * purge_fork_parent). */
void purge_fork_prepare(purge_queue *q)
{
	if (!purge__alive(q))
		return;
	purge__lock(q);
	purge__flight_fork_prepare(q);
}

void purge_fork_parent(purge_queue *q)
{
	if (!purge__alive(q))
		return;
	purge__flight_fork_parent(q);
	purge__unlock(q);
}

/* The child has one thread, the one that forked and holds the lock, under
 * another thread id: a recursive mutex would refuse its unlock.  A fresh
 * mutex is what POSIX atfork child handlers do (glibc's malloc does too).
 * A round another thread was settling is settled here, in the child. */
void purge_fork_child(purge_queue *q)
{
	if (!purge__alive(q))
		return;
	if (q->set.flags & PURGE_LOCKED)
		setup_lock(q);
	else
		setup_waits(q);
	purge__drain_fork_child(q);
}
