/* SPDX-License-Identifier: MIT */
/*
 * The address index (src/index.c) against a plain sorted array, after every
 * insert, removal, key change and bulk load.  Each check walks the tree
 * (separators bound their children, unused slots hold PURGE_IDX_NONE, all
 * leaves at one depth, every node in use reached once) and the leaf chain
 * both ways (next from the leftmost leaf, prev from the rightmost: the
 * leaves of the tree in order, their keys and values the model's), then
 * asks every query the index offers (find_le, find_ge, next from each, the
 * neighbours that insert_unless hands its clash callback) at every key,
 * key - 1, key + 1 and past both ends.
 *
 * The sequences are the ones that stress the links: ascending, descending,
 * alternating ends, the first key of the leaves next to each split or merge
 * deleted right after it (a search for it then starts in that leaf and must
 * step to the leaf before), the first key of every leaf deleted in sweeps,
 * bulk loads, and seeded random runs; at sizes of many leaves, and past two
 * thousand entries for three levels.  Up to FULL entries every probe runs
 * after every change; above, the probes of WIN entries either side of the
 * change (its leaf whole, and where that leaf meets its neighbours) do, and
 * all of them every FULL_EVERY changes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define MAXN       4400 /* entries at most: three levels from about 2,050 */
#define FULL       320  /* up to this many entries, every probe after every change */
#define WIN        64   /* above: the probes this many model entries either side */
#define FULL_EVERY 256  /* and all of them every this many changes */

#define NONE PURGE_IDX_NONE
/* sparse keys: 2^40, or 2^30 where uintptr_t has 32 bits */
#define SPARSE ((uintptr_t)1 << (UINTPTR_MAX > 0xffffffffu ? 40 : 30))

static uintptr_t mk[MAXN]; /* the model: keys, sorted */
static uint32_t mv[MAXN];  /* and their values */
static size_t mn;
static struct purge__index x;
static struct purge__node *mem;
static uint32_t cap;
static uint64_t rs;
static unsigned long step; /* changes so far, for the messages */
static unsigned long since_full;
static const char *phase = "";

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond))                                                                       \
			cr_assert_fail(__VA_ARGS__);                                               \
	} while (0)
#define AT  "%s, change %lu, %zu entries: "
#define ATV phase, step, mn

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static uint32_t val_of(uintptr_t k)
{
	return (uint32_t)(k * 2654435761u) & 0x7fffffff; /* never PURGE_IDX_NOVAL */
}

/* ---- the model --------------------------------------------------------- */

/* The first model entry >= k (mn when none). */
static size_t m_lower(uintptr_t k)
{
	size_t lo = 0, hi = mn;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (mk[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool m_has(uintptr_t k)
{
	size_t i = m_lower(k);
	return i < mn && mk[i] == k;
}

/* ---- the tree and the leaf chain --------------------------------------- */

static uint32_t leaves[MAXN + 1], nleaves, nodes_seen;
static int leaf_depth;

/* Node id under bounds [lo, hi) (has_lo, has_hi: bounded on that side). */
static void walk_node(uint32_t id, int d, uintptr_t lo, bool has_lo, uintptr_t hi, bool has_hi)
{
	EXPECT(id > 0 && id < x.bump, AT "node %u out of range", ATV, id);
	EXPECT(d < PURGE_IDX_MAXH, AT "deeper than PURGE_IDX_MAXH", ATV);
	const struct purge__node *nd = &x.node[id];
	nodes_seen++;
	EXPECT(nodes_seen <= x.used, AT "more nodes reached than the %u in use", ATV, x.used);
	EXPECT(nd->n >= 1 && nd->n <= PURGE_IDX_K, AT "node %u holds %u keys", ATV, id, nd->n);
	for (uint32_t i = nd->n; i <= PURGE_IDX_K; i++)
		EXPECT(nd->key[i] == NONE, AT "node %u: unused slot %u holds a key", ATV, id, i);
	for (uint32_t i = 0; i < nd->n; i++) {
		uintptr_t k = nd->key[i];
		EXPECT(i == 0 || nd->key[i - 1] < k, AT "node %u: keys out of order at %u", ATV, id,
		       i);
		EXPECT((!has_lo || k >= lo) && (!has_hi || k < hi),
		       AT "node %u: key %#lx at %u outside its separators", ATV, id,
		       (unsigned long)k, i);
	}
	if (nd->leaf) {
		if (leaf_depth < 0)
			leaf_depth = d;
		EXPECT(d == leaf_depth, AT "leaf %u at depth %d, another at %d", ATV, id, d,
		       leaf_depth);
		leaves[nleaves++] = id;
		return;
	}
	for (uint32_t c = 0; c <= nd->n; c++)
		walk_node(nd->val[c], d + 1, c ? nd->key[c - 1] : lo, c ? true : has_lo,
		          c < nd->n ? nd->key[c] : hi, c < nd->n ? true : has_hi);
}

/* The tree in order, then the chain of leaves both ways, against the model. */
static void check_links(void)
{
	EXPECT(x.count == mn, AT "count %u", ATV, x.count);
	if (mn == 0) {
		EXPECT(x.root == 0 && x.used == 0, AT "empty, yet root %u and %u nodes", ATV,
		       x.root, x.used);
		return;
	}
	nleaves = nodes_seen = 0;
	leaf_depth = -1;
	walk_node(x.root, 0, 0, false, 0, false);
	EXPECT(nodes_seen == x.used, AT "%u nodes reached, %u in use", ATV, nodes_seen, x.used);

	/* forwards: next from the leftmost leaf */
	size_t at = 0;
	uint32_t prev = 0, id = leaves[0];
	for (uint32_t l = 0; l < nleaves; l++) {
		EXPECT(id == leaves[l], AT "next of leaf %u is %u, the tree has %u", ATV, prev, id,
		       leaves[l]);
		const struct purge__node *nd = &x.node[id];
		EXPECT(nd->prev == prev, AT "prev of leaf %u is %u, not %u", ATV, id, nd->prev,
		       prev);
		for (uint32_t i = 0; i < nd->n; i++, at++) {
			EXPECT(at < mn && nd->key[i] == mk[at] && nd->val[i] == mv[at],
			       AT "leaf %u entry %u (%#lx) is not model entry %zu", ATV, id, i,
			       (unsigned long)nd->key[i], at);
		}
		prev = id;
		id = nd->next;
	}
	EXPECT(id == 0, AT "the last leaf %u has next %u", ATV, prev, id);
	EXPECT(at == mn, AT "the leaves hold %zu entries", ATV, at);

	/* backwards: prev from the rightmost leaf */
	id = leaves[nleaves - 1];
	for (uint32_t l = nleaves; l-- > 0;) {
		EXPECT(id == leaves[l], AT "walking back: leaf %u, the tree has %u", ATV, id,
		       leaves[l]);
		const struct purge__node *nd = &x.node[id];
		for (uint32_t i = nd->n; i-- > 0;) {
			at--;
			EXPECT(nd->key[i] == mk[at], AT "walking back: leaf %u entry %u", ATV, id,
			       i);
		}
		id = nd->prev;
	}
	EXPECT(id == 0 && at == 0, AT "walking back ends at leaf %u, %zu entries short", ATV, id,
	       at);
}

/* ---- the queries ------------------------------------------------------- */

struct seen {
	uint32_t below, above;
	int calls;
};

static bool record(void *ctx, uint32_t below, uint32_t above)
{
	struct seen *s = ctx;

	s->below = below;
	s->above = above;
	s->calls++;
	return true; /* a clash: the index stays as it is */
}

/* Position p, found by `how` for k, must be model entry j (mn: none), and
 * next() from it entry j + 1. */
static void check_pos(bool got, struct purge__ipos *p, size_t j, const char *how, uintptr_t k)
{
	EXPECT(got == (j < mn), AT "%s(%#lx) answers %d", ATV, how, (unsigned long)k, got);
	if (!got)
		return;
	uintptr_t key = purge__idx_key(&x, p);
	EXPECT(key == mk[j], AT "%s(%#lx) finds %#lx, not %#lx", ATV, how, (unsigned long)k,
	       (unsigned long)key, (unsigned long)mk[j]);
	EXPECT(purge__idx_val(&x, p) == mv[j], AT "%s(%#lx): wrong value", ATV, how,
	       (unsigned long)k);
	got = purge__idx_next(&x, p);
	EXPECT(got == (j + 1 < mn), AT "next after %s(%#lx) answers %d", ATV, how, (unsigned long)k,
	       got);
	if (got)
		EXPECT(purge__idx_key(&x, p) == mk[j + 1],
		       AT "next after %s(%#lx) finds %#lx, not %#lx", ATV, how, (unsigned long)k,
		       (unsigned long)purge__idx_key(&x, p), (unsigned long)mk[j + 1]);
}

static void probe(uintptr_t k)
{
	struct purge__ipos p;
	size_t ge = m_lower(k);
	bool has = ge < mn && mk[ge] == k;
	size_t le = has ? ge : ge ? ge - 1 : mn; /* mn: none */
	size_t gt = has ? ge + 1 : ge;

	check_pos(purge__idx_find_le(&x, k, &p), &p, le, "find_le", k);
	check_pos(purge__idx_find_ge(&x, k, &p), &p, ge, "find_ge", k);
	if (mn) {
		struct seen s = {0};
		int r = purge__idx_insert_unless(&x, k, 1, record, &s);
		EXPECT(r == -EEXIST && s.calls == 1, AT "insert_unless(%#lx) answers %d", ATV,
		       (unsigned long)k, r);
		uint32_t below = le < mn ? mv[le] : PURGE_IDX_NOVAL;
		uint32_t above = gt < mn ? mv[gt] : PURGE_IDX_NOVAL;
		EXPECT(s.below == below && s.above == above,
		       AT "the neighbours of %#lx: %#x and %#x, not %#x and %#x", ATV,
		       (unsigned long)k, s.below, s.above, below, above);
	}
}

/* Every key of model entries [a, b), one below and one above each. */
static void probe_range(size_t a, size_t b)
{
	for (size_t i = a; i < b; i++) {
		uintptr_t k = mk[i];
		if (k > 0 && (i == 0 || k - 1 > mk[i - 1] + 1))
			probe(k - 1);
		probe(k);
		if (k < NONE && (i + 1 == mn || k + 1 < mk[i + 1]))
			probe(k + 1);
	}
}

/* After each change near key k: links and tree always; the probes all,
 * or around k. */
static void check(uintptr_t k)
{
	step++;
	check_links();
	probe(0);
	probe(NONE - 1);
	if (mn <= FULL || ++since_full >= FULL_EVERY) {
		since_full = 0;
		probe_range(0, mn);
		return;
	}
	size_t i = m_lower(k);
	probe_range(i > WIN ? i - WIN : 0, i + WIN < mn ? i + WIN : mn);
}

/* ---- changes ----------------------------------------------------------- */

static void ins(uintptr_t k)
{
	size_t i = m_lower(k);

	cr_assert(i == mn || mk[i] != k);
	cr_assert_lt(mn, MAXN);
	int r = purge__idx_insert(&x, k, val_of(k));
	EXPECT(r == 0, AT "insert(%#lx) answers %d", ATV, (unsigned long)k, r);
	memmove(&mk[i + 1], &mk[i], (mn - i) * sizeof(mk[0]));
	memmove(&mv[i + 1], &mv[i], (mn - i) * sizeof(mv[0]));
	mk[i] = k;
	mv[i] = val_of(k);
	mn++;
	check(k);
}

/* Removes key k (in the model), each of the three ways in turn: by key, at
 * a position found for it (the path known), and at a position next() moved
 * to (the path not known). */
static void del(uintptr_t k)
{
	static unsigned way;
	struct purge__ipos p;
	size_t i = m_lower(k);

	cr_assert(i < mn && mk[i] == k);
	switch (way++ % 3) {
	case 0:
		EXPECT(purge__idx_remove(&x, k), AT "remove(%#lx) finds nothing", ATV,
		       (unsigned long)k);
		break;
	case 1:
		EXPECT(purge__idx_find_ge(&x, k, &p) && purge__idx_key(&x, &p) == k,
		       AT "find_ge(%#lx) to remove it", ATV, (unsigned long)k);
		purge__idx_remove_at(&x, &p);
		break;
	default:
		if (i == 0 || !purge__idx_find_le(&x, mk[i - 1], &p) || !purge__idx_next(&x, &p)) {
			EXPECT(purge__idx_remove(&x, k), AT "remove(%#lx)", ATV, (unsigned long)k);
			break;
		}
		EXPECT(purge__idx_key(&x, &p) == k, AT "next to %#lx to remove it", ATV,
		       (unsigned long)k);
		purge__idx_remove_at(&x, &p);
		break;
	}
	memmove(&mk[i], &mk[i + 1], (mn - i - 1) * sizeof(mk[0]));
	memmove(&mv[i], &mv[i + 1], (mn - i - 1) * sizeof(mv[0]));
	mn--;
	check(k);
}

/* Moves the key of model entry i up, short of the next one (as a cancel
 * trims a range from its start). */
static void move_up(size_t i)
{
	uintptr_t old = mk[i], next = i + 1 < mn ? mk[i + 1] : old + 64;
	struct purge__ipos p;

	if (next - old < 2)
		return;
	uintptr_t nk = old + 1 + rnd() % (next - old - 1);
	EXPECT(purge__idx_find_le(&x, old, &p), AT "find_le(%#lx)", ATV, (unsigned long)old);
	cr_assert_eq(purge__idx_set_key(&x, &p, nk), 0); /* the value stays */
	mk[i] = nk;
	check(nk);
}

static void load(void)
{
	static struct purge__kv kv[MAXN];

	for (size_t i = 0; i < mn; i++)
		kv[i] = (struct purge__kv){mk[i], mv[i]};
	cr_assert_eq(purge__idx_load(&x, kv, mn), 0);
	check(mn ? mk[0] : 0);
}

/* The leaf that holds key k, and the first key of a leaf. */
static uint32_t leaf_of(uintptr_t k)
{
	struct purge__ipos p;

	cr_assert(purge__idx_find_le(&x, k, &p) && purge__idx_key(&x, &p) == k);
	return p.leaf;
}

static uintptr_t first_of(uint32_t leaf)
{
	return leaf ? x.node[leaf].key[0] : NONE;
}

/* Deletes the first keys of the leaves around leaf l: its neighbours and
 * theirs, read before the first goes (each delete may move the others). */
static void del_firsts_around(uint32_t l)
{
	uint32_t p = x.node[l].prev, n = x.node[l].next;
	uintptr_t f[5] = {first_of(n), first_of(n ? x.node[n].next : 0), first_of(l), first_of(p),
	                  first_of(p ? x.node[p].prev : 0)};

	for (int j = 0; j < 5; j++)
		if (f[j] != NONE && m_has(f[j]))
			del(f[j]);
}

/* The first key of every leaf, deleted left to right (or right to left). */
static void sweep_firsts(bool backwards)
{
	static uintptr_t f[MAXN];
	size_t nf = 0;

	if (!mn)
		return;
	check_links(); /* fills leaves[] */
	for (uint32_t l = 0; l < nleaves; l++)
		f[nf++] = x.node[leaves[backwards ? nleaves - 1 - l : l]].key[0];
	for (size_t j = 0; j < nf; j++)
		if (m_has(f[j]))
			del(f[j]);
}

/* Inserts k; when a leaf split, deletes the first keys around it. */
static void ins_poke(uintptr_t k)
{
	uint32_t used = x.used;

	ins(k);
	if (used && x.used > used && m_has(k)) /* not the first leaf */
		del_firsts_around(leaf_of(k));
}

/* Deletes k; when leaves merged, deletes the first keys around the merged one. */
static void del_poke(uintptr_t k)
{
	uint32_t used = x.used;
	struct purge__ipos p;

	del(k);
	if (x.used < used && mn && (purge__idx_find_le(&x, k, &p) || purge__idx_find_ge(&x, k, &p)))
		del_firsts_around(p.leaf);
}

static void start(const char *name, uint64_t seed)
{
	phase = name;
	rs = seed;
	mn = 0;
	step = since_full = 0;
	purge__idx_init(&x, mem, cap);
	check(0);
}

static void empty_out(void)
{
	while (mn)
		del(mk[rnd() % mn]);
}

static void setup(void)
{
	cap = (uint32_t)purge__idx_nodes(MAXN);
	mem = calloc(cap, sizeof(*mem));
	cr_assert_not_null(mem);
}

static void teardown(void)
{
	free(mem);
}

TestSuite(index_model, .init = setup, .fini = teardown);

/* ---- the sequences ----------------------------------------------------- */

/* Ascending and descending inserts, keys 4 apart (k - 1 and k + 1 are
 * gaps); then the first key of every leaf, in sweeps, until none is left. */
Test(index_model, monotone_then_first_keys)
{
	for (int dir = 0; dir < 2; dir++) {
		start(dir ? "descending" : "ascending", 11 + (uint64_t)dir);
		for (uintptr_t i = 0; i < FULL; i++)
			ins(4 * (dir ? FULL - i : i + 1));
		for (int s = 0; mn; s++)
			sweep_firsts(s & 1);
	}
}

/* Both ends in turn: inward (low, high, low, ...) and outward from the
 * middle; then removed from both ends in turn. */
Test(index_model, alternating_ends)
{
	start("alternating inward", 21);
	for (uintptr_t i = 0; i < FULL / 2; i++) {
		ins(8 + 8 * i);
		ins(8 * FULL - 8 * i);
	}
	while (mn > 1) {
		del(mk[0]);
		del(mk[mn - 1]);
	}
	empty_out();

	start("alternating outward", 22);
	for (uintptr_t i = 0; i < FULL / 2; i++) {
		ins(4 * FULL - 3 * i);
		ins(4 * FULL + 3 + 3 * i);
	}
	for (size_t i = 0; mn; i++)
		del(i & 1 ? mk[mn - 1] : mk[mn / 2]);
}

/* Random inserts; after each that split a leaf, the first keys of the
 * leaves around it go at once.  Then random deletes; after each that
 * merged leaves, the first keys around the merged one go. */
Test(index_model, first_keys_next_to_splits_and_merges)
{
	for (uint64_t seed = 31; seed < 34; seed++) {
		start(seed & 1 ? "split/merge, sparse" : "split/merge, dense", seed);
		uintptr_t range = seed & 1 ? SPARSE : 3 * FULL;
		while (mn < FULL) {
			uintptr_t k = 1 + rnd() % range;
			if (!m_has(k))
				ins_poke(k);
		}
		while (mn)
			del_poke(mk[rnd() % mn]);
	}
}

/* Seeded random changes between 0 and FULL entries: inserts, removes,
 * keys moved up, bulk loads, and sweeps of first keys now and then. */
Test(index_model, random)
{
	for (uint64_t seed = 41; seed < 44; seed++) {
		start("random", seed);
		uintptr_t range = seed & 1 ? 2 * FULL : SPARSE;
		size_t hi = FULL;
		for (int op = 0; op < 1000; op++) {
			unsigned r = (unsigned)(rnd() % 1000);
			uintptr_t k = 1 + rnd() % range;
			if (mn == hi)
				hi = 0;
			else if (mn == 0)
				hi = FULL;
			bool grow = hi > mn;
			if (r < 30 && mn)
				move_up(rnd() % mn);
			else if (r < 34)
				load();
			else if (r < 36 && mn)
				sweep_firsts(r & 1);
			else if (r < (grow ? 700u : 300u) && !m_has(k) && mn < FULL)
				ins(k);
			else if (mn)
				del(mk[rnd() % mn]);
		}
	}
}

/* Past two thousand entries: three levels.  Ascending inserts; inserts
 * and deletes next to splits and merges; sweeps of first keys and random
 * deletes until the root goes.  Then a bulk load of three levels, its
 * first keys and random keys deleted. */
Test(index_model, three_levels)
{
	start("three levels", 51);
	for (uintptr_t i = 0; i < 2100; i++)
		ins(3 * i + 3);
	cr_assert_eq(leaf_depth, 2, "depth %d", leaf_depth);
	for (int i = 0; i < 150; i++) {
		uintptr_t k = 1 + rnd() % (3 * mk[mn - 1]);
		if (!m_has(k))
			ins_poke(k);
		del_poke(mk[rnd() % mn]);
	}
	for (int s = 0; leaf_depth > 1; s++) {
		sweep_firsts(s & 1);
		for (int i = 0; i < 20 && leaf_depth > 1; i++)
			del_poke(mk[rnd() % mn]);
	}

	start("three levels, loaded", 52);
	for (mn = 0; mn < 3500; mn++) {
		mk[mn] = 5 * mn + 5;
		mv[mn] = val_of(mk[mn]);
	}
	load();
	cr_assert_eq(leaf_depth, 2, "depth %d after the load of %zu", leaf_depth, mn);
	sweep_firsts(false);
	for (int i = 0; i < 100; i++)
		del_poke(mk[rnd() % mn]);
}
