/* SPDX-License-Identifier: MIT */
/*
 * The address index (src/index.c), against a sorted array: random inserts,
 * removes (by key and at a found position), key changes, searches and bulk
 * loads, over dense and sparse key ranges, with the node count checked
 * against purge__idx_nodes() all along.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define N 6000

static uintptr_t model[N];
static size_t mn;
static struct purge__index x;
static struct purge__node *mem;
static size_t cap;
static uint64_t rs;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static int cmp(const void *a, const void *b)
{
	uintptr_t p = *(const uintptr_t *)a, q = *(const uintptr_t *)b;
	return p < q ? -1 : p > q;
}

static size_t mfind(uintptr_t k)
{
	for (size_t i = 0; i < mn; i++)
		if (model[i] == k)
			return i;
	return SIZE_MAX;
}

static uint32_t val_of(uintptr_t k)
{
	return (uint32_t)(k * 7 + 3);
}

/* Every entry, in order, with its value. */
static void check_all(void)
{
	struct purge__ipos p;
	size_t i = 0;

	qsort(model, mn, sizeof(model[0]), cmp);
	cr_assert_eq(x.count, mn);
	if (mn) {
		cr_assert(purge__idx_find_ge(&x, 0, &p));
		do {
			cr_assert_eq(purge__idx_key(&x, &p), model[i]);
			cr_assert_eq(purge__idx_val(&x, &p), val_of(model[i]));
			i++;
		} while (purge__idx_next(&x, &p));
	}
	cr_assert_eq(i, mn);
	cr_assert_leq(x.bump, x.cap);
}

static void check_search(uintptr_t k)
{
	struct purge__ipos p;
	size_t le = mn, ge = 0;

	qsort(model, mn, sizeof(model[0]), cmp);
	while (le > 0 && model[le - 1] > k)
		le--;
	while (ge < mn && model[ge] < k)
		ge++;
	bool got = purge__idx_find_le(&x, k, &p);
	cr_assert_eq(got, le > 0, "find_le(%lu)", (unsigned long)k);
	if (got)
		cr_assert_eq(purge__idx_key(&x, &p), model[le - 1], "find_le(%lu)",
		             (unsigned long)k);
	got = purge__idx_find_ge(&x, k, &p);
	cr_assert_eq(got, ge < mn, "find_ge(%lu)", (unsigned long)k);
	if (got)
		cr_assert_eq(purge__idx_key(&x, &p), model[ge], "find_ge(%lu)", (unsigned long)k);
}

static void op_insert(uintptr_t k)
{
	if (mn < N && mfind(k) == SIZE_MAX) {
		cr_assert_eq(purge__idx_insert(&x, k, val_of(k)), 0);
		model[mn++] = k;
	}
}

static void op_remove(uintptr_t k)
{
	size_t i = mfind(k);
	struct purge__ipos p;

	if (i != SIZE_MAX && (rnd() & 1) && purge__idx_find_le(&x, k, &p)) {
		cr_assert_eq(purge__idx_key(&x, &p), k);
		purge__idx_remove_at(&x, &p);
	} else {
		cr_assert_eq(purge__idx_remove(&x, k), i != SIZE_MAX, "remove(%lu)",
		             (unsigned long)k);
	}
	if (i != SIZE_MAX)
		model[i] = model[--mn];
}

/* Move an entry's key up, short of the next one; its value follows. */
static void op_set_key(uintptr_t k)
{
	struct purge__ipos p, q;

	if (!purge__idx_find_le(&x, k, &p))
		return;
	uintptr_t old = purge__idx_key(&x, &p);
	q = p;
	uintptr_t next = purge__idx_next(&x, &q) ? purge__idx_key(&x, &q) : old + 100;
	if (next <= old + 1)
		return;
	uintptr_t nk = old + 1 + rnd() % (next - old - 1);
	cr_assert_eq(purge__idx_set_key(&x, &p, nk), 0);
	cr_assert(purge__idx_remove(&x, nk), "moved key %lu", (unsigned long)nk);
	cr_assert_eq(purge__idx_insert(&x, nk, val_of(nk)), 0);
	model[mfind(old)] = nk;
}

static void op_load(void)
{
	static struct purge__kv kv[N];

	qsort(model, mn, sizeof(model[0]), cmp);
	for (size_t i = 0; i < mn; i++)
		kv[i] = (struct purge__kv){model[i], val_of(model[i])};
	cr_assert_eq(purge__idx_load(&x, kv, mn), 0); /* builds its levels in kv */
}

static void random_run(long ops, uintptr_t range, uint64_t seed)
{
	rs = seed;
	mn = 0;
	purge__idx_init(&x, mem, (uint32_t)cap);
	for (long op = 0; op < ops; op++) {
		unsigned r = rnd() % 100;
		uintptr_t k = 1 + rnd() % range;
		if (r < 45)
			op_insert(k);
		else if (r < 82)
			op_remove(k);
		else if (r < 88)
			op_set_key(k);
		else if (r < 99)
			check_search(k);
		else
			op_load();
		if (op % 997 == 0)
			check_all();
	}
	check_all();
}

static void setup(void)
{
	cap = purge__idx_nodes(N);
	mem = calloc(cap, sizeof(*mem));
}

static void teardown(void)
{
	free(mem);
}

TestSuite(index, .init = setup, .fini = teardown);

Test(index, dense_keys)
{
	random_run(80000, 3 * N / 2, 1);
}

Test(index, sparse_keys)
{
	random_run(80000, (uintptr_t)1 << 40, 2);
}

Test(index, few_keys)
{
	random_run(60000, 200, 3);
}

/* Ascending and descending runs fill nodes unevenly; all of them must still
 * fit the node budget, and a full tree emptied key by key ends empty. */
Test(index, monotone_inserts_fit_the_budget)
{
	for (int dir = 0; dir < 2; dir++) {
		purge__idx_init(&x, mem, (uint32_t)cap);
		mn = 0;
		for (size_t i = 0; i < N; i++)
			op_insert(dir ? N - i : i + 1);
		check_all();
		for (size_t i = 0; i < N; i += 2)
			op_remove(dir ? N - i : i + 1);
		check_all();
		for (size_t i = 1; i < N; i += 2)
			op_remove(dir ? N - i : i + 1);
		check_all();
		cr_assert_eq(x.count, 0);
		cr_assert_eq(x.root, 0);
	}
}
