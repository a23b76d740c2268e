/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the shim's address-space pool (pool.c): merging, carving,
 * exact-address requests, the hand-out preference and dirty marking.  Pure
 * bookkeeping, so it needs no jemalloc and no real memory behind the
 * addresses.  The addresses fit 32 bits: it runs on -m32 too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
	struct pool_want w = {at, size, align, oldest, zero};

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
	EXPECT(p.n == 1 && p.r[0].start == BASE && p.r[0].end == BASE + 12 * K);
	EXPECT(p.r[0].queued == 5 && p.bytes == 12 * K);
	/* a dirty neighbour makes the whole range dirty */
	EXPECT(pool_insert(&p, BASE + 12 * K, BASE + 13 * K, POOL_DIRTY) == 0);
	EXPECT(p.n == 1 && p.r[0].queued == POOL_DIRTY && p.bytes == 13 * K);
	/* overlaps are double releases */
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
	EXPECT(p.r[1].end == BASE + 10 * K && p.r[2].start == BASE + 12 * K);
	EXPECT(p.r[1].queued == 7 && p.r[2].queued == 7);
	EXPECT(take(&p, BASE + K, K, K, 0, false, &pc) && pc.addr == BASE + K && pc.dirty);
}

static void test_alignment(void)
{
	struct pool p = fresh(8);
	struct pool_piece pc;

	pool_insert(&p, BASE + K, BASE + 40 * K, 1);
	EXPECT(take(&p, 0, 8 * K, 16 * K, 0, false, &pc));
	EXPECT(pc.addr == BASE + 16 * K);
	EXPECT(p.n == 2 && p.r[0].end == BASE + 16 * K && p.r[1].start == BASE + 24 * K);
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
	pool_mark_dirty(&p, BASE + 3 * K, BASE + 21 * K);
	EXPECT(p.r[0].queued == POOL_DIRTY && p.r[1].queued == POOL_DIRTY && p.r[2].queued == 1);
	EXPECT(pool_take_oldest(&p, &s, &e) && s == BASE + 20 * K && e == BASE + 24 * K);
	EXPECT(p.n == 2 && p.bytes == 12 * K);
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

int main(void)
{
	test_merge();
	test_exact_address();
	test_alignment();
	test_preference();
	test_preference_idle();
	test_best_fit();
	test_oldest_and_dirty();
	test_full();
	if (failures)
		fprintf(stderr, "%d expectation(s) failed\n", failures);
	return failures ? 1 : 0;
}
