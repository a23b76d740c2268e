/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the shim's address-space pool (pool.c): merging, carving,
 * exact-address requests, the hand-out preference and dirty marking.  Pure
 * bookkeeping, so it needs no jemalloc and no real memory behind the
 * addresses.  The addresses fit 32 bits: it runs on -m32 too.  A random
 * run over thousands of ranges checks the address tree (ordered, disjoint,
 * shallow, its keys the ranges' starts), the size bins and the age list
 * against each other after every
 * step, each hand-out against a look at every range, and each give-back
 * of the oldest range against the smallest stamp.
 * Also the failure sequence (dirty.c): a hand-out that runs while a failed
 * purge is being recorded must not be reported zero.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

#define K    ((uintptr_t)4096)
#define BASE ((uintptr_t)0x10000000)

static int failures;

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* ---- the pool's ranges in address order: a walk of its tree ---------- */

#define WALK_MAX 8192
static unsigned order[WALK_MAX], depth_max;

/* Fills order[] with the ids in address order, sets depth_max; returns how
 * many there are (UINT32_MAX: deeper than the walk's stack). */
static unsigned walk(const struct pool *p)
{
	unsigned stack[512], sp = 0, n = 0, t = p->root;

	depth_max = 0;
	while (t != POOL_NONE || sp) {
		for (; t != POOL_NONE; t = p->t[t].left) {
			if (sp == 512)
				return UINT32_MAX;
			stack[sp++] = t;
			depth_max = sp > depth_max ? sp : depth_max;
		}
		t = stack[--sp];
		if (n < WALK_MAX)
			order[n] = t;
		n++;
		t = p->t[t].right;
	}
	return n;
}

/* The i-th range by address. */
static const struct pool_range *at(const struct pool *p, unsigned i)
{
	unsigned n = walk(p);

	if (i >= n || i >= WALK_MAX) {
		fprintf(stderr, "no range %u of %u\n", i, n);
		exit(1);
	}
	return &p->r[order[i]];
}

static struct pool fresh(unsigned cap)
{
	struct pool p;

	if (pool_init(&p, cap)) {
		perror("pool_init");
		exit(1);
	}
	return p;
}

/* oldest: what purge_oldest_ns() would say (0: nothing pending) */
static bool take(struct pool *p, uintptr_t at, size_t size, size_t align, uint64_t oldest,
                 bool zero, struct pool_piece *pc)
{
	struct pool_want w = {at, size, align, oldest, zero, false};

	return pool_take(p, &w, pc);
}

static void test_merge(void)
{
	struct pool p = fresh(8);

	EXPECT(pool_insert(&p, BASE, BASE + 4 * K, 3) == 0);
	EXPECT(pool_insert(&p, BASE + 8 * K, BASE + 12 * K, 5) == 0);
	EXPECT(p.n == 2);
	/* fills the hole: one range, tagged with its newest enqueue */
	EXPECT(pool_insert(&p, BASE + 4 * K, BASE + 8 * K, 1) == 0);
	EXPECT(p.n == 1 && at(&p, 0)->start == BASE && at(&p, 0)->end == BASE + 12 * K);
	EXPECT(at(&p, 0)->queued == 5 && p.bytes == 12 * K);
	/* a dirty neighbour makes the whole range dirty */
	EXPECT(pool_insert(&p, BASE + 12 * K, BASE + 13 * K, POOL_DIRTY) == 0);
	EXPECT(p.n == 1 && at(&p, 0)->queued == POOL_DIRTY && p.bytes == 13 * K);
	/* overlaps are double releases, the very same range too */
	EXPECT(pool_insert(&p, BASE, BASE + 13 * K, 1) == -EEXIST);
	EXPECT(pool_insert(&p, BASE + 11 * K, BASE + 13 * K, 1) == -EEXIST);
	EXPECT(pool_insert(&p, BASE - K, BASE + K, 1) == -EEXIST);
	EXPECT(p.bytes == 13 * K);
}

static void test_exact_address(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE, BASE + 4 * K, POOL_DIRTY);
	pool_insert(&p, BASE + 8 * K, BASE + 16 * K, 7);
	/* after the first range, before the second: nothing there */
	EXPECT(!take(&p, BASE + 5 * K, K, K, 0, false, &pc));
	/* runs past the end of a range */
	EXPECT(!take(&p, BASE + 2 * K, 4 * K, K, 0, false, &pc));
	EXPECT(!take(&p, BASE - K, K, K, 0, false, &pc));
	/* inside: carved out, both sides kept */
	EXPECT(take(&p, BASE + 10 * K, 2 * K, K, 0, false, &pc));
	EXPECT(pc.addr == BASE + 10 * K && !pc.dirty);
	EXPECT(p.n == 3 && p.bytes == 10 * K);
	EXPECT(at(&p, 1)->end == BASE + 10 * K && at(&p, 2)->start == BASE + 12 * K);
	EXPECT(at(&p, 1)->queued == 7 && at(&p, 2)->queued == 7);
	EXPECT(take(&p, BASE + K, K, K, 0, false, &pc) && pc.addr == BASE + K && pc.dirty);
}

static void test_alignment(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE + K, BASE + 40 * K, 1);
	EXPECT(take(&p, 0, 8 * K, 16 * K, 0, false, &pc));
	EXPECT(pc.addr == BASE + 16 * K);
	EXPECT(p.n == 2 && at(&p, 0)->end == BASE + 16 * K && at(&p, 1)->start == BASE + 24 * K);
	/* too big once aligned */
	EXPECT(!take(&p, 0, 16 * K, 32 * K, 0, false, &pc));
}

static void test_preference(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE, BASE + 8 * K, 1);                    /* queued before the oldest */
	pool_insert(&p, BASE + 16 * K, BASE + 20 * K, 9);          /* may still be pending */
	pool_insert(&p, BASE + 32 * K, BASE + 36 * K, POOL_DIRTY); /* cancelled */
	/* oldest pending range queued at 2: zero wanted -> the likely purged */
	EXPECT(take(&p, 0, 4 * K, K, 2, true, &pc) && pc.addr == BASE && !pc.dirty);
	/* no zero wanted -> likely resident ranges, the newest of equal fits */
	EXPECT(take(&p, 0, 4 * K, K, 2, false, &pc) && pc.addr == BASE + 32 * K && pc.dirty);
	EXPECT(take(&p, 0, 4 * K, K, 2, false, &pc) && pc.addr == BASE + 16 * K && !pc.dirty);
	EXPECT(take(&p, 0, 4 * K, K, 2, false, &pc) && pc.addr == BASE + 4 * K);
	EXPECT(p.n == 0 && p.bytes == 0);
}

/* Nothing pending (oldest 0): every range not dirty is likely purged, and
 * a fresh one (queued 0) always is. */
static void test_preference_idle(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE, BASE + 4 * K, POOL_DIRTY);
	pool_insert(&p, BASE + 8 * K, BASE + 12 * K, 9);
	pool_insert(&p, BASE + 16 * K, BASE + 20 * K, 0);
	EXPECT(take(&p, 0, 4 * K, K, 0, false, &pc) && pc.addr == BASE && pc.dirty);
	EXPECT(take(&p, 0, 4 * K, K, 0, true, &pc) && pc.addr == BASE + 16 * K);
	pool_insert(&p, BASE + 16 * K, BASE + 20 * K, 0);
	/* with ranges pending since 5: the fresh one still counts as purged */
	EXPECT(take(&p, 0, 4 * K, K, 5, true, &pc) && pc.addr == BASE + 16 * K && !pc.dirty);
	EXPECT(take(&p, 0, 4 * K, K, 5, true, &pc) && pc.addr == BASE + 8 * K && !pc.dirty);
}

static void test_best_fit(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE, BASE + 64 * K, 5);
	pool_insert(&p, BASE + 100 * K, BASE + 108 * K, 5);
	EXPECT(take(&p, 0, 8 * K, K, 0, false, &pc) && pc.addr == BASE + 100 * K);
}

static void test_oldest_and_dirty(void)
{
	struct pool p = fresh(8);
	uintptr_t s, e;

	pool_insert(&p, BASE + 20 * K, BASE + 24 * K, 1);
	pool_insert(&p, BASE, BASE + 4 * K, 1);
	pool_insert(&p, BASE + 40 * K, BASE + 48 * K, 1);
	pool_insert(&p, BASE + 60 * K, BASE + 64 * K, 1);
	/* from a gap: the range before it is not touched */
	pool_mark_dirty(&p, BASE + 50 * K, BASE + 61 * K);
	EXPECT(at(&p, 2)->queued == 1 && at(&p, 3)->queued == POOL_DIRTY);
	pool_mark_dirty(&p, BASE + 3 * K, BASE + 21 * K);
	EXPECT(at(&p, 0)->queued == POOL_DIRTY && at(&p, 1)->queued == POOL_DIRTY &&
	       at(&p, 2)->queued == 1);
	EXPECT(pool_take_oldest(&p, &s, &e) && s == BASE + 20 * K && e == BASE + 24 * K);
	EXPECT(p.n == 3 && p.bytes == 16 * K);
}

/* In a bin of several lengths (66 and 70 pages share one), the tighter
 * of two wanted ranges, though the looser one was released since: only an
 * exact fit ends the search at once. */
static void test_tight_in_bin(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE, BASE + 66 * K, 9);
	pool_insert(&p, BASE + 100 * K, BASE + 170 * K, 9);
	EXPECT(pool_bin(66 * K) == pool_bin(70 * K));
	EXPECT(take(&p, 0, 66 * K, K, 2, false, &pc) && pc.addr == BASE);
}

/* `only`: a range of the preferred class or nothing, the pool unchanged. */
static void test_only_preferred(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;
	struct pool_want w = {0, 4 * K, K, 5, false, true}; /* wants: queued at 5 or later */

	pool_insert(&p, BASE, BASE + 16 * K, 1); /* settled: not wanted */
	EXPECT(!pool_take(&p, &w, &pc));
	EXPECT(p.n == 1 && p.bytes == 16 * K);
	pool_insert(&p, BASE + 32 * K, BASE + 40 * K, 7);
	EXPECT(pool_take(&p, &w, &pc) && pc.addr == BASE + 32 * K);
	EXPECT(pool_take(&p, &w, &pc) && pc.addr == BASE + 36 * K);
	EXPECT(!pool_take(&p, &w, &pc));
	w.only = false;
	EXPECT(pool_take(&p, &w, &pc) && pc.addr == BASE);
}

static void test_full(void)
{
	struct pool p = fresh(2);
	struct pool_piece pc;

	EXPECT(pool_insert(&p, BASE, BASE + 8 * K, 1) == 0);
	EXPECT(pool_insert(&p, BASE + 16 * K, BASE + 24 * K, 1) == 0);
	EXPECT(pool_insert(&p, BASE + 32 * K, BASE + 40 * K, 1) == -ENOSPC);
	/* merging needs no slot */
	EXPECT(pool_insert(&p, BASE + 8 * K, BASE + 12 * K, 1) == 0);
	/* a carve from the middle needs one: refused, pool unchanged */
	EXPECT(!take(&p, BASE + 18 * K, K, K, 0, false, &pc));
	EXPECT(p.n == 2 && p.bytes == 20 * K);
}

/* Each structure agrees with the others: the tree is ordered, disjoint and
 * no deeper than a random search tree gets (a treap whose priorities do not
 * shuffle degenerates to a list on sorted inserts); every range is filed
 * once in the bin of its length; the age list holds every range, oldest
 * first by stamp; the bitmap, the count and the byte sum are right. */
static bool pool_consistent(const struct pool *p)
{
	static unsigned char seen[WALK_MAX];
	unsigned n = walk(p), inbins = 0, lg = 1, aged = 0;
	size_t bytes = 0;

	if (n != p->n || n > WALK_MAX)
		return false;
	while ((1u << lg) < n)
		lg++;
	if (depth_max > 3 * lg + 8)
		return false;
	memset(seen, 0, sizeof(seen));
	for (unsigned i = 0; i < n; i++) {
		const struct pool_range *r = &p->r[order[i]];
		if (r->end <= r->start || (i + 1 < n && r->end > p->r[order[i + 1]].start) ||
		    p->t[order[i]].start != r->start)
			return false;
		bytes += r->end - r->start;
		seen[order[i]] = 1;
	}
	for (unsigned b = 0; b < POOL_BINS; b++) {
		bool used = (p->used[b / 64] >> (b % 64)) & 1;
		if (used != (p->head[b] != POOL_NONE))
			return false;
		unsigned prev = POOL_NONE;
		for (unsigned id = p->head[b]; id != POOL_NONE; id = p->r[id].next) {
			const struct pool_range *r = &p->r[id];
			if (id >= WALK_MAX || seen[id] != 1 || r->bin != b || r->prev != prev ||
			    pool_bin(r->end - r->start) != b || ++inbins > n)
				return false;
			seen[id] = 2;
			prev = id;
		}
	}
	unsigned older = POOL_NONE;
	for (unsigned id = p->oldest; id != POOL_NONE; id = p->r[id].newer) {
		if (id >= WALK_MAX || seen[id] != 2 || p->r[id].older != older || ++aged > n ||
		    (older != POOL_NONE && p->r[older].stamp > p->r[id].stamp))
			return false;
		older = id;
	}
	return inbins == n && aged == n && older == p->newest && bytes == p->bytes;
}

/* Whether any range could serve an unaligned request of size (page aligned). */
static bool fits_somewhere(const struct pool *p, size_t size, bool wanted_only, uint64_t oldest)
{
	unsigned n = walk(p);

	for (unsigned i = 0; i < n; i++) {
		const struct pool_range *r = &p->r[order[i]];
		bool settled = r->queued != POOL_DIRTY && (oldest == 0 || r->queued < oldest);
		if (r->end - r->start >= size && (!wanted_only || !settled))
			return true;
	}
	return false;
}

/* pool_take_oldest gives back the range with the smallest stamp. */
static bool oldest_is_first(struct pool *p)
{
	unsigned n = walk(p), old = POOL_NONE;
	uintptr_t s, e;

	for (unsigned i = 0; i < n; i++)
		if (old == POOL_NONE || p->r[order[i]].stamp < p->r[old].stamp)
			old = order[i];
	if (old == POOL_NONE)
		return !pool_take_oldest(p, &s, &e);
	uintptr_t want = p->r[old].start, want_end = p->r[old].end;
	return pool_take_oldest(p, &s, &e) && s == want && e == want_end;
}

static void test_bins_random(void)
{
	enum { SLOTS = 4000 };
	struct pool p = fresh(SLOTS);
	struct pool_piece pc;
	uint32_t s = 12345;
	bool ok = true;
	unsigned takes = 0, wants = 0, hits = 0, olds = 0, middles = 0;

	for (int step = 0; step < 8000 && ok; step++) {
		s = s * 1103515245u + 12345u;
		uintptr_t addr = BASE + (uintptr_t)((s >> 8) % 60000) * K;
		size_t len = (size_t)(1 + (s >> 3) % 300) * K;
		if ((s & 15) == 2) {
			ok = oldest_is_first(&p);
			olds++;
		} else if ((s & 15) == 4 && p.n) {
			/* an exact address inside a range: often a carve from the middle */
			const struct pool_range *r = at(&p, (s >> 12) % p.n);
			uintptr_t a = r->start + (r->end - r->start) / K / 2 * K;
			ok = take(&p, a, K, K, 9, false, &pc) && pc.addr == a;
			middles += a != r->start;
		} else if (s & 1) {
			pool_insert(&p, addr, addr + len, (s >> 20) & 1 ? POOL_DIRTY : 5);
		} else {
			bool any = fits_somewhere(&p, len, false, 9);
			bool want = fits_somewhere(&p, len, true, 9);
			bool got = take(&p, 0, len, K, 9, false, &pc);
			/* a fit is found whenever one exists; of the wanted class
			 * (here: dirty, not settled) nearly always when one exists:
			 * the search looks at a bounded number of ranges */
			ok = got == any;
			wants += want;
			hits += want && got && pc.dirty;
			takes += got;
		}
		ok = ok && pool_consistent(&p);
	}
	EXPECT(ok);
	EXPECT(takes > 1000 && wants > 500 && olds > 200 && middles > 100);
	EXPECT(hits >= wants - wants / 20);
	printf("pool: %u hand-outs, wanted class found %u of %u times, %u oldest given back,"
	       " %u ranges at depth %u at the end\n",
	       takes, hits, wants, olds, walk(&p), depth_max);
}

/* Addresses in increasing order, then decreasing (a heap freed from one
 * end): the tree stays shallow, and every range is found by address. */
static void test_sorted_inserts(void)
{
	enum { N = 3000 };
	struct pool p = fresh(2 * N);
	struct pool_piece pc;
	bool ok = true;

	for (unsigned i = 0; i < N; i++)
		ok = ok && pool_insert(&p, BASE + 2 * i * K, BASE + (2 * i + 1) * K, 1) == 0;
	for (unsigned i = N; i-- > 0;)
		ok = ok && pool_insert(&p, BASE + (2 * N + 2 * i) * K,
		                       BASE + (2 * N + 2 * i + 1) * K, 1) == 0;
	EXPECT(ok && pool_consistent(&p));
	for (unsigned i = 0; i < 2 * N && ok; i += 7)
		ok = take(&p, BASE + 2 * i * K, K, K, 0, false, &pc) && pc.addr == BASE + 2 * i * K;
	EXPECT(ok && pool_consistent(&p));
}

/* ---- a failed purge against a hand-out (dirty.c) ----------------------- */

static struct {
	struct shard sh;
	pthread_barrier_t go, done;
	struct pool_piece pc;
	uint64_t seq;
	bool got;
} race;

static const struct pool_want race_want = {0, 4 * K, K, 0, false, false};

/* Thread B: a hand-out at the moment the seam names.  A try-take stands for
 * any take then: when the pool lock is held there, a real take would wait
 * for it, and when it is free, a real take could run right there. */
static void *race_taker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&race.go);
	race.got = shard_take(&race.sh, &race_want, &race.pc, &race.seq, true);
	pthread_barrier_wait(&race.done);
	return NULL;
}

/* In thread A, inside shard_failed(): let B try its take now, and wait for it. */
static void race_seam(struct shard *sh)
{
	(void)sh;
	pthread_barrier_wait(&race.go);
	pthread_barrier_wait(&race.done);
}

/*
 * The range's purge failed (on_failure, thread A) while thread B hands the
 * range out.  B's take is forced into the middle of the failure's
 * bookkeeping; if the pool lock keeps it out there, it takes right after.
 * The purge was settled (as failed), so B's cancel answers 0: only the tag
 * and the sequence can tell B that the bytes are not zero.
 */
static void test_failure_race(void)
{
	pthread_t b;

	if (pool_init(&race.sh.pool, 8)) {
		perror("pool_init");
		exit(1);
	}
	pthread_mutex_init(&race.sh.pool_lock, NULL);
	pthread_barrier_init(&race.go, NULL, 2);
	pthread_barrier_init(&race.done, NULL, 2);
	EXPECT(pool_insert(&race.sh.pool, BASE, BASE + 4 * K, 1) == 0); /* queued, clean */
	shim_seam_failure = race_seam;
	pthread_create(&b, NULL, race_taker, NULL);
	shard_failed(&race.sh, BASE, BASE + 4 * K);
	pthread_join(b, NULL);
	shim_seam_failure = NULL;
	bool early = race.got;
	if (!early)
		race.got = shard_take(&race.sh, &race_want, &race.pc, &race.seq, false);
	EXPECT(race.got && race.pc.addr == BASE);
	EXPECT(!shard_zero(&race.sh, &race.pc, 0, race.seq));
	printf("failure race: hand-out %s the failure's bookkeeping\n",
	       early ? "ran inside" : "waited for");
}

int main(void)
{
	test_merge();
	test_exact_address();
	test_alignment();
	test_preference();
	test_preference_idle();
	test_best_fit();
	test_tight_in_bin();
	test_oldest_and_dirty();
	test_full();
	test_only_preferred();
	test_bins_random();
	test_sorted_inserts();
	test_failure_race();
	if (failures)
		fprintf(stderr, "%d expectation(s) failed\n", failures);
	return failures ? 1 : 0;
}
