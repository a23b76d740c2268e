/* SPDX-License-Identifier: MIT */
/*
 * The extent hooks.  jemalloc calls them from any thread, often with its own
 * locks held, so they take only the shim's leaf locks (queue, then pool), never
 * call back into jemalloc, and leave errno as they found it.
 *
 * Ownership: an extent belongs to jemalloc from alloc to dalloc, and to the
 * shim (pool + pending purge) from dalloc to the next alloc that carves it.
 * Every hand-out cancels the pending purge on exactly the bytes handed out.
 *
 * The fork gate.  jemalloc registers its atfork handlers before the shim
 * does (see shim.c), so the shim's prepare handler runs first, while other
 * threads may sit in a hook holding a jemalloc lock and waiting for the
 * queue or pool lock.  Taking those locks there and then waiting for
 * jemalloc's locks in jemalloc's prefork would deadlock.  So prepare first
 * closes the gate: it waits until no hook is between gate_enter() and
 * gate_leave(), and hooks that arrive later do not touch the queue or the
 * pool (alloc maps fresh memory, dalloc and destroy unmap).  Only then does
 * it take the queue and pool locks.  A hook never waits for the gate, so
 * whatever jemalloc locks it holds are released; the order in which the
 * handlers were registered no longer matters.
 *
 * Forks and jemalloc's radix tree.  jemalloc registers every extent in a
 * radix tree whose leaves cover 1 GiB of address space each; the first
 * extent registered in a gigabyte makes its leaf, under the tree's
 * init_lock, with a base allocation that waits for a base mutex.
 * jemalloc's atfork handlers leave init_lock out.  So a thread that
 * starts a new leaf while a fork is prepared takes init_lock, then waits
 * for the base mutex that jemalloc's prefork holds, and the child is
 * born with init_lock held: it hangs at its own first new leaf, which is
 * likely the same one (its fresh mappings land where the parent's did).
 * New leaves are made only where the address space grows into a new
 * gigabyte, and the hooks the gate turns away made it grow: they map
 * fresh memory (which the pool keeps once jemalloc releases it) and
 * unmap jemalloc's releases, and the mappings' sizes do not match the
 * holes.  fork-storm -a 300: 1.7 GB of address space after 500 forks for
 * a live heap under 64 MiB, a new leaf every few seconds, each made by a
 * fresh mapping of the gate's, that is, during a fork.  jemalloc alone
 * unmaps what it releases and stays within its first gigabyte or two.
 * fork_settle() therefore gives back, after each fork, what the turned
 * away hooks mapped net of what they unmapped (when they mapped more),
 * as whole ranges from the pool's oldest: forks no longer grow the
 * address space (0 to 70 MiB from the first tenth of a 1,000-fork run to
 * its end, in 50 runs), and the tree gets no new leaves after start-up.
 */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include "shim.h"

#define INC(sh, f)    atomic_fetch_add_explicit(&(sh)->ct.f, 1, memory_order_relaxed)
#define ADD(sh, f, v) atomic_fetch_add_explicit(&(sh)->ct.f, (v), memory_order_relaxed)

/* Fresh mappings are at least this large; the rest waits in the pool as
 * zero memory, so runs of small slab requests cost one mmap, not many. */
#define MAP_MIN ((size_t)2 << 20)
/* ...and at least this large where huge pages back the memory: see
 * map_len(). */
#define MAP_MIN_HUGE ((size_t)32 << 20)
/* Hand-outs at least this large may take from another arena's pool (see
 * steal()): below it, faulting the pages in costs less than looking (in
 * churn, 16 KiB values, stealing for every size halved the throughput). */
#define STEAL_MIN ((size_t)256 << 10)
/* Ranges given back to the kernel per release when over pool_max. */
#define TRIM_MAX 4

static const int prot = PROT_READ | PROT_WRITE;
static const int anon = MAP_PRIVATE | MAP_ANONYMOUS;

static int direct_madvise(struct shard *sh, void *addr, size_t len, int advice)
{
	INC(sh, direct_madv);
	return madvise(addr, len, advice);
}

/* ---- the fork gate ------------------------------------------------------ */

/* True: the caller may use the shard's queue and pool until gate_leave().
 * False: a fork is being prepared, or the shard could not be set up; stay
 * away from both.  The counter is the shard's: hooks on different arenas
 * write no common line. */
static bool gate_enter(struct shard *sh)
{
	atomic_fetch_add(&sh->in_hooks, 1);
	bool forking = atomic_load(&shim.forking) != 0;
	if (!forking && shard_ready(sh))
		return true;
	atomic_fetch_sub(&sh->in_hooks, 1);
	if (forking)
		INC(sh, fork_bypass);
	return false;
}

static void gate_leave(struct shard *sh)
{
	atomic_fetch_sub(&sh->in_hooks, 1);
}

/* Dekker-style with gate_enter (both sides sequentially consistent): once
 * forking is visible and in_hooks reads 0, every later gate_enter sees
 * forking.  A counter, not a flag: two threads may fork at once. */
void fork_gate_close(void)
{
	atomic_fetch_add(&shim.forking, 1);
	for (unsigned i = 0; i < shim.nshard; i++)
		while (atomic_load(&shim.shard[i].in_hooks))
			sched_yield();
}

void fork_gate_open(bool child)
{
	if (child) {
		/* one thread left, and it is not in a hook */
		for (unsigned i = 0; i < shim.nshard; i++)
			atomic_store(&shim.shard[i].in_hooks, 0);
		atomic_store(&shim.forking, 0);
	} else {
		atomic_fetch_sub(&shim.forking, 1);
	}
}

/* Whole ranges, oldest first: holes of just what a fork added (the rest
 * of a range pooled again) fitted no later mapping, and the address
 * space grew as before (1.3-1.7 GB in 500 forks of fork-storm -a 300, with
 * at least 64 MiB or exactly that much cut from a range). */
void fork_settle(struct shard *sh)
{
	uintptr_t vs[16], ve[16];
	uint64_t got = 0;
	unsigned nv = 1;

	/* this fork's net, or nothing: a fork that unmapped more than it
	 * mapped gives back nothing, and its surplus is not carried over (the
	 * holes of jemalloc's released extents fit few later mappings: with
	 * the surplus carried, the address space grew 0.5 GB in 1,000 forks
	 * of test-fork.sh's run) */
	int64_t net = atomic_exchange(&sh->fork_net, 0);
	if (net <= 0 || !gate_enter(sh))
		return;
	while (got < (uint64_t)net && nv) {
		pthread_mutex_lock(&sh->pool_lock);
		for (nv = 0; got < (uint64_t)net && nv < 16 &&
		             pool_take_oldest(&sh->pool, &vs[nv], &ve[nv]);
		     nv++)
			got += ve[nv] - vs[nv];
		pthread_mutex_unlock(&sh->pool_lock);
		for (unsigned i = 0; i < nv; i++) {
			ADD(sh, fork_trimmed, ve[i] - vs[i]);
			shim_unmap(sh, vs[i], ve[i]);
		}
	}
	gate_leave(sh);
}

/* ---- handing memory out ------------------------------------------------ */

static void pool_put_dirty(struct shard *sh, uintptr_t s, size_t len)
{
	pthread_mutex_lock(&sh->pool_lock);
	int ret = pool_insert(&sh->pool, s, s + len, POOL_DIRTY);
	pthread_mutex_unlock(&sh->pool_lock);
	if (ret)
		shim_unmap(sh, s, s + len);
}

/* Whether a hand-out reads as zero: the rule is in dirty.c.  The pool's
 * choice between likely purged and likely resident ranges uses
 * purge_oldest_ns() as a hint only. */

/*
 * The slow path of a hand-out of STEAL_MIN bytes or more that does not need
 * zeros and found no likely resident range in its own pool: such a range
 * from another arena's pool saves faulting the whole extent in.  Only shards with something pending
 * can hold one; a pool whose lock is taken is skipped.  The piece's purge
 * is cancelled on its own shard's queue, and from then on it is this
 * arena's (its dalloc queues it here).  Called inside this shard's fork
 * gate: a fork waits until every hook has left, so it never finds another
 * shard's locks taken from here.
 */
static struct shard *steal(struct shard *sh, struct pool_want w, struct pool_piece *pc,
                           uint64_t *seq)
{
	unsigned me = (unsigned)(sh - shim.shard);

	for (unsigned k = 1; k < shim.nshard; k++) {
		struct shard *o = &shim.shard[(me + k) % shim.nshard];
		if (atomic_load(&o->state) != SHARD_READY || atomic_load(&o->pending) == 0)
			continue;
		w.oldest = purge_oldest_ns(o->q);
		if (shard_take(o, &w, pc, seq, true))
			return o;
	}
	return NULL;
}

static void *from_pool(struct shard *sh, void *want, size_t size, size_t align, bool need_zero,
                       bool *zeroed)
{
	/* first a range of the preferred class, here or (slow path) in
	 * another arena's pool; then any range here */
	bool only = !want && !need_zero && size >= STEAL_MIN;
	struct pool_want w = {(uintptr_t)want,        size,      align,
	                      purge_oldest_ns(sh->q), need_zero, only};
	struct pool_piece pc;
	struct shard *src = sh;
	uint64_t seq;
	bool got = shard_take(sh, &w, &pc, &seq, false);

	if (!got && w.only && (src = steal(sh, w, &pc, &seq)) != NULL) {
		got = true;
		INC(sh, steal);
	} else if (!got && w.only) {
		src = sh;
		w.only = false;
		got = shard_take(sh, &w, &pc, &seq, false);
	}
	if (!got)
		return NULL;
	void *p = (void *)pc.addr;
	int pending = shim_cancel(src, p, size);
	*zeroed = shard_zero(src, &pc, pending, seq);
	if (need_zero && !*zeroed) {
		/* jemalloc demands zeros: DONTNEED now rather than memset,
		 * which would fault in every page */
		if (direct_madvise(sh, p, size, MADV_DONTNEED)) {
			pool_put_dirty(sh, pc.addr, size);
			return NULL;
		}
		INC(sh, zero_fill);
		*zeroed = true;
	}
	INC(sh, alloc_pool);
	return p;
}

/* new_addr requests extend an extent in place: that exact address or nothing.
 * MAP_FIXED_NOREPLACE (4.17+) refuses to clobber a mapping; older kernels
 * take it as a hint, hence the address check. */
static void *map_at(struct shard *sh, void *want, size_t size)
{
	void *p = mmap(want, size, prot, anon | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	INC(sh, mmaps);
	if (p != want) {
		munmap(p, size);
		INC(sh, munmaps);
		return NULL;
	}
	thp_hint(p, size);
	return p;
}

/* Keep the unused tail of a fresh mapping: untouched and never queued. */
static void keep_tail(struct shard *sh, uintptr_t s, uintptr_t e)
{
	if (s == e)
		return;
	pthread_mutex_lock(&sh->pool_lock);
	int ret = pool_insert(&sh->pool, s, e, 0);
	pthread_mutex_unlock(&sh->pool_lock);
	if (ret) {
		munmap((void *)s, e - s);
		INC(sh, munmaps);
	}
}

/* What map_fresh maps for size bytes: at least MAP_MIN when the rest is
 * kept; where huge pages back the memory, a multiple of MAP_MIN (the
 * frame size on x86_64), which the kernel aligns to a frame (mm/mmap.c,
 * __get_unmapped_area: anonymous mappings of a PMD multiple, 6.7 and
 * later), so that every frame of it can be one huge page, and at least
 * MAP_MIN_HUGE: the next hand-outs are carved from the kept rest, right
 * after this one, and share its last frame.  With 2 MiB mappings, each
 * 1.25 MiB extent (CPython's 1 MiB bytearrays) had a frame of its own,
 * faulted in whole as one huge page: 200 of them peaked at 433 MiB
 * against jemalloc's 283 MiB (README.md, "Huge pages"). */
static size_t map_len(size_t size, bool keep)
{
	if (!keep)
		return size;
	if (shim.cfg.huge && size <= MAP_MIN_HUGE)
		return MAP_MIN_HUGE;
	if (size <= MAP_MIN)
		return MAP_MIN;
	size_t up = (size + MAP_MIN - 1) & ~(MAP_MIN - 1);
	return shim.cfg.huge && up > size ? up : size;
}

/* keep: the rest of map_len goes to the pool (not while a fork is
 * prepared: then it is unmapped with the alignment slack). */
static void *map_fresh(struct shard *sh, size_t size, size_t align, bool keep)
{
	size_t len = map_len(size, keep);
	size_t over = len + (align > shim.page ? align - shim.page : 0);

	if (over < len)
		return NULL;
	char *m = mmap(NULL, over, prot, anon, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	INC(sh, mmaps);
	thp_hint(m, over);
	uintptr_t b = (uintptr_t)m, a = (b + align - 1) & ~(uintptr_t)(align - 1);
	if (a != b) {
		munmap(m, a - b);
		INC(sh, munmaps);
	}
	if (keep) {
		keep_tail(sh, a + size, b + over);
	} else if (b + over > a + size) {
		munmap((void *)(a + size), b + over - (a + size));
		INC(sh, munmaps);
	}
	return (void *)a;
}

static void *hook_alloc(struct je_hooks *h, void *new_addr, size_t size, size_t align, bool *zero,
                        bool *commit, unsigned arena)
{
	int saved = errno;
	bool zeroed = false;

	(void)h;
	struct shard *sh = shard_of(arena);
	INC(sh, alloc);
	if (new_addr)
		INC(sh, alloc_fixed);
	bool in = gate_enter(sh);
	void *p = in ? from_pool(sh, new_addr, size, align, *zero, &zeroed) : NULL;
	if (!p) {
		p = new_addr ? map_at(sh, new_addr, size) : map_fresh(sh, size, align, in);
		zeroed = true;
		if (p)
			INC(sh, alloc_mmap);
		if (p && !in)
			atomic_fetch_add(&sh->fork_net, (int64_t)size);
	}
	if (in) {
		gate_leave(sh);
		idle_allocating();
	}
	if (!p) {
		INC(sh, alloc_fail);
		errno = saved;
		return NULL; /* *zero and *commit stay as they were */
	}
	if (zeroed) {
		INC(sh, alloc_zero);
		if (shim.cfg.check)
			check_zero(sh, p, size, "alloc");
	}
	*zero = zeroed;
	*commit = true; /* anonymous memory, overcommitted: committed in jemalloc's sense */
	errno = saved;
	return p;
}

/* ---- taking memory back ------------------------------------------------ */

/* Insert a released range; gives back the oldest ranges over pool_max. */
static void release(struct shard *sh, uintptr_t s, size_t len, uint64_t queued, uint64_t seq)
{
	uintptr_t vs[TRIM_MAX], ve[TRIM_MAX];
	unsigned nv = 0;

	pthread_mutex_lock(&sh->pool_lock);
	if (atomic_load(&sh->fail_seq) != seq)
		queued = POOL_DIRTY; /* a purge failed while the range was in no list */
	int ret = pool_insert(&sh->pool, s, s + len, queued);
	if (ret == -EEXIST)
		pool_mark_dirty(&sh->pool, s, s + len);
	while (!ret && shim.cfg.pool_max && sh->pool.bytes > shim.cfg.pool_max && nv < TRIM_MAX &&
	       pool_take_oldest(&sh->pool, &vs[nv], &ve[nv]))
		nv++;
	pthread_mutex_unlock(&sh->pool_lock);

	if (ret == -EEXIST) {
		/* released twice: the overlap is the pool's, not jemalloc's;
		 * drop this purge, the pool's copy was marked dirty above */
		INC(sh, double_release);
		if (shim.cfg.check)
			check_fail("extent released twice", (void *)s, len);
		shim_cancel(sh, (void *)s, len);
	} else if (ret) {
		INC(sh, pool_full);
		shim_unmap(sh, s, s + len);
	}
	for (unsigned i = 0; i < nv; i++) {
		ADD(sh, trimmed_bytes, ve[i] - vs[i]);
		shim_unmap(sh, vs[i], ve[i]);
	}
}

/* The clock libpurge stamps ranges with, read after the enqueue: never
 * earlier than the range's stamp. */
static uint64_t coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Take ownership (return false): queue the purge, pool the address space. */
static bool hook_dalloc(struct je_hooks *h, void *addr, size_t size, bool committed, unsigned arena)
{
	int saved = errno;

	(void)h;
	(void)committed; /* never false: decommit always opts out */
	struct shard *sh = shard_of(arena);
	INC(sh, dalloc);
	ADD(sh, dalloc_bytes, size);
	if (!gate_enter(sh)) {
		/* jemalloc's range, nothing of it pending: give it back */
		munmap(addr, size);
		INC(sh, munmaps);
		atomic_fetch_sub(&sh->fork_net, (int64_t)size);
		errno = saved;
		return false;
	}
	uint64_t seq = atomic_load(&sh->fail_seq);
	int ret = purge_enqueue(sh->q, addr, size);
	if (ret)
		INC(sh, enqueue_err);
	uint64_t now = coarse_now();
	/* the idle thread's clue that releases go on (idle.c) */
	atomic_store_explicit(&sh->last_enqueue, now, memory_order_relaxed);
	/* at least 1: 0 means never queued */
	uint64_t queued = !ret && sh->zeroing ? now | 1 : POOL_DIRTY;
	release(sh, (uintptr_t)addr, size, queued, seq);
	if (!ret)
		shim_after_enqueue(sh, size);
	gate_leave(sh);
	idle_released();
	errno = saved;
	return false;
}

static void hook_destroy(struct je_hooks *h, void *addr, size_t size, bool committed,
                         unsigned arena)
{
	int saved = errno;

	(void)h;
	(void)committed;
	struct shard *sh = shard_of(arena);
	INC(sh, destroy);
	if (gate_enter(sh)) {
		shim_unmap(sh, (uintptr_t)addr, (uintptr_t)addr + size);
		gate_leave(sh);
	} else {
		munmap(addr, size); /* jemalloc's: nothing of it pending */
		INC(sh, munmaps);
		atomic_fetch_sub(&sh->fork_net, (int64_t)size);
	}
	errno = saved;
}

/* ---- the rest: jemalloc keeps ownership, so nothing can be deferred ---- */

/* Committing must yield zeroed pages; our pages never leave the committed
 * state (decommit opts out), so this only runs if jemalloc insists. */
static bool hook_commit(struct je_hooks *h, void *addr, size_t size, size_t off, size_t len,
                        unsigned arena)
{
	int saved = errno;

	(void)h;
	(void)size;
	struct shard *sh = shard_of(arena);
	INC(sh, commit);
	bool err = direct_madvise(sh, (char *)addr + off, len, MADV_DONTNEED) != 0;
	errno = saved;
	return err;
}

/* Opt out: memory stays committed and jemalloc retains it as such. */
static bool hook_decommit(struct je_hooks *h, void *addr, size_t size, size_t off, size_t len,
                          unsigned arena)
{
	(void)h;
	(void)addr;
	(void)size;
	(void)off;
	(void)len;
	struct shard *sh = shard_of(arena);
	INC(sh, decommit);
	return true;
}

static bool purge_now(struct shard *sh, void *addr, size_t off, size_t len, int advice)
{
	int saved = errno;
	bool err = direct_madvise(sh, (char *)addr + off, len, advice) != 0;

	errno = saved;
	return err;
}

/* jemalloc may reuse the range at any moment without telling us, so a
 * deferred purge could hit live data: these purge at once. */
static bool hook_purge_lazy(struct je_hooks *h, void *addr, size_t size, size_t off, size_t len,
                            unsigned arena)
{
	(void)h;
	(void)size;
	struct shard *sh = shard_of(arena);
	INC(sh, purge_lazy);
	return purge_now(sh, addr, off, len, MADV_FREE);
}

/* Must leave zeros behind: MADV_DONTNEED on private anonymous memory does. */
static bool hook_purge_forced(struct je_hooks *h, void *addr, size_t size, size_t off, size_t len,
                              unsigned arena)
{
	(void)h;
	(void)size;
	struct shard *sh = shard_of(arena);
	INC(sh, purge_forced);
	return purge_now(sh, addr, off, len, MADV_DONTNEED);
}

/* All memory is private anonymous mmap: Linux splits and merges such
 * ranges freely (munmap and madvise work across VMA boundaries), so split
 * and merge are bookkeeping for jemalloc alone. */
static bool hook_split(struct je_hooks *h, void *addr, size_t size, size_t a, size_t b,
                       bool committed, unsigned arena)
{
	(void)h;
	(void)addr;
	(void)size;
	(void)a;
	(void)b;
	(void)committed;
	struct shard *sh = shard_of(arena);
	INC(sh, split);
	return false;
}

static bool hook_merge(struct je_hooks *h, void *a, size_t la, void *b, size_t lb, bool committed,
                       unsigned arena)
{
	(void)h;
	(void)a;
	(void)la;
	(void)b;
	(void)lb;
	(void)committed;
	struct shard *sh = shard_of(arena);
	INC(sh, merge);
	return false;
}

struct je_hooks shim_hooks = {
    .alloc = hook_alloc,
    .dalloc = hook_dalloc,
    .destroy = hook_destroy,
    .commit = hook_commit,
    .decommit = hook_decommit,
    .purge_lazy = hook_purge_lazy,
    .purge_forced = hook_purge_forced,
    .split = hook_split,
    .merge = hook_merge,
};
