/* SPDX-License-Identifier: MIT */
/*
 * Private declarations shared by the library's files and its tests.  The
 * backend table is the seam between batching logic (flush.c) and the kernel
 * (sys.c): tests plug a fake kernel in through purge__queue_init_backend().
 */
#ifndef PURGE_INTERNAL_H
#define PURGE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "purge.h"

/* 5.18+; glibc 2.36 has it, older C libraries may not */
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

/* What flush.c needs from a kernel.  Every function returns 0/bytes or a
 * negative errno and leaves errno alone. */
struct purge__backend {
	/* process_madvise(PIDFD_SELF, iov, n, advice, 0) */
	ssize_t (*pmadv)(void *ctx, const struct iovec *iov, size_t n, int advice);
	/* madvise(addr, len, advice) */
	int (*madv)(void *ctx, void *addr, size_t len, int advice);
	/* PURGE_BACKEND_VECTORED or _LOOP for advice (runs the probe once);
	 * negative errno of the refusal is stored in *why when LOOP. */
	int (*path)(void *ctx, int advice, int *why);
	/* process_madvise was refused at run time: use the loop for good */
	void (*demote)(void *ctx, int advice, int why);
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

struct purge_queue {
	struct purge__settings set;
	const struct purge__backend *be;
	size_t page;
	unsigned count;   /* pending entries in v[0..count) */
	bool busy;        /* inside a flush: re-entry answers -EBUSY */
	int backend;      /* PURGE_BACKEND_* in use */
	size_t map_len;   /* non-zero when the storage came from mmap */
	uintptr_t lo, hi; /* bounds of everything pending (conservative) */
	uint64_t oldest_ns;
	struct purge_stats st;
	pthread_mutex_t lock;
	struct iovec *v; /* pending ranges; also the iovecs handed to the kernel */
	size_t *dup;     /* during a flush: enqueued bytes folded into v[i] by merging
	                    (flush code takes NULL when nothing was merged) */
};

/* config.c */
int purge__settings_init(struct purge__settings *s, const struct purge_config *cfg);
int purge__env_mode(void);
size_t purge__max_rw_count(size_t page);
bool purge__advice_supported(int advice);
bool purge__advice_zeroes(int advice);

/* queue.c: bookkeeping, no system calls */
int purge__queue_init_backend(purge_queue **qp, void *mem, size_t size,
                              const struct purge_config *cfg, const struct purge__backend *be);
int purge__enqueue(purge_queue *q, void *addr, size_t len);
int purge__cancel(purge_queue *q, void *addr, size_t len);
unsigned purge__coalesce(purge_queue *q);
void purge__account_purged(purge_queue *q, size_t bytes);
void purge__account_failed(purge_queue *q, void *addr, size_t len, int err);

/* flush.c: batching and error attribution */
int purge__flush(purge_queue *q);
void purge__flush_ranges(purge_queue *q, struct iovec *v, size_t *dup, size_t n);

/* sys.c */
uint64_t purge__now_ns(void);
int purge__probe(int advice, int *why);

#endif /* PURGE_INTERNAL_H */
