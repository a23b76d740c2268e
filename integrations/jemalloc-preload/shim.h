/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the jemalloc extent-hook shim (libpurge_jemalloc.so).
 *
 *   pool.c   address space the shim owns: disjoint ranges tagged with when
 *            they were last queued for purging (or "dirty"), found by
 *            address, size and age; plain data, the caller locks
 *   hooks.c  the nine extent hooks jemalloc calls, and the fork gate
 *   dirty.c  a failed purge against a hand-out: the pool's dirty tags and
 *            the shard's failure sequence
 *   check.c  PURGE_JEMALLOC_CHECK=1 verifications
 *   idle.c   the idle thread: settles what waited once releases stop, and
 *            everything under memory pressure
 *   thp.c    huge pages: jemalloc's opt.thp and the system's mode, the
 *            hint on fresh mappings, PURGE_HUGE on the queues
 *   shim.c   settings, libpurge queue, arena hook installation, fork
 *            handlers, stats
 *
 * The shim never calls malloc: it runs inside the allocator.
 */
#ifndef PURGE_JEMALLOC_SHIM_H
#define PURGE_JEMALLOC_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "purge.h"

/*
 * jemalloc 5.x's extent_hooks_t, declared here so that the shim builds
 * without jemalloc's development headers: it is a stable ABI (nine function
 * pointers in this order, each taking the table as first argument).
 */
struct je_hooks;
typedef void *(je_alloc_fn)(struct je_hooks *, void *, size_t, size_t, bool *, bool *, unsigned);
typedef bool(je_dalloc_fn)(struct je_hooks *, void *, size_t, bool, unsigned);
typedef void(je_destroy_fn)(struct je_hooks *, void *, size_t, bool, unsigned);
typedef bool(je_range_fn)(struct je_hooks *, void *, size_t, size_t, size_t, unsigned);
typedef bool(je_split_fn)(struct je_hooks *, void *, size_t, size_t, size_t, bool, unsigned);
typedef bool(je_merge_fn)(struct je_hooks *, void *, size_t, void *, size_t, bool, unsigned);

struct je_hooks {
	je_alloc_fn *alloc;
	je_dalloc_fn *dalloc;
	je_destroy_fn *destroy;
	je_range_fn *commit;
	je_range_fn *decommit;
	je_range_fn *purge_lazy;
	je_range_fn *purge_forced;
	je_split_fn *split;
	je_merge_fn *merge;
};

/* ---- pool.c ------------------------------------------------------------ */

/* pool_range.queued for a range that must never be reported zero: its
 * enqueue or its purge failed, the advice does not zero (MADV_FREE), it was
 * released twice, or it was put back unpurged.  0: never queued (an
 * untouched fresh mapping). */
#define POOL_DIRTY UINT64_MAX

struct pool_range {
	uintptr_t start, end;
	/* CLOCK_MONOTONIC_COARSE ns read just after the newest purge_enqueue
	 * of any part of it, 0 for none, or POOL_DIRTY.  Only a hint about
	 * whether its purge has run (compared with purge_oldest_ns()): zero is
	 * decided by purge_cancel's answer at hand-out, see hooks.c. */
	uint64_t queued;
	uint64_t stamp;           /* larger = released more recently */
	unsigned prev, next, bin; /* its size bin's list, newest first */
	unsigned older, newer;    /* the age list, by stamp */
};

/* A range's node in the address tree, a treap by start (a copy of the
 * range's), apart from the ranges: a descent reads only these. */
struct pool_node {
	uintptr_t start;
	unsigned left, right;
};

/* Size bins, for finding a fit without looking at every range: one per
 * page count up to POOL_EXACT pages, then four per power of two. */
#define POOL_EXACT 64
#define POOL_BINS  (POOL_EXACT + 1 + 4 * 52)

#define POOL_NONE UINT32_MAX /* no range: ends a list, an empty subtree */

/* Ranges live in an array by id (ids do not move; free ones are chained
 * by next), linked three ways: a tree by address, a list per size bin,
 * and one list by release time.  No operation moves other ranges. */
struct pool {
	struct pool_range *r; /* cap of them, mmap'ed */
	struct pool_node *t;  /* the tree's node of each, after them */
	unsigned n, cap, free;
	unsigned fresh;          /* ids never used start here */
	unsigned root;           /* of the address tree */
	unsigned oldest, newest; /* the ends of the age list */
	size_t bytes;            /* sum of the range lengths */
	uint64_t stamp;
	unsigned head[POOL_BINS];
	uint64_t used[(POOL_BINS + 63) / 64]; /* bins that are not empty */
};

/* What a hand-out needs. */
struct pool_want {
	uintptr_t at; /* this exact address, or 0 for anywhere */
	size_t size, align;
	uint64_t oldest; /* purge_oldest_ns(): ranges queued before it were settled */
	bool zero;       /* prefer ranges likely purged (else: likely still resident) */
	bool only;       /* take nothing but a range of that preferred class */
};

/* What pool_take() found. */
struct pool_piece {
	uintptr_t addr;
	bool dirty; /* queued == POOL_DIRTY: never zero, whatever cancel says */
};

int pool_init(struct pool *p, unsigned cap);
/* Adds [s, e), merging with touching neighbours.  -EEXIST when it overlaps a
 * range already held (a double release), -ENOSPC when the array is full. */
int pool_insert(struct pool *p, uintptr_t s, uintptr_t e, uint64_t queued);
/* Carves w->size bytes aligned to w->align (at w->at when non-zero) out of
 * the best range for w. */
bool pool_take(struct pool *p, const struct pool_want *w, struct pool_piece *out);
/* Removes the least recently released range (to give it back to the
 * kernel).  O(log n). */
bool pool_take_oldest(struct pool *p, uintptr_t *s, uintptr_t *e);
/* The size bin of a range of len bytes. */
unsigned pool_bin(uintptr_t len);
/* Marks every range that overlaps [s, e) as never zero. */
void pool_mark_dirty(struct pool *p, uintptr_t s, uintptr_t e);

/* ---- shim.c: state shared by the hooks --------------------------------- */

/* shim_config.stats */
enum { STATS_OFF, STATS_TEXT, STATS_JSON };

struct shim_config {
	unsigned max_ranges;   /* queue capacity: flush at this many ranges */
	size_t max_bytes;      /* past this much pending, flush the oldest... */
	size_t keep_bytes;     /* ...down to this (purge_flush_to) */
	uint64_t max_delay_ns; /* flush the ranges older than this */
	size_t pool_max;       /* address space kept before munmap; 0 = no limit */
	int advice;            /* MADV_DONTNEED or MADV_FREE */
	bool incremental;      /* PURGE_INCREMENTAL: automatic flushes oldest first */
	bool idle;             /* PURGE_JEMALLOC_IDLE: run the idle thread (idle.c) */
	bool huge;             /* PURGE_HUGE on the queues (thp.c) */
	bool keep_bg;          /* PURGE_JEMALLOC_KEEP_BG_THREAD=1: leave jemalloc's own */
	bool check;            /* PURGE_JEMALLOC_CHECK=1 */
	bool verbose;          /* PURGE_JEMALLOC_VERBOSE=1 */
	int stats;             /* PURGE_JEMALLOC_STATS: STATS_* */
};

/* Counters, relaxed atomics: cheap, always on, printed on request. */
struct shim_counters {
	_Atomic uint64_t alloc, alloc_pool, alloc_mmap, alloc_fixed, alloc_zero, alloc_fail;
	_Atomic uint64_t zero_fill; /* pool ranges purged on the spot for *zero */
	_Atomic uint64_t dalloc, dalloc_bytes, destroy, commit, decommit, split, merge;
	_Atomic uint64_t purge_lazy, purge_forced, direct_madv; /* direct madvise calls */
	_Atomic uint64_t mmaps, munmaps, trimmed_bytes, pool_full, double_release;
	_Atomic uint64_t enqueue_err, failures, flush_to;
	_Atomic uint64_t forks, fork_bypass; /* hooks that ran while a fork was prepared */
	_Atomic uint64_t fork_trimmed;       /* pool bytes unmapped after forks (fork_settle) */
	_Atomic uint64_t steal;              /* hand-outs from another arena's pool */
	_Atomic uint64_t idle_flushes;       /* the idle thread's age flushes */
	_Atomic uint64_t idle_wakes;         /* its returns from poll() */
	_Atomic uint64_t pressure_flushes;   /* its flushes at pressure events */
	_Atomic uint64_t bg_off;             /* times it turned jemalloc's background threads off */
	_Atomic uint64_t check_zero_ranges, check_zero_pages, check_pending;
};

/* shard.state */
enum { SHARD_NONE, SHARD_BUSY, SHARD_READY, SHARD_FAILED };

/*
 * One shard per hooked arena.  jemalloc passes the arena's index to every
 * hook and gives an extent back to the arena it came from, so an arena's
 * memory stays in its shard from dalloc to the next alloc, and one arena's
 * pending purge can never cover memory another arena hands out.  Threads
 * keep to their arena, so threads on different arenas share no lock and
 * write no shared cache line.  The queue and pool are set up by the arena's
 * first hook (shard_ready), so idle arenas cost nothing.
 */
struct shard {
	_Alignas(64) _Atomic unsigned in_hooks; /* the fork gate: hooks inside */
	/* coarse CLOCK_MONOTONIC ns of the last release, for the idle thread;
	 * written (relaxed) on this line, which every hook writes anyway */
	_Atomic uint64_t last_enqueue;
	_Atomic int state; /* SHARD_* */
	bool zeroing;      /* the queue's advice zeroes pages */
	purge_queue *q;    /* PURGE_LOCKED: an arena serves many threads */
	struct pool pool;
	pthread_mutex_t pool_lock; /* taken after the queue's lock, never before */
	_Atomic uint64_t fail_seq; /* bumped by every failed purge, under pool_lock */
	_Atomic size_t pending;    /* the queue's pending bytes when last read, plus
	                              what was enqueued since: an upper bound */
	/* bytes mapped minus bytes unmapped by hooks the fork gate turned
	 * away, since the last fork_settle() */
	_Atomic int64_t fork_net;
	struct shim_counters ct;
};

/* What thp.c found and does. */
struct shim_thp {
	char je[16];  /* jemalloc's opt.thp: "default", "always", "never", "" */
	char sys[16]; /* the system's: "always", "madvise", "never", "" (no THP) */
	int hint;     /* madvise() advice for fresh mappings, or 0 */
	bool forced;  /* PURGE_JEMALLOC_HUGE=0/1 decided shim_config.huge */
	bool bad_env; /* PURGE_JEMALLOC_HUGE was set to something else */
};

struct shim {
	struct shim_config cfg;
	struct shim_thp thp;
	struct shard *shard; /* nshard of them (arenas 0..opt.narenas), mmap'ed */
	unsigned nshard;
	size_t page;
	/* The sum of the shards' `pending`, for the bytes threshold. */
	_Alignas(64) _Atomic size_t pending;
	/* The fork gate (hooks.c): forks being prepared.  Written only by
	 * fork handlers, read by every hook: a line of its own. */
	_Alignas(64) _Atomic unsigned forking;
};

extern struct shim shim;
extern struct je_hooks shim_hooks;

/* A line to stderr, tagged purge_jemalloc[PID PROGRAM]: one write(), no
 * stdio buffer, no allocation. */
void shim_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "WHO[PID PROGRAM]" (program_invocation_short_name, at most 32 bytes of
 * it): the tag of every line the shim writes, so that output under time(1),
 * strace or a fork says whose it is. */
void shim_tag(char *buf, size_t len, const char *who);
/* The shard of an arena index (the same one every time). */
struct shard *shard_of(unsigned arena);
/* True when the shard's queue and pool are set up (the first call sets
 * them up); false when they could not be: stay away from both. */
bool shard_ready(struct shard *sh);
/* purge_cancel's answer (1: some of it was still pending, 0: none, or a
 * negative errno); in check mode also proves that nothing stays pending. */
int shim_cancel(struct shard *sh, void *addr, size_t len);
/* Cancel what may be pending on [s, e), then munmap it. */
void shim_unmap(struct shard *sh, uintptr_t s, uintptr_t e);
/* Reads the shard's pending bytes into the shards' sum; returns the sum. */
size_t shim_note_pending(struct shard *sh);
/* Turns jemalloc's background threads off when they are on (mallctl
 * "background_thread"); true when it did.  Not from a hook. */
bool shim_background_off(void);
/* After a purge_enqueue of len bytes: when the shards hold more than
 * max_bytes pending between them, purge_flush_to() down to keep_bytes,
 * this shard first. */
void shim_after_enqueue(struct shard *sh, size_t len);

/* ---- dirty.c ----------------------------------------------------------- */

/* on_failure's work: [s, e) was not purged.  Marks the pool's ranges that
 * overlap it dirty and bumps the shard's failure sequence. */
void shard_failed(struct shard *sh, uintptr_t s, uintptr_t e);
/* Takes a piece for w out of o's pool (with `try`, only when its lock is
 * free); *seq: o's failure sequence at the take. */
bool shard_take(struct shard *o, const struct pool_want *w, struct pool_piece *pc, uint64_t *seq,
                bool try);
/* Whether a piece taken by shard_take() from o (failure sequence seq then)
 * reads as zero, given the answer of the purge_cancel on exactly its bytes
 * that followed the take. */
bool shard_zero(struct shard *o, const struct pool_piece *pc, int pending, uint64_t seq);
#ifdef SHIM_TEST_SEAMS
/* Tests only: called by shard_failed() half-way, where another thread's
 * hand-out could run. */
extern void (*shim_seam_failure)(struct shard *sh);
#endif

/* ---- hooks.c: the fork gate --------------------------------------------- */

/* The atfork prepare handler's first step: waits until no hook is inside
 * the queue or the pool, and turns later hooks away from them until the
 * matching fork_gate_open(). */
void fork_gate_close(void);
void fork_gate_open(bool child);
/* After fork_gate_open(), in parent and child: the address space that
 * hooks mapped while the gate was closed, net of what they unmapped (when
 * positive), is unmapped from the pool's oldest ranges, whole, so that
 * forks do not grow the shard's address space (hooks.c, "Forks and
 * jemalloc's radix tree"). */
void fork_settle(struct shard *sh);

/* ---- idle.c ------------------------------------------------------------ */

/* At the end of start-up: the thread may start from now on, unless
 * PURGE_JEMALLOC_IDLE=0 or glibc's thread count cannot be found. */
void idle_setup(void);
/* From hook_dalloc, outside the gate: the program released memory.  The
 * first time, starts the thread (a single-threaded process) or asks the
 * next extent allocation to (idle_allocating). */
void idle_released(void);
/* From hook_alloc, outside the gate. */
void idle_allocating(void);
/* In the atfork child handler: the parent's thread is gone, and its
 * trigger fd is the parent's; the child starts its own at its own first
 * release. */
void idle_fork_child(void);
bool idle_running(void);
/* Why there is no thread and never will be (for the verbose line), or
 * NULL. */
const char *idle_off(void);
/* 0 when the thread watches a pressure trigger, 1 before it opens one,
 * else why not (a negative errno from purge_pressure_open(), or -EPIPE
 * once it dropped the trigger: end of file, an error or a hang-up). */
int idle_trigger(void);

/* ---- thp.c ------------------------------------------------------------ */

/* Reads the system's THP mode and decides shim.thp.hint and
 * shim.cfg.huge from jemalloc's opt.thp (NULL: unknown) and
 * PURGE_JEMALLOC_HUGE.  At start-up, before any shard is set up. */
void thp_setup(const char *je_thp);
/* The hint jemalloc's own mappings would get (MADV_HUGEPAGE or
 * MADV_NOHUGEPAGE), on a fresh mapping; errno is kept. */
void thp_hint(void *addr, size_t len);

/* ---- check.c ----------------------------------------------------------- */

/* purge_cancel, then a second one on the same bytes, which must answer 0
 * (nothing of [addr, addr+len) still pending).  Returns the first answer. */
int check_cancel(struct shard *sh, void *addr, size_t len);
/* A range about to be reported *zero = true must read as zeros. */
void check_zero(struct shard *sh, const void *addr, size_t len, const char *why);
/* Aborts with a message: the shim found a broken invariant. */
_Noreturn void check_fail(const char *what, const void *addr, size_t len);

#endif /* PURGE_JEMALLOC_SHIM_H */
