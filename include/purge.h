/* SPDX-License-Identifier: MIT */
/*
 * libpurge: batch the pages an allocator frees and give them back to the
 * kernel with process_madvise(PIDFD_SELF, ...), falling back to a madvise()
 * loop where that is not available.  This header is the documentation.
 *
 * Conventions (liburing style):
 *  - int functions return 0 (or a documented non-negative value) or a
 *    negative errno; no function changes errno;
 *  - the library never calls malloc/free, creates no thread and installs no
 *    signal handler: it is safe to call from inside an allocator;
 *  - a queue is owned by one thread at a time unless it was created with
 *    PURGE_LOCKED, which makes every call on it thread-safe, or is shared
 *    under the caller's own lock (purge_set_lock); see "Threads and waits";
 *  - fork(): the child gets a copy of every queue, and its flushes advise
 *    the child's own memory (PIDFD_SELF names the caller).  A PURGE_LOCKED
 *    queue that other threads use across a fork needs purge_fork_prepare(),
 *    purge_fork_parent() and purge_fork_child() in the program's (or the
 *    allocator's) atfork handlers; the library installs none.
 *
 * Words this header uses in a sense of its own (the man pages and docs/
 * use them in the same sense and refer here):
 *   pending      enqueued, not yet purged, cancelled or reported failed;
 *   range        one pending [start, end) of whole pages; neighbours that
 *                touch merge into one at a flush (unless PURGE_NO_COALESCE);
 *   call         one process_madvise() (or, in the fallback, one madvise()
 *                per range): at most `batch` ranges and max_call_bytes;
 *   settle       make a pending range final: purge it (or report it failed
 *                through on_failure and the stats);
 *   flush        settle some or all of what is pending, in calls; automatic
 *                when a threshold (capacity, max_pending_bytes, max_delay_ns)
 *                is crossed inside purge_enqueue or purge_cancel, explicit
 *                when the caller asks (purge_flush, _older, _to, _due);
 *   round        the ranges one flush takes out to settle, in address order;
 *   in flight    taken by a round and not yet booked; the call in the kernel
 *                is the zone a cancel may have to wait for;
 *   book         account for one call once it has returned: stats, failures,
 *                what the round has left;
 *   frame        one huge page's aligned span (2 MiB on x86-64);
 *   frame plan   with PURGE_HUGE, the order in which a round settles ranges
 *                so that a huge page is purged whole or not at all;
 *   held         pending, but left out of a round by the frame plan until its
 *                frame is whole (or until max_delay_ns);
 *   answer       what purge_cancel returns: 1 = some of those pages were
 *                pending (taken back, never purged), 0 = none were; a zero
 *                claim is an answer of 0 relied on as "reads as zero", under
 *                the rule below.
 *
 * Reuse and zeroes.  Before reusing memory it enqueued, an allocator calls
 * purge_cancel() on it.  A cancel works on whole pages: it takes back the
 * pending purge of every page the interval touches, bytes of those pages
 * outside the interval included, and its answer is about those pages: 1
 * when some of their bytes were still pending, 0 when none were.
 * [addr, addr+len) reads as zero when all of these hold:
 *   1. purge_cancel(q, addr, len) answered 0;
 *   2. the queue's advice zeroes (purge_stats.zeroed: MADV_DONTNEED or
 *      MADV_DONTNEED_LOCKED on private anonymous memory);
 *   3. every page the interval touches was enqueued (enqueues hold whole
 *      pages: the partial pages PURGE_TRIM cuts off a range's ends are
 *      never enqueued), and since then
 *   4. no cancel that answered 1 touched any of those pages (it took back
 *      the purge of each whole page: the rest of such a page keeps its old
 *      bytes until the page is enqueued and settled again), and
 *   5. on_failure reported no range that overlaps those pages;
 * and nothing wrote to [addr, addr+len) after it was enqueued.  An
 * allocator that carves pages into smaller objects cancels the whole run
 * once, before carving, and applies that one answer to every object in it.
 * Memory never enqueued is not covered: cancel answers 0 for it and says
 * nothing about its contents (fresh anonymous mmap memory reads as zero
 * by itself).
 *
 * Threads.  Enqueue a run while the freeing thread still owns it, before
 * it is published to a free list other threads take from; cancel after
 * taking a run, before writing to it.  In the other order a purge can hit
 * a run another thread already reuses, or a cancel can miss a purge that
 * is still to come.
 *
 * Threads and waits (2.3).  A shared queue (PURGE_LOCKED, or under a
 * lock of the caller's through purge_set_lock) never holds its lock
 * across a system call, nor for longer than a few calls' worth of work.
 * A flush takes its ranges out in rounds, oldest first, at most 4 * batch
 * ranges a round (each round sorted and copied to a flight array of the
 * queue's under the lock: O(batch log n) a hold), then, call by call:
 * under the lock it plans one call (at most `batch` ranges and
 * max_call_bytes), lets go of the lock for the kernel, and books the call
 * under the lock again.  Ranges in different rounds are not merged.  Its
 * "everything" is what was pending when it began (and the parts a cancel
 * splits off meanwhile): ranges other threads enqueue during it may wait
 * for the next flush.  The one long hold left is a queue's first cancel
 * that reaches pending memory after plain enqueues: it indexes the store,
 * O(n) once (see purge_cancel).
 * Meanwhile, on other threads:
 *   purge_enqueue, purge_get_stats, purge_get_batch, purge_set_batch and
 *     purge_oldest_ns wait for the lock only (the flusher holds it to plan
 *     and to book one call, never across one), except that an enqueue that
 *     finds the whole pool full (capacity and spare room) waits for the
 *     flush to end;
 *   purge_cancel takes out of the round what no call has taken yet (never
 *     purged; it answers 1), and, when its pages touch the call in the
 *     kernel, waits for that one call to be booked: those pages are then
 *     purged (or reported failed), and its answer counts only what it took
 *     out.  "Pending" (1) still means the pages keep their bytes, and 0
 *     still means purged.  When that call failed (a hole in a merged
 *     range), the kernel may have freed some pages of every range it
 *     touched: the cancel waits until those ranges have gone to the kernel
 *     again, one by one, and answers 0 for them.  A part a cancel splits
 *     off a range of the round keeps the range's age and is settled by the
 *     same flush (in the round, or back in the store when the flight's
 *     spare slots are used up).  A cancel that would split a range of the
 *     round when the flight's spare slots and the pool are full waits for
 *     the flush to end (its pages are then purged);
 *   an automatic flush (a threshold crossed in purge_enqueue or
 *     purge_cancel) is left to the flushing thread, which settles it before
 *     its call returns; an explicit flush (purge_flush, _older, _to, _due,
 *     purge_queue_destroy) waits for the running flush to end, then runs;
 *   purge_fork_prepare waits for the call in the kernel, and parks the
 *     flusher after it until purge_fork_parent; purge_fork_child settles
 *     the rest of that round in the child.
 * Only the flushing thread's own calls from on_failure answer -EBUSY.
 * With PURGE_HUGE a round's frame plan and its PAGEMAP_SCANs still run
 * under the lock, and a round may take the whole store (it plans whole
 * frames).
 *
 * Results that must be checked.  purge_enqueue() and purge_cancel() are
 * declared PURGE_MUST_CHECK (warn_unused_result where the compiler has it;
 * gcc warns even through a (void) cast): an enqueue that fails queued
 * nothing, so the range is never purged and does not read as zero; a
 * cancel that fails (-EBUSY, from inside on_failure) may leave the purge
 * pending on memory the allocator is about to reuse, and a later flush
 * would wipe what it writes there: it must not hand that memory out, or
 * must cancel again later.  A program may define PURGE_MUST_CHECK empty
 * before including this header to turn the warning off.
 */
#ifndef PURGE_H
#define PURGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PURGE_VERSION_MAJOR 2
#define PURGE_VERSION_MINOR 3
#define PURGE_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH; purge_version() says what runs. */
#define PURGE_VERSION                                                                              \
	(PURGE_VERSION_MAJOR * 10000 + PURGE_VERSION_MINOR * 100 + PURGE_VERSION_PATCH)

#ifndef PURGE_MUST_CHECK
#ifdef __has_attribute
#if __has_attribute(warn_unused_result)
#define PURGE_MUST_CHECK __attribute__((warn_unused_result))
#endif
#elif defined(__GNUC__) /* gcc before 5 has the attribute, not __has_attribute */
#define PURGE_MUST_CHECK __attribute__((warn_unused_result))
#endif
#ifndef PURGE_MUST_CHECK
#define PURGE_MUST_CHECK /* a compiler without the attribute: no check */
#endif
#endif

/* The kernel's limit on iovecs per process_madvise call (UIO_MAXIOV). */
#define PURGE_BATCH_MAX 1024
/* Defaults used when a config field is 0 (chosen from tools/purge-bench). */
#define PURGE_DEFAULT_BATCH    1024
#define PURGE_DEFAULT_CAPACITY 1024
/* The largest capacity a queue takes. */
#define PURGE_CAPACITY_MAX 16777215u

/* purge_config.flags */
#define PURGE_NO_COALESCE (1u << 0) /* submit ranges as enqueued: no merging of neighbours */
#define PURGE_TRIM        (1u << 1) /* shrink unaligned ranges inward to whole pages */
#define PURGE_LOCKED      (1u << 2) /* internal lock: calls from many threads are safe */
#define PURGE_INCREMENTAL (1u << 3) /* automatic flushes settle the oldest ranges only */
#define PURGE_AGES        (1u << 4) /* keep every range's enqueue time from the start */
#define PURGE_HUGE        (1u << 5) /* plan around huge-page frames: see "Huge pages" */

/* Huge pages (PURGE_HUGE).  A frame is the aligned span one huge page maps
 * (the PMD size, /sys/kernel/mm/transparent_hugepage/hpage_pmd_size: 2 MiB
 * on x86_64 with 4 KiB pages).  A purge of part of a huge-backed frame
 * splits the huge page and frees nothing until reclaim; a purge of all of
 * it frees it at once, page tables included.  With the flag, automatic
 * flushes, PURGE_INCREMENTAL rounds, purge_flush_to() and purge_flush_due()
 * plan around frames: of the ranges they look at, the part in a frame that
 * is wholly pending goes with the whole frame, first; the part in a frame
 * a huge page backs (PAGEMAP_SCAN, Linux 6.7+, says which; where the kernel
 * cannot tell, every frame may be) is held: left pending until its frame
 * is whole and a later flush plans again, until it is max_delay_ns old (no
 * limit when 0), until purge_flush() or purge_flush_older(), or until the
 * queue needs its room (spare room for splits, or capacity: the oldest go
 * then, held or not); the rest goes as before.  A range enqueued over
 * pending bytes counts where it lies like any other (a frame that it and
 * others cover is whole); as a cancel does, a plan first settles such
 * ranges when more than 32 are pending.  A range across frames is cut at
 * frame boundaries, and a report to on_failure may name such a part.  A
 * round of the plan selects into about 3/8 of the queue's slots: a whole
 * frame of more pieces than that (a queue of small capacity) cannot go
 * whole, and a round that can take nothing settles the oldest `batch`
 * ranges instead, held or not.
 * Held ranges and bytes do not count against capacity and
 * max_pending_bytes (no empty flushes: an enqueue stays O(1) amortised);
 * they occupy the queue's slots all the same.  The parts a plan cuts are
 * ranges of their own: PURGE_INCREMENTAL rounds go on until the queue is
 * also back under capacity.  To learn which frames huge
 * pages back, a flush that purges part of a frame, holding or not, opens
 * /proc/self/pagemap once and makes one PAGEMAP_SCAN for each run of such
 * frames (at most one frame apart); the kernel walks the page tables of
 * those frames only (about 2 us a scan and 4 us the open, measured).
 * Without the flag nothing changes.  With PURGE_NO_COALESCE: -EINVAL (a
 * whole frame must reach the kernel as one range).  Stats: frames_whole,
 * frames_split, held_ranges, held_bytes. */

/* Ages.  Keeping a range's enqueue time costs a clock read per enqueue
 * (CLOCK_MONOTONIC_COARSE, a few ns).  A queue keeps them when it has a
 * max_delay_ns, with PURGE_AGES, or from its first purge_flush_older(),
 * purge_flush_due() or purge_oldest_ns() on; ranges already pending then
 * count as enqueued
 * when the queue last became non-empty (older than they may be, never
 * younger).  Other queues read the clock only when they become
 * non-empty.  So on a queue without ages the first purge_flush_older()
 * settles every pending range, young ones too, once the queue has been
 * non-empty for age_ns: set PURGE_AGES, or call purge_oldest_ns() before
 * the first enqueue, to have it settle only the old ones. */

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

/* purge_stats_format() flags */
#define PURGE_FORMAT_JSON (1u << 0)

/* purge_stats.calls_by_iovecs: process_madvise calls with 1, 2-7, 8-63,
 * 64-255, 256-1023 and 1024 iovecs */
#define PURGE_STATS_IOV_BUCKETS 6

typedef struct purge_queue purge_queue; /* opaque */

/*
 * Queue configuration.  An all-zero struct (or a NULL pointer) gives the
 * documented defaults.  The struct keeps its size across 2.x releases:
 * new fields take reserved space, where 0 keeps the old behaviour.
 */
struct purge_config {
	int advice;               /* 0 = MADV_DONTNEED; also MADV_FREE, MADV_DONTNEED_LOCKED,
	                             MADV_COLD, MADV_PAGEOUT.  Anything else: -EINVAL. */
	unsigned batch;           /* iovecs per process_madvise call, 1..1024;
	                             0 = $PURGE_BATCH if valid, else PURGE_DEFAULT_BATCH */
	unsigned capacity;        /* pending ranges held before an automatic flush,
	                             1..PURGE_CAPACITY_MAX; 0 = PURGE_DEFAULT_CAPACITY */
	unsigned flags;           /* PURGE_NO_COALESCE | PURGE_TRIM | PURGE_LOCKED |
	                             PURGE_INCREMENTAL | PURGE_AGES | PURGE_HUGE */
	uint64_t max_delay_ns;    /* automatic flush, checked on enqueue, once
	                             the oldest pending range is this old; 0 = none */
	size_t max_pending_bytes; /* automatic flush once pending bytes exceed
	                             this; 0 = no limit */
	size_t max_call_bytes;    /* bytes per syscall at most (bounds mmap_lock
	                             hold time), rounded down to whole pages, at
	                             least one page; 0 = the kernel's limit
	                             (MAX_RW_COUNT, 2 GiB - 4 KiB) */
	int mode;                 /* PURGE_MODE_*; AUTO = $PURGE_MODE if valid, else AUTO */
	uint32_t reserved32;      /* must be zero */
	/* Called once for every range, or part of one, that was NOT purged,
	 * with a negative errno (-ENOMEM: hole in the range, -EINVAL: locked,
	 * PFNMAP, or MADV_FREE on a non-anonymous mapping, -EPERM: sealed,
	 * -ENOSYS etc.: process_madvise refused in PURGE_MODE_VECTORED, -EIO:
	 * the kernel returned a count that names no range).  The range is what
	 * was enqueued (after any cancel trimmed it), or the part of it one
	 * system call covered when max_call_bytes cut it between calls (or,
	 * with PURGE_HUGE, the part of it in the frames a flush settled):
	 * neighbours that coalescing merged are tried again one by one when
	 * the merged call fails, so only bad ranges are reported.
	 * Parts of it may have been purged (the kernel advises around a hole):
	 * treat it as "not known to be zero".  Runs inside the library call that
	 * flushed, with the queue busy: calls on the same queue from inside it
	 * return -EBUSY, except purge_get_stats, purge_get_batch and
	 * purge_oldest_ns.  It must return normally: a longjmp out of it leaves
	 * the queue busy for good (and, with PURGE_LOCKED, its lock held).
	 * Thread cancellation is held off while it runs and acts at the
	 * thread's next cancellation point after the library call. */
	void (*on_failure)(void *arg, void *addr, size_t len, int err);
	void *arg;
	uint64_t reserved[7]; /* must be zero (-EINVAL otherwise) */
};

/* Counters, all in enqueued terms.  At every point:
 *   enqueued_bytes == purged_bytes + cancelled_bytes + failed_bytes + pending_bytes
 * The struct keeps its size across 2.x releases (reserved space). */
struct purge_stats {
	uint64_t enqueued_ranges; /* accepted by purge_enqueue (after trimming) */
	uint64_t enqueued_bytes;
	uint64_t merged_ranges;   /* ranges submitted in one iovec with a neighbour */
	uint64_t cancelled_bytes; /* removed by purge_cancel */
	uint64_t flushes;         /* flushes that had ranges to settle, partial ones included */
	uint64_t auto_flushes;    /* of those, started inside purge_enqueue or purge_cancel */
	uint64_t pmadv_calls;     /* process_madvise system calls */
	uint64_t madv_calls;      /* madvise system calls */
	uint64_t short_counts;    /* process_madvise calls that stopped early */
	uint64_t fallbacks;       /* times a flush switched to the madvise loop */
	uint64_t purged_bytes;    /* accepted by the kernel */
	uint64_t failed_ranges;   /* reported through on_failure */
	uint64_t failed_bytes;    /* their lengths, summed */
	uint64_t pending_ranges;  /* waiting for a flush */
	uint64_t pending_bytes;
	uint64_t flush_ns;     /* time spent in flushes (CLOCK_MONOTONIC) */
	uint64_t flush_max_ns; /* the longest flush */
	uint64_t call_max_ns;  /* the longest single system call */
	uint64_t call_iovecs;  /* iovecs over all process_madvise calls */
	uint64_t calls_by_iovecs[PURGE_STATS_IOV_BUCKETS];
	int advice;           /* the advice in effect (MADV_DONTNEED when MADV_FREE was
	                         asked for on a kernel without it) */
	int backend;          /* PURGE_BACKEND_* this queue's next flush uses */
	int zeroed;           /* 1: purged private anonymous pages read back as zero
	                         (MADV_DONTNEED[_LOCKED]); 0: contents undefined until
	                         written (MADV_FREE) or kept (COLD, PAGEOUT) */
	unsigned env_ignored; /* PURGE_ENV_* knobs that were set but invalid */
	/* PURGE_HUGE (2.1): */
	uint64_t frames_whole; /* huge-page frames a flush gave the kernel whole */
	uint64_t frames_split; /* purges of part of a huge-backed frame (it is split) */
	uint64_t held_ranges;  /* pending ranges held for their frame, now */
	uint64_t held_bytes;
	uint64_t reserved[12]; /* zero */
};
#define PURGE_STATS_FRAMES 1 /* struct purge_stats has the four fields above */

/* MAJOR * 10000 + MINOR * 100 + PATCH of the library that runs. */
int purge_version(void);

/* Bytes of caller memory purge_queue_init() needs for `capacity` ranges
 * (0 = default): about 107 bytes a range plus 53 KiB (160 KiB for the
 * default 1024), on a 64-bit system.  A queue that only enqueues and
 * flushes writes 16 bytes a range of it (24 when it keeps ages); the rest
 * is for cancel's index and partial flushes, written once it uses them.
 * Returns 0 when capacity exceeds PURGE_CAPACITY_MAX or the size does not
 * fit a size_t. */
size_t purge_queue_bytes(unsigned capacity);

/* Build a queue inside caller memory `mem` of `size` bytes (at least
 * purge_queue_bytes(capacity), aligned to 16 bytes; only the first few KiB
 * are written here, the rest as ranges arrive).  The memory must stay
 * valid until purge_queue_destroy().  Makes two system calls: madvise(NULL,
 * 0, advice) to check that the kernel knows the advice (MADV_FREE unknown:
 * the queue uses MADV_DONTNEED and says so in its stats), and, in
 * PURGE_MODE_AUTO, the process-wide probe of purge_backend() the first time.
 * Returns 0, -EINVAL (bad argument or config: purge_config_check() names
 * the field), -ENOSPC (mem too small) or
 * -EOPNOTSUPP (advice unknown to this kernel, e.g. MADV_DONTNEED_LOCKED
 * before 5.18). */
int purge_queue_init(purge_queue **qp, void *mem, size_t size, const struct purge_config *cfg);

/* Same as purge_queue_init() with storage from mmap.  Also -ENOMEM. */
int purge_queue_create(purge_queue **qp, const struct purge_config *cfg);

/* Which field of cfg purge_queue_init() and purge_queue_create() would
 * refuse (2.3): NULL when cfg is valid (a NULL cfg is: the defaults), else
 * a static string that starts with the field's name as the struct spells
 * it and a colon, then says the rule it breaks: "batch: above
 * PURGE_BATCH_MAX (1024)", "flags: PURGE_HUGE with PURGE_NO_COALESCE",
 * "reserved[2]: must be zero".  The first invalid field in the struct's
 * order is named.  It is the queues' own check: they refuse cfg with
 * -EINVAL exactly when this answers non-NULL.  The environment is not
 * read: an invalid PURGE_BATCH or PURGE_MODE is ignored (and flagged in
 * purge_stats.env_ignored), never makes a config invalid.  No system
 * call, no allocation; safe anywhere. */
const char *purge_config_check(const struct purge_config *cfg);

/* Flush what is pending, then release the queue (and its mmap'ed storage
 * when it came from purge_queue_create).  Returns what purge_flush()
 * returns; the queue is gone either way unless -EBUSY or -EINVAL.  A
 * queue in caller memory is marked destroyed: later calls on it answer
 * -EINVAL (purge_oldest_ns and purge_get_batch 0, purge_get_stats zeros)
 * while that memory is left as it is; once the memory is reused, or
 * unmapped (purge_queue_create), nothing can be detected. */
int purge_queue_destroy(purge_queue *q);

/* Queue [addr, addr+len) to be purged.  O(1), no system call, unless the
 * range fills the queue (capacity) or crosses max_pending_bytes or
 * max_delay_ns: then an automatic flush settles the whole queue, this
 * range included, or, with PURGE_INCREMENTAL, the oldest `batch` ranges at
 * a time until the queue is back under every threshold it crossed.  When
 * cancels' splits have used up the queue's spare room, the oldest `batch`
 * ranges are settled first, before the range is added.
 * len == 0 is a no-op.  Without PURGE_TRIM, addr and len must be page
 * multiples; with it the range is shrunk inward (and a range with no whole
 * page is a no-op).  Returns 0, or -EINVAL (NULL queue or address,
 * unaligned, addr+len overflows or passes the architecture's largest user
 * address: 2^56 on x86_64 and riscv64, 2^52 on aarch64; a machine with
 * fewer page-table levels stops lower, at 2^47 on 4-level x86_64, and a
 * range in between is accepted and reported failed at flush time), -EBUSY
 * (called from on_failure).
 * Failures of an automatic flush are reported through stats and on_failure,
 * not through this return value.  Check it (PURGE_MUST_CHECK): on an error
 * nothing was queued, and the range will not be purged. */
int purge_enqueue(purge_queue *q, void *addr, size_t len) PURGE_MUST_CHECK;

/* Remove every pending byte of the pages [addr, addr+len) touches:
 * ranges inside them are dropped, ranges overlapping them are trimmed or
 * split (a split part keeps its age).  Afterwards no byte of those pages
 * is purged by this queue.  Call it before reusing memory, after taking it
 * (see Threads above).  Unaligned bounds are widened outward to pages
 * (never purge too much): the answer is about whole pages, see "Reuse and
 * zeroes" above; len == 0 is a no-op.  O(log n) per pending
 * range it touches; the first cancel after enqueues also indexes them
 * (O(log n) each, or O(n) in bulk).  No system call, except when splits
 * have used up the queue's spare room (the oldest `batch` ranges are
 * settled first) or more than 32 enqueues overlapped pending bytes (those
 * are settled).  Returns 1 when it removed pending bytes (they were never
 * purged by this queue), 0 when nothing in those pages was pending, or
 * -EINVAL (NULL or destroyed queue, addr+len overflows), -EBUSY (called
 * from on_failure).  Check it (PURGE_MUST_CHECK): after an error nothing
 * was removed, the interval may still be pending, and a flush would
 * discard what is written there, so the memory must not be reused until a
 * cancel succeeds. */
int purge_cancel(purge_queue *q, void *addr, size_t len) PURGE_MUST_CHECK;

/* Settle everything pending, merging ranges that touch.  Every pending
 * byte ends purged or reported failed.  Returns the number of on_failure
 * reports it made (>= 0), or -EINVAL (NULL), -EBUSY (called from
 * on_failure).  O(n) plus the system calls (with PURGE_HUGE, plus the
 * PAGEMAP_SCANs that count frames_split: see "Huge pages").  A shared
 * queue's flush lets go of its lock for every system call and settles in
 * rounds of at most 4 * batch ranges (not merged across rounds), what was
 * pending when it began: see "Threads and waits" for what other threads
 * may do meanwhile. */
int purge_flush(purge_queue *q);

/* Settle, oldest first, every range enqueued at least age_ns ago (0 = all:
 * purge_flush).  Ranges settle in enqueue order; the parts a cancel splits
 * off a range keep its place, in address order.  Ages come from
 * CLOCK_MONOTONIC_COARSE at enqueue (see "Ages" above), which lags
 * CLOCK_MONOTONIC by up to two ticks (the timekeeper advances in whole
 * ticks of 1-10 ms for CONFIG_HZ 1000..100; 3-7 ms measured with a 4 ms
 * tick): a range may count as up to that much older, never younger.
 * Returns what purge_flush returns.  With PURGE_HUGE it settles the parts
 * the frame plan holds too (their huge pages split): an event loop that
 * keeps them calls purge_flush_due().  O(k log n) for the k ranges settled
 * out of n pending, plus the system calls. */
int purge_flush_older(purge_queue *q, uint64_t age_ns);

/* Settle the oldest ranges until at most keep_bytes are pending (with
 * PURGE_HUGE, not counting what the frame plan holds).  Returns what
 * purge_flush returns.  O(k log n) for the k ranges settled out of n
 * pending, plus the system calls. */
int purge_flush_to(purge_queue *q, size_t keep_bytes);

/* For an event loop: settle what has waited age_ns, keeping what PURGE_HUGE
 * holds, and say when the next thing is due (2.2).  Without PURGE_HUGE it
 * settles what purge_flush_older(q, age_ns) does.  With it, the ranges at
 * least age_ns old go through the frame plan ("Huge pages"): their parts
 * in wholly pending frames go, with the whole frame; their parts in
 * huge-backed frames stay held until they are also max_delay_ns old (no
 * limit when 0), so a loop that calls it splits no huge page that waiting
 * could free whole.  An age_ns of 0 makes everything due.  *next_ns (when
 * next_ns is not NULL) is the CLOCK_MONOTONIC time at which this call next
 * has something to settle: age_ns after the oldest range not held was
 * enqueued, or, for held ranges, max(age_ns, max_delay_ns) after the
 * oldest of them; UINT64_MAX when nothing will be (nothing pending, or
 * only held ranges and no max_delay_ns), and after an error.  Ages are
 * purge_flush_older()'s: read up to two ticks early, so that what is due
 * at *next_ns is old enough then.  Use an age_ns of several ticks (1-10 ms
 * each, clock_getres(CLOCK_MONOTONIC_COARSE)): below one, nearly every
 * range is due as soon as it is enqueued, and each call settles about
 * everything, as purge_flush() would.  When nothing is due it makes no system
 * call and counts no flush.  Returns what purge_flush returns: the
 * on_failure reports (>= 0), or -EINVAL (NULL or destroyed queue), -EBUSY
 * (called from on_failure).  O(k log n) for the k ranges settled out of n
 * pending, plus the system calls; O(1) when nothing is due. */
int purge_flush_due(purge_queue *q, uint64_t age_ns, uint64_t *next_ns);

/* CLOCK_MONOTONIC ns (read from CLOCK_MONOTONIC_COARSE, up to two ticks
 * early) at which the oldest pending range was enqueued, held ones
 * included; 0 when nothing is pending or q is NULL.  An event loop
 * schedules its next purge_flush_older from it: no daemon (with
 * PURGE_HUGE, purge_flush_due's deadline instead, which knows what is
 * held).  O(1). */
uint64_t purge_oldest_ns(const purge_queue *q);

/* Iovecs per process_madvise call for the next flushes, 1..PURGE_BATCH_MAX.
 * Returns 0, -EINVAL (batch unchanged) or -EBUSY (from on_failure). */
int purge_set_batch(purge_queue *q, unsigned batch);
unsigned purge_get_batch(const purge_queue *q); /* 0 for a NULL queue */

/* Snapshot of the queue's counters; all zero for a NULL queue.  O(1). */
void purge_get_stats(const purge_queue *q, struct purge_stats *out);

/* Writes the counters into buf (at most len bytes, NUL-terminated when len
 * > 0) as "name value" lines, or as one JSON object with PURGE_FORMAT_JSON.
 * Returns the length the whole text needs, without the NUL (snprintf
 * style: larger than len - 1 means it was cut), or -EINVAL (NULL st, NULL
 * buf with len > 0, unknown flags).  No allocation; safe in a signal
 * handler or at exit. */
int purge_stats_format(const struct purge_stats *st, char *buf, size_t len, unsigned flags);

/* The path this process uses for `advice` (0 = MADV_DONTNEED) in
 * PURGE_MODE_AUTO: PURGE_BACKEND_VECTORED or PURGE_BACKEND_LOOP.  Runs the
 * one-time probe (a real one-page process_madvise on a scratch page) and
 * honours PURGE_MODE=loop.  -EINVAL for an advice the library does not
 * take. */
int purge_backend(int advice);

/* Opens the memory-pressure trigger for this process ($MEMORY_PRESSURE_WATCH and
 * $MEMORY_PRESSURE_WRITE when set, else /proc/pressure/memory with a default
 * threshold) and returns a file descriptor that polls ready on pressure, or a
 * negative errno (-EOPNOTSUPP where the kernel has no PSI; a trigger the
 * environment names but that cannot be opened is an error, never a silent
 * fallback to the default).  No thread, no malloc. */
int purge_pressure_open(void);
/* The protocol is systemd's (docs/PRESSURE.md).  The fd is O_CLOEXEC and
 * O_NONBLOCK.  What WATCH may name, checked on what is opened:
 *   a PSI file (a regular file on procfs or cgroupfs that reads as PSI):
 *     WRITE's bytes are written to it, or the default trigger "some 200000
 *     2000000" (200 ms of stall in 2 s) when WRITE is unset or empty; any
 *     other regular file is -ENOTTY, with nothing written;
 *   a FIFO: opened read-write (no POLLHUP when a notifier closes), nothing
 *     written (the process would read its own bytes back);
 *   an AF_UNIX stream socket: connected, WRITE's bytes written;
 *   a character device: opened read-only, nothing written; the memory
 *     devices but /dev/null (major 1: zero, urandom, kmsg...) are -ENOTTY;
 *   /dev/null however spelled or linked (device 1:3), or "": -EHOSTDOWN
 *     (monitoring turned off: no fd, not a failure).
 * Poll for POLLPRI when fstat() says S_ISREG (never read it), else POLLIN.
 * POLLPRI alone: an event.  POLLIN: read once (one bounded read per wake,
 * never until empty); bytes are an event, 0 bytes the end.  POLLERR,
 * POLLHUP, POLLNVAL (for a PSI file, POLLPRI | POLLERR: its cgroup is
 * gone): the end; close the fd and stop watching.  On an event,
 * purge_flush() each queue.  Also -EINVAL: WATCH is not an absolute path,
 * WRITE is not base64, or the kernel refused the trigger (without
 * CAP_SYS_RESOURCE the window must be a multiple of 2 s, Linux 6.5+);
 * -E2BIG: WRITE decodes to more than 256 bytes; -EISDIR, -EBADF: WATCH
 * names a directory or another kind of inode; -EAGAIN: the file changed
 * between stat() and open(); or the errno of stat(), open(), connect() or
 * write() on it.  purge_pressure_open(3) has what each revents bit means
 * for each kind. */

/* A lock of the caller's (2.3): see purge_set_lock(). */
struct purge_lock {
	void (*lock)(void *arg);   /* take the caller's lock */
	void (*unlock)(void *arg); /* let it go */
	void *arg;
};

/* Share an unlocked queue between threads under the caller's own lock
 * (2.3): every call on q is then made with that lock held, and the library
 * lets go of it, through lk->unlock, around each system call of a flush
 * and while a call waits for another thread's (see "Threads and waits"),
 * and takes it again through lk->lock before it returns.  The allocator
 * keeps its own lock (jemalloc's malloc_mutex_t, with its lock-order
 * checks) and gets the queue's behaviour of PURGE_LOCKED.  lk is copied;
 * NULL makes q owned by one thread again.  Set it while no flush runs.
 * Returns 0, -EINVAL (NULL or destroyed queue, a PURGE_LOCKED queue, lk
 * without both functions) or -EBUSY (from on_failure or while a flush
 * runs).  O(1). */
int purge_set_lock(purge_queue *q, const struct purge_lock *lk);

/* For atfork handlers of programs that share a queue between threads and
 * fork: prepare takes the queue (PURGE_LOCKED: its lock; under
 * purge_set_lock the caller holds its own) and waits for the system call
 * another thread's flush has in the kernel, after which that flush stays
 * parked; parent gives the queue back; child makes it usable in the child
 * (whatever another thread of the parent was doing with it) and settles
 * the rest of a round the parked flush had taken, so that the child never
 * keeps a half-settled queue.  For queues of one thread, they do nothing
 * that matters; NULL: nothing. */
void purge_fork_prepare(purge_queue *q);
void purge_fork_parent(purge_queue *q);
void purge_fork_child(purge_queue *q);

#ifdef __cplusplus
}
#endif
#endif /* PURGE_H */
