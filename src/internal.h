/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the library's files and its tests.
 *
 * Data flows one way: api.c -> drain.c -> queue.c (bookkeeping) and
 * flush.c (system calls through the backend) -> books.c (the counters).
 * queue.c and flush.c never call each other.  The backend table is the
 * seam between the library and the kernel, clock included: tests plug in
 * a fake kernel and a fake clock through purge__queue_init_backend().
 */
#ifndef PURGE_INTERNAL_H
#define PURGE_INTERNAL_H

#include "compat.h"

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

#include "index.h"

/* 5.18+; glibc 2.36 has it, older C libraries may not */
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

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
	 * to one tick behind, never ahead.  NULL: the system's clocks, read
	 * inline by purge__now() */
	uint64_t (*now)(void *ctx, bool coarse);
	void *ctx;
};

extern const struct purge__backend purge__sys_backend;

/* Settings after defaults, environment and validation (config.c). */
struct purge__settings {
	int advice;
	int mode;
	unsigned batch;
	unsigned capacity;
	unsigned flags;
	size_t max_pending_bytes;
	uint64_t max_delay_ns;
	size_t call_bytes; /* page multiple, >= one page, <= MAX_RW_COUNT */
	unsigned env_ignored;
	void (*on_failure)(void *arg, void *addr, size_t len, int err);
	void *arg;
};

/* ---- the pending store (queue.c) ---------------------------------------- */

enum { PIECE_FREE, PIECE_TAIL, PIECE_INDEX, PIECE_OVL };

#define PURGE_OVL_MAX 32 /* overlapping enqueues kept before they are settled */

/* A pending range.  Ranges in the index never overlap; an enqueue that
 * overlaps pending bytes is kept apart, in ovl[], and settled on its own. */
struct purge__piece {
	uintptr_t start, end;
	uint64_t stamp; /* coarse CLOCK_MONOTONIC ns of its oldest enqueued part */
	uint32_t seq;   /* changes when the slot is freed: older references see it */
	uint32_t info;  /* PIECE_* in bits 0-1; position in ovl[] above */
};

/* A reference to a piece, valid while the piece's seq matches. */
struct purge__ref {
	uint32_t id, seq;
};

/* A reference in the late heap: a split part, ordered by age, then by its
 * bounds when it was split off.  Later trims move them inside that slot, so
 * parts of one enqueued range keep their address order. */
struct purge__lref {
	uint64_t stamp;
	uintptr_t start, end; /* the piece's bounds when it was pushed */
	uint32_t id, seq;
};

/*
 * Age order: the ring holds the pieces in enqueue order, which is stamp
 * order; a piece split off by a cancel keeps its old stamp and goes to the
 * late heap instead.  The oldest pending piece heads one of the two; of
 * equal stamps the ring's come first, in enqueue order, then split parts by
 * address.
 * Address order: the index, brought up to date lazily (ring positions
 * [syncp, tail) are not in it yet) by the first call that needs it.
 */
struct purge__store {
	struct purge__piece *piece;
	uint32_t npieces; /* pool size */
	uint32_t bump;    /* next never-used piece */
	uint32_t free;    /* free list, through piece.start */
	uint32_t live;    /* pending pieces */
	struct purge__ref *ring;
	uint64_t rmask; /* ring size - 1, a power of two */
	uint64_t head, tail, syncp;
	uint64_t newest; /* stamp of the last piece added */
	struct purge__lref *late;
	uint32_t nlate;
	uint32_t *ovl;
	uint32_t novl;
	struct purge__index idx;
	struct purge__kv *scratch; /* 2 * npieces pairs, for bulk rebuilds */
	uintptr_t lo, hi;          /* bounds of everything pending (conservative) */
	bool untidy;               /* a head may be stale: tidy() before the next use */
};

/* ---- the queue ----------------------------------------------------------- */

/* Call buffer for one system call: the iovecs and where each one starts. */
struct purge__slot {
	size_t piece, off;
};

/* purge_queue.magic while the queue is alive; destroy clears it. */
#define PURGE_QUEUE_MAGIC 0x70757267u /* "purg" */

struct purge_queue {
	uint32_t magic; /* PURGE_QUEUE_MAGIC, else destroyed (or never a queue) */
	struct purge__settings set;
	const struct purge__backend *be;
	size_t page;
	bool busy;   /* inside a flush: mutating calls answer -EBUSY */
	int backend; /* PURGE_BACKEND_* in use */
	size_t map_len;
	struct purge__store s;
	struct purge_stats st; /* the books: written by books.c alone */
	struct purge__kv *sel; /* ranges being settled, sorted by address */
	struct purge__kv *tmp; /* sort scratch, as large as sel */
	struct iovec *iov;     /* PURGE_BATCH_MAX */
	struct purge__slot *ioslot;
	pthread_mutex_t lock;
};

/* config.c */
int purge__settings_init(struct purge__settings *s, const struct purge_config *cfg);
int purge__env_mode(void);
size_t purge__max_rw_count(size_t page);
bool purge__advice_supported(int advice);
bool purge__advice_zeroes(int advice);

/* setup.c: storage layout, validation, probe, lock */
size_t purge__pool_pieces(unsigned capacity);
int purge__queue_init_backend(purge_queue **qp, void *mem, size_t size,
                              const struct purge_config *cfg, const struct purge__backend *be);

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

static inline uint64_t purge__now(const purge_queue *q, bool coarse)
{
	struct timespec ts;

	if (q->be->now)
		return q->be->now(q->be->ctx, coarse);
	clock_gettime(coarse ? PURGE_CLOCK_COARSE : CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* sort.c */
void purge__sort(struct purge__kv *a, struct purge__kv *tmp, size_t n);

/* queue.c: the pending store; bookkeeping only, no system call */
void purge__store_init(struct purge__store *s, void *pieces, uint32_t npieces, void *ring,
                       uint64_t rsize, void *late, void *ovl, void *nodes, uint32_t nnodes,
                       struct purge__kv *scratch);
static inline uint32_t purge__store_room(const struct purge__store *s)
{
	return s->npieces - s->live;
}
void purge__store_add(struct purge__store *s, uintptr_t start, uintptr_t end, uint64_t stamp);

struct purge__cut {
	size_t bytes;   /* pending bytes removed */
	uint32_t gone;  /* pieces removed */
	uint32_t split; /* pieces added by splits */
};
/* Removes every pending byte of [start, end) and returns 0; or, when its
 * splits need more free pieces than the pool has, changes nothing and
 * returns how many it needs (the caller settles the oldest, then asks
 * again). */
uint32_t purge__store_cancel(struct purge__store *s, uintptr_t start, uintptr_t end,
                             struct purge__cut *out);
uint64_t purge__store_oldest(const struct purge__store *s);
/* Moves pending pieces into sel (unsorted) and out of the store: the oldest
 * first, at most max of them, while their stamp is <= max_stamp and the
 * bytes taken so far are < max_bytes.  Returns the count. */
size_t purge__store_take_oldest(struct purge__store *s, struct purge__kv *sel, size_t max,
                                uint64_t max_stamp, uint64_t max_bytes);
/* Everything pending; *ordered: in address order without overlaps. */
size_t purge__store_take_all(struct purge__store *s, struct purge__kv *sel, bool *ordered);
size_t purge__store_take_ovl(struct purge__store *s, struct purge__kv *sel);

/* flush.c: settle sel[0..n) (sorted): batching, coalescing, error
 * attribution.  Talks to the kernel through q->be only. */
void purge__flush_run(purge_queue *q, struct purge__kv *sel, size_t n);

/* books.h and books.c: the only writers of q->st.  Every function keeps
 *   enqueued = purged + cancelled + failed + pending. */
void purge__books_purged(purge_queue *q, size_t bytes, size_t done);
void purge__books_failed(purge_queue *q, void *addr, size_t len, int err, bool done);
uint64_t purge__books_flush_begin(purge_queue *q, bool automatic);
void purge__books_flush_end(purge_queue *q, uint64_t t0);
void purge__books_call(purge_queue *q, size_t iovecs, uint64_t ns);
void purge__books_short(purge_queue *q);
void purge__books_fallback(purge_queue *q);
void purge__books_merged(purge_queue *q, size_t ranges);

/* drain.c: what to settle and when; returns on_failure reports made */
int purge__drain_all(purge_queue *q, bool automatic);
int purge__drain_older(purge_queue *q, uint64_t age_ns);
int purge__drain_to(purge_queue *q, size_t keep_bytes);
int purge__drain_room(purge_queue *q, uint32_t need);
int purge__drain_auto(purge_queue *q, uint64_t now);
int purge__drain_ovl(purge_queue *q);

#include "books.h"

/* sys.c */
int purge__probe(int advice);
int purge__probe_peek(int advice);

#pragma GCC visibility pop

#endif /* PURGE_INTERNAL_H */
