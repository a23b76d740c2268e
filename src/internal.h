/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the library's files and its tests: the
 * queue, the backend table, a queue's lifetime (setup.c) and the probe
 * (sys.c).  What one module alone uses is in that module's header:
 * advice.h, config.h, store.h, flight.h, drain.h, frames.h, flush.h,
 * books.h, sort.h.
 *
 * Calls go one way: api.c (entry points) -> drain.c (every decision about
 * what to settle and when) -> store.c (the pending ranges, pure
 * bookkeeping; index.c its index), frames.c (the plan of a PURGE_HUGE
 * flush), flight.c (a shared queue's round, zones and waits) and flush.c
 * (system calls through the backend) -> books.c (the counters).  flush.c
 * never calls store.c; flight.c calls it only to put back the part of a
 * range a cancel splits; frames.c plans from it and removes or holds the
 * ranges its plan covers.  api.c also reads the store through its
 * accessors (the fast enqueue, the stats).  setup.c
 * holds a queue's whole lifetime; config.c its settings; advice.c the
 * advice table; sys.c the kernel behind the backend table, which is the
 * seam between the library and the kernel, page size and clock included:
 * tests plug in a fake kernel through purge__queue_init_backend().
 */
#ifndef PURGE_INTERNAL_H
#define PURGE_INTERNAL_H

#include "compat.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#ifdef CLOCK_MONOTONIC_COARSE
#define PURGE_CLOCK_COARSE CLOCK_MONOTONIC_COARSE
#else
#define PURGE_CLOCK_COARSE CLOCK_MONOTONIC
#endif

#include "purge.h"

/* Everything declared from here on is internal: hidden from the dynamic
 * symbol table even where the sources are vendored into another shared
 * object or libpurge.a is linked into one. */
#pragma GCC visibility push(hidden)

#include "advice.h"
#include "config.h"
#include "store.h"
#include "flight_state.h"

/* ---- the backend: the seam between the library and the kernel ------------ */

/* What the library needs from a kernel.  The memory calls return 0/bytes
 * or a negative errno and leave errno alone. */
struct purge__backend {
	/* process_madvise(PIDFD_SELF, iov, n, advice, 0) */
	ssize_t (*pmadv)(void *ctx, const struct iovec *iov, size_t n, int advice);
	/* madvise(addr, len, advice) */
	int (*madv)(void *ctx, void *addr, size_t len, int advice);
	/* PURGE_BACKEND_VECTORED or _LOOP for advice; probe: run the one-time
	 * probe if needed, else answer 0 when it has not run */
	int (*path)(void *ctx, int advice, bool probe);
	/* process_madvise was refused at run time: use the loop for good */
	void (*demote)(void *ctx, int advice);
	/* CLOCK_MONOTONIC in ns; coarse: CLOCK_MONOTONIC_COARSE, cheaper, up
	 * to two ticks behind, never ahead.  NULL: the system's clocks, read
	 * inline by purge__now() */
	uint64_t (*now)(void *ctx, bool coarse);
	/* the page size, read once when a queue is set up */
	size_t (*page_size)(void *ctx);
	/* the huge-page frame (PMD) size, read once for a PURGE_HUGE queue */
	size_t (*frame_size)(void *ctx);
	/* Which frames huge pages back (PAGEMAP_SCAN), for one flush round:
	 * scan_open gives a handle (>= 0), or a negative errno when the kernel
	 * cannot tell; huge_spans, through it, the parts of [lo, hi) that huge
	 * pages back, in address order, at most max of them, with in *done
	 * where the answer ends (hi when it covers all), or a negative errno;
	 * scan_close ends the round.  The kernel walks every page-table entry
	 * of [lo, hi): frames.c asks only about the frames a flush touches. */
	int (*scan_open)(void *ctx);
	ssize_t (*huge_spans)(void *ctx, int h, uintptr_t lo, uintptr_t hi, struct iovec *out,
	                      size_t max, uintptr_t *done);
	void (*scan_close)(void *ctx, int h);
	void *ctx;
};

extern const struct purge__backend purge__sys_backend;

/* ---- the queue ----------------------------------------------------------- */

struct purge__slot; /* flush.h */

/* purge_queue.magic while the queue is alive; destroy clears it. */
#define PURGE_QUEUE_MAGIC 0x70757267u /* "purg" */

struct purge_queue {
	uint32_t magic; /* PURGE_QUEUE_MAGIC, else destroyed (or never a queue) */
	bool busy;      /* inside a flush: mutating calls answer -EBUSY */
	int backend;    /* PURGE_BACKEND_* of the last flush */
	struct purge__settings set;
	const struct purge__backend *be;
	size_t page;
	size_t frame;   /* PURGE_HUGE: the huge-page frame size; 0 otherwise */
	size_t map_len; /* storage from mmap (purge_queue_create) */
	struct purge__store s;
	struct purge_stats st;      /* the books: written by books.c alone */
	struct iovec *iov;          /* PURGE_BATCH_MAX: calls that merge neighbours */
	struct purge__slot *ioslot; /* PURGE_BATCH_MAX */
	pthread_mutex_t lock;       /* PURGE_LOCKED */
	struct purge_lock guard;    /* purge_set_lock: the caller's lock */
	struct purge__flight fl;    /* a shared queue's flush (flight_state.h, flight.h) */
};

/* A queue that is alive: not NULL, not destroyed.  Checked before its
 * lock is taken (a destroyed queue's mutex is gone). */
static inline bool purge__alive(const purge_queue *q)
{
	return q && q->magic == PURGE_QUEUE_MAGIC;
}

static inline void purge__lock(const purge_queue *q)
{
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_lock((pthread_mutex_t *)&q->lock);
}

static inline void purge__unlock(const purge_queue *q)
{
	if (q->set.flags & PURGE_LOCKED)
		pthread_mutex_unlock((pthread_mutex_t *)&q->lock);
}

/* Is q shared between threads (its flushes let go of its lock)? */
static inline bool purge__flight_shared(const purge_queue *q)
{
	return !q->fl.alone && ((q->set.flags & PURGE_LOCKED) || q->guard.lock);
}

/* Is the caller the thread that flushes q (or q not shared)?  Calls from
 * inside its on_failure answer -EBUSY. */
static inline bool purge__flight_mine(const purge_queue *q)
{
	return !purge__flight_shared(q) || pthread_equal(q->fl.owner, pthread_self());
}

/* Takes the queue for a call: its lock, unless the caller is inside its
 * own flush (-EBUSY: from on_failure) or the queue is gone (-EINVAL).  A
 * shared queue's flush by another thread does not refuse the call (it
 * lets go of the lock in the kernel: flight.h).  On 0, unlock after. */
static inline int purge__enter(purge_queue *q)
{
	if (!purge__alive(q))
		return -EINVAL;
	purge__lock(q);
	if (q->busy && purge__flight_mine(q)) {
		purge__unlock(q);
		return -EBUSY;
	}
	return 0;
}

static inline uint64_t purge__now(const purge_queue *q, bool coarse)
{
	struct timespec ts;

	if (q->be->now)
		return q->be->now(q->be->ctx, coarse);
	clock_gettime(coarse ? PURGE_CLOCK_COARSE : CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The path the queue's flushes take: its mode, and in PURGE_MODE_AUTO the
 * process-wide probe (probe: run it if it has not run; else 0 until it
 * has). */
static inline int purge__path(const purge_queue *q, bool probe)
{
	if (q->set.mode != PURGE_MODE_AUTO)
		return q->set.mode == PURGE_MODE_LOOP ? PURGE_BACKEND_LOOP : PURGE_BACKEND_VECTORED;
	return q->be->path(q->be->ctx, q->set.advice->value, probe);
}

/* setup.c: a queue's lifetime (the tests' seam too) */
size_t purge__pool_pieces(unsigned capacity);
int purge__queue_init_backend(purge_queue **qp, void *mem, size_t size,
                              const struct purge_config *cfg, const struct purge__backend *be);

/* sys.c: the probe (the tests read it too) */
int purge__probe(int advice);
int purge__probe_peek(int advice);

#pragma GCC visibility pop

#endif /* PURGE_INTERNAL_H */
