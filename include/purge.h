/* SPDX-License-Identifier: MIT */
/*
 * libpurge: batch the pages an allocator frees and give them back to the
 * kernel with process_madvise(PIDFD_SELF, ...), falling back to a madvise()
 * loop where that is not available.  This header is the documentation.
 *
 * Conventions (liburing style):
 *  - every int function returns 0 (or a documented non-negative value) or
 *    a negative errno; no function changes errno;
 *  - the library never calls malloc/free, creates no thread and installs no
 *    signal handler: it is safe to call from inside an allocator;
 *  - a queue is owned by one thread at a time unless it was created with
 *    PURGE_LOCKED, which makes every call on it thread-safe;
 *  - fork(): the child gets a copy of every queue, and its flushes advise
 *    the child's own memory (PIDFD_SELF names the caller).  As with any
 *    mutex, a PURGE_LOCKED queue that another thread was using at the fork
 *    must not be used in the child; the library installs no atfork handler.
 */
#ifndef PURGE_H
#define PURGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PURGE_VERSION_MAJOR 1
#define PURGE_VERSION_MINOR 0

/* The kernel's limit on iovecs per process_madvise call (UIO_MAXIOV). */
#define PURGE_BATCH_MAX 1024
/* Defaults used when a config field is 0 (chosen from tools/purge-bench). */
#define PURGE_DEFAULT_BATCH    1024
#define PURGE_DEFAULT_CAPACITY 1024

/* purge_config.flags */
#define PURGE_NO_COALESCE (1u << 0) /* submit ranges as enqueued: no sort, no merge */
#define PURGE_TRIM        (1u << 1) /* shrink unaligned ranges inward to whole pages */
#define PURGE_LOCKED      (1u << 2) /* internal lock: calls from many threads are safe */

/* purge_config.mode */
#define PURGE_MODE_AUTO     0 /* process_madvise where the probe allows it, else the loop */
#define PURGE_MODE_VECTORED 1 /* process_madvise only: a refusal is reported as failures */
#define PURGE_MODE_LOOP     2 /* one madvise() per range */

/* purge_backend() and purge_stats.backend */
#define PURGE_BACKEND_VECTORED 1
#define PURGE_BACKEND_LOOP     2

/* purge_stats.env_ignored: environment knobs that were set but invalid */
#define PURGE_ENV_BATCH (1u << 0)
#define PURGE_ENV_MODE  (1u << 1)

typedef struct purge_queue purge_queue; /* opaque */

/*
 * Queue configuration.  An all-zero struct (or a NULL pointer) gives the
 * documented defaults.
 */
struct purge_config {
	int advice;               /* 0 = MADV_DONTNEED; also MADV_FREE, MADV_DONTNEED_LOCKED,
	                             MADV_COLD, MADV_PAGEOUT.  Anything else: -EINVAL. */
	unsigned batch;           /* iovecs per process_madvise call, 1..1024;
	                             0 = $PURGE_BATCH if valid, else PURGE_DEFAULT_BATCH */
	unsigned capacity;        /* pending ranges held before an automatic flush;
	                             0 = PURGE_DEFAULT_CAPACITY */
	size_t max_pending_bytes; /* automatic flush once pending bytes exceed
	                             this; 0 = no limit */
	uint64_t max_delay_ns;    /* automatic flush, checked on enqueue, once
	                             the oldest pending range is older; 0 = none */
	size_t max_call_bytes;    /* bytes per syscall at most (bounds mmap_lock
	                             hold time), rounded down to whole pages, at
	                             least one page; 0 = the kernel's limit
	                             (MAX_RW_COUNT, 2 GiB - 4 KiB) */
	unsigned flags;           /* PURGE_NO_COALESCE | PURGE_TRIM | PURGE_LOCKED */
	int mode;                 /* PURGE_MODE_*; AUTO = $PURGE_MODE if valid, else AUTO */
	/* Called once for every range that was NOT purged, with a negative
	 * errno (-ENOMEM: hole in the range, -EINVAL: locked, PFNMAP, or
	 * MADV_FREE on a non-anonymous mapping, -EPERM: sealed, -ENOSYS etc.:
	 * process_madvise refused in PURGE_MODE_VECTORED, -EIO: the kernel
	 * returned a count that names no range).  The range is what was
	 * submitted: neighbours merged by coalescing, or one max_call_bytes
	 * piece of a longer range.  Parts of it may have been purged (the
	 * kernel advises around a hole): treat it as "not known to be zero".
	 * The config is copied at init; the callback runs inside the library
	 * call that flushed, with the queue busy: calls on the same queue from
	 * inside it return -EBUSY. */
	void (*on_failure)(void *arg, void *addr, size_t len, int err);
	void *arg;
};

/* Counters, all in enqueued terms.  At every point:
 *   enqueued_bytes == purged_bytes + cancelled_bytes + failed_bytes + pending_bytes */
struct purge_stats {
	uint64_t enqueued_ranges; /* accepted by purge_enqueue (after trimming) */
	uint64_t enqueued_bytes;
	uint64_t merged_ranges;   /* ranges folded into a neighbour by coalescing */
	uint64_t cancelled_bytes; /* removed by purge_cancel */
	uint64_t flushes;         /* flushes that had ranges to purge */
	uint64_t auto_flushes;    /* of those, started by a threshold in enqueue */
	uint64_t pmadv_calls;     /* process_madvise system calls */
	uint64_t madv_calls;      /* madvise system calls */
	uint64_t short_counts;    /* process_madvise calls that stopped early */
	uint64_t fallbacks;       /* times a flush switched to the madvise loop */
	uint64_t purged_bytes;    /* accepted by the kernel */
	uint64_t failed_ranges;   /* reported through on_failure */
	uint64_t failed_bytes;
	uint64_t pending_ranges; /* waiting for a flush */
	uint64_t pending_bytes;
	int advice;           /* the advice in effect (MADV_DONTNEED when MADV_FREE was
	                         asked for on a kernel without it) */
	int backend;          /* PURGE_BACKEND_* this queue uses now */
	int zeroed;           /* 1: purged private anonymous pages read back as zero
	                         (MADV_DONTNEED[_LOCKED]); 0: contents undefined until
	                         written (MADV_FREE) or kept (COLD, PAGEOUT) */
	unsigned env_ignored; /* PURGE_ENV_* knobs that were set but invalid */
};

/* Bytes of caller memory purge_queue_init() needs for `capacity` ranges
 * (0 = default): 24 bytes a range plus a small header.  Returns 0 when
 * capacity exceeds 16777215 (the largest a queue takes). */
size_t purge_queue_bytes(unsigned capacity);

/* Build a queue inside caller memory `mem` of `size` bytes (at least
 * purge_queue_bytes(capacity), aligned to 16 bytes).  The memory must stay
 * valid until purge_queue_destroy().  Makes two system calls: madvise(NULL,
 * 0, advice) to check that the kernel knows the advice (MADV_FREE unknown:
 * the queue uses MADV_DONTNEED and says so in its stats), and, in
 * PURGE_MODE_AUTO, the process-wide probe of purge_backend() the first time.
 * Returns 0, -EINVAL (bad argument or config), -ENOSPC (mem too small) or
 * -EOPNOTSUPP (advice unknown to this kernel, e.g. MADV_DONTNEED_LOCKED
 * before 5.18). */
int purge_queue_init(purge_queue **qp, void *mem, size_t size, const struct purge_config *cfg);

/* Same as purge_queue_init() with storage from mmap.  Also -ENOMEM. */
int purge_queue_create(purge_queue **qp, const struct purge_config *cfg);

/* Flush what is pending, then release the queue (and its mmap'ed storage
 * when it came from purge_queue_create).  Returns what purge_flush()
 * returns; the queue is gone either way unless -EBUSY or -EINVAL. */
int purge_queue_destroy(purge_queue *q);

/* Queue [addr, addr+len) to be purged.  O(1) amortised; makes no system call
 * unless this range fills the queue or crosses max_pending_bytes or
 * max_delay_ns; then it flushes the whole queue, this range included.
 * len == 0 is a no-op.  Without PURGE_TRIM, addr and len must be page
 * multiples; with it the range is shrunk inward (and a range with no whole
 * page is a no-op).  Returns 0, or -EINVAL (NULL queue or address, unaligned,
 * addr+len overflows or passes the architecture's largest user address:
 * 2^56 on x86_64, where a 4-level machine stops at 2^47 and such a range
 * fails at flush time instead), -EBUSY (called from on_failure).
 * Failures of an automatic flush are reported through stats and on_failure,
 * not through this return value. */
int purge_enqueue(purge_queue *q, void *addr, size_t len);

/* Remove every pending byte in [addr, addr+len): ranges inside it are
 * dropped, ranges overlapping it are trimmed or split.  Afterwards no byte
 * of the interval is purged by this queue.  Call it before reusing memory.
 * Unaligned bounds are widened outward to pages (never purge too much);
 * len == 0 is a no-op.  Returns 0, -EINVAL (NULL queue, addr+len overflows)
 * or -EBUSY.  A split needs a free slot: when the queue is full, the far
 * part of the split range is purged at once instead (it was enqueued and is
 * outside the interval, so this is only early, never wrong). */
int purge_cancel(purge_queue *q, void *addr, size_t len);

/* Coalesce and purge everything pending.  Every pending byte ends purged or
 * reported failed.  Returns the number of on_failure reports it made (>= 0),
 * or -EINVAL (NULL), -EBUSY (called from on_failure).
 * A flush holds the queue (and, with PURGE_LOCKED, its lock) from start to
 * end, and purge_stats.flushes counts it as it starts: once flushes has moved
 * past the value read after an enqueue, that range is settled (purged, or
 * reported through on_failure).  Automatic flushes in purge_enqueue() behave
 * the same way. */
int purge_flush(purge_queue *q);

/* Iovecs per process_madvise call for the next flushes, 1..PURGE_BATCH_MAX.
 * Returns 0 or -EINVAL (batch unchanged). */
int purge_set_batch(purge_queue *q, unsigned batch);
unsigned purge_get_batch(const purge_queue *q); /* 0 for a NULL queue */

/* Snapshot of the queue's counters; all zero for a NULL queue. */
void purge_get_stats(const purge_queue *q, struct purge_stats *out);

/* The path this process uses for `advice` (0 = MADV_DONTNEED) in
 * PURGE_MODE_AUTO: PURGE_BACKEND_VECTORED or PURGE_BACKEND_LOOP.  Runs the
 * one-time probe (a real one-page process_madvise on a scratch page) and
 * honours PURGE_MODE=loop.  -EINVAL for an advice the library does not
 * take. */
int purge_backend(int advice);

#ifdef __cplusplus
}
#endif
#endif /* PURGE_H */
