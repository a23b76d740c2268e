/* SPDX-License-Identifier: MIT */
/*
 * The address index (index.h): a B+tree in an array of nodes.  Internal
 * node child c holds the keys in [key[c-1], key[c]); leaves are linked in
 * key order.  A separator may be older than the keys it bounds (removals do
 * not rewrite it), which never breaks that order.
 */
#include <errno.h>
#include <string.h>

#include "index.h"

#define IDX_K    PURGE_IDX_K
#define IDX_MIN  (IDX_K / 2) /* a non-root node under this borrows or merges */
#define IDX_FILL (IDX_K - 4) /* entries (leaves) or children (internal) per bulk-loaded node */

typedef struct purge__node idx_node;
typedef struct purge__ipath idx_path;

size_t purge__idx_nodes(size_t entries)
{
	/* leaves keep >= 29 entries and internal nodes >= 29 children, but the
	 * root: entries/29 leaves, a 28th more above them, node 0, slack */
	return entries / 27 + 24;
}

/* Sets nd->n to n <= old and marks the slots it gave up unused. */
static void idx_shrink(idx_node *nd, uint32_t old, uint32_t n)
{
	for (uint32_t i = n; i < old; i++)
		nd->key[i] = PURGE_IDX_NONE;
	nd->n = n;
}

static uint32_t idx_node_new(struct purge__index *x, uint32_t leaf)
{
	uint32_t id = x->free;

	if (id)
		x->free = x->node[id].next;
	else if (x->bump < x->cap)
		id = x->bump++;
	else
		return 0;
	x->used++;
	idx_node *nd = &x->node[id];

	*nd = (idx_node){.leaf = leaf};
	idx_shrink(nd, PURGE_IDX_K + 1, 0);
	return id;
}

static void idx_node_free(struct purge__index *x, uint32_t id)
{
	x->node[id].next = x->free;
	x->free = id;
	x->used--;
}

void purge__idx_init(struct purge__index *x, struct purge__node *mem, uint32_t cap)
{
	x->node = mem;
	x->cap = cap;
	purge__idx_clear(x);
}

void purge__idx_clear(struct purge__index *x)
{
	x->bump = 1;
	x->free = 0;
	x->used = 0;
	x->root = 0;
	x->count = 0;
}

/* Keys of nd that are <= key.  Unused slots hold PURGE_IDX_NONE, above any
 * key, and slot 63 is always unused: seven loads pick a block of 8 keys,
 * seven more count inside it.  Fourteen loads, two steps deep, no branch
 * (a binary search is six steps deep, a mispredicted branch each costlier
 * than the probe). */
static uint32_t idx_upper(const idx_node *nd, uintptr_t key)
{
	const uintptr_t *k = nd->key;
	uint32_t b = (uint32_t)(k[7] <= key) + (k[15] <= key) + (k[23] <= key) + (k[31] <= key) +
	             (k[39] <= key) + (k[47] <= key) + (k[55] <= key);
	const uintptr_t *q = k + 8 * b;

	return 8 * b + (uint32_t)(q[0] <= key) + (q[1] <= key) + (q[2] <= key) + (q[3] <= key) +
	       (q[4] <= key) + (q[5] <= key) + (q[6] <= key);
}

static uint32_t idx_descend(const struct purge__index *x, uintptr_t key, idx_path *pa)
{
	uint32_t id = x->root;
	int d = 0;

	while (!x->node[id].leaf) {
		uint32_t c = idx_upper(&x->node[id], key);
		pa->node[d] = id;
		pa->ci[d] = c;
		d++;
		id = x->node[id].val[c];
	}
	pa->depth = d;
	return id;
}

bool purge__idx_find_le(const struct purge__index *x, uintptr_t key, struct purge__ipos *p)
{
	if (!x->count)
		return false;
	uint32_t leaf = idx_descend(x, key, &p->pa), i = idx_upper(&x->node[leaf], key);
	if (i == 0) {
		/* everything left of this leaf is below its separator <= key */
		leaf = x->node[leaf].prev;
		if (!leaf)
			return false;
		i = x->node[leaf].n;
		p->pa.depth = -1;
	}
	p->leaf = leaf;
	p->i = i - 1;
	return true;
}

bool purge__idx_find_ge(const struct purge__index *x, uintptr_t key, struct purge__ipos *p)
{
	if (!x->count)
		return false;
	uint32_t leaf = idx_descend(x, key, &p->pa), i = idx_upper(&x->node[leaf], key);
	if (i > 0 && x->node[leaf].key[i - 1] == key)
		i--;
	if (i == x->node[leaf].n) {
		leaf = x->node[leaf].next;
		i = 0;
		p->pa.depth = -1;
	}
	p->leaf = leaf;
	p->i = i;
	return leaf != 0;
}

bool purge__idx_next(const struct purge__index *x, struct purge__ipos *p)
{
	if (++p->i < x->node[p->leaf].n)
		return true;
	p->leaf = x->node[p->leaf].next;
	p->i = 0;
	p->pa.depth = -1;
	return p->leaf != 0;
}

/* ---- insert ------------------------------------------------------------ */

/* Leaf insert and remove move a few entries: plain loops beat two calls
 * of memmove at this size. */
static void idx_leaf_put(idx_node *nd, uint32_t i, uintptr_t key, uint32_t val)
{
	for (uint32_t j = nd->n; j > i; j--) {
		nd->key[j] = nd->key[j - 1];
		nd->val[j] = nd->val[j - 1];
	}
	nd->key[i] = key;
	nd->val[i] = val;
	nd->n++;
}

/* Key ci and child ci + 1 of an internal node. */
static void idx_inner_put(idx_node *nd, uint32_t ci, uintptr_t key, uint32_t child)
{
	memmove(&nd->key[ci + 1], &nd->key[ci], (nd->n - ci) * sizeof(nd->key[0]));
	memmove(&nd->val[ci + 2], &nd->val[ci + 1], (nd->n - ci) * sizeof(nd->val[0]));
	nd->key[ci] = key;
	nd->val[ci + 1] = child;
	nd->n++;
}

/* Moves the idx_upper half of a full leaf to a new right neighbour. */
static uint32_t idx_split_leaf(struct purge__index *x, uint32_t id, uintptr_t *sep)
{
	uint32_t rid = idx_node_new(x, 1);
	idx_node *l = &x->node[id], *r = &x->node[rid];
	uint32_t h = l->n / 2;

	r->n = l->n - h;
	memcpy(r->key, &l->key[h], r->n * sizeof(r->key[0]));
	memcpy(r->val, &l->val[h], r->n * sizeof(r->val[0]));
	idx_shrink(l, l->n, h);
	r->next = l->next;
	r->prev = id;
	if (l->next)
		x->node[l->next].prev = rid;
	l->next = rid;
	*sep = r->key[0];
	return rid;
}

/* Splits a full internal node around its middle key, which moves up. */
static uint32_t idx_split_inner(struct purge__index *x, uint32_t id, uintptr_t *sep)
{
	uint32_t rid = idx_node_new(x, 0);
	idx_node *l = &x->node[id], *r = &x->node[rid];
	uint32_t h = l->n / 2;

	*sep = l->key[h];
	r->n = l->n - h - 1;
	memcpy(r->key, &l->key[h + 1], r->n * sizeof(r->key[0]));
	memcpy(r->val, &l->val[h + 1], (r->n + 1) * sizeof(r->val[0]));
	idx_shrink(l, l->n, h);
	return rid;
}

/* Hands (sep, rid), the new right neighbour of path child d, up the path. */
static void idx_grow_up(struct purge__index *x, const idx_path *pa, uintptr_t sep, uint32_t rid)
{
	for (int d = pa->depth - 1; d >= 0; d--) {
		uint32_t id = pa->node[d], ci = pa->ci[d];
		if (x->node[id].n < IDX_K) {
			idx_inner_put(&x->node[id], ci, sep, rid);
			return;
		}
		uintptr_t up;
		uint32_t r2 = idx_split_inner(x, id, &up), h = x->node[id].n;
		if (ci <= h)
			idx_inner_put(&x->node[id], ci, sep, rid);
		else
			idx_inner_put(&x->node[r2], ci - h - 1, sep, rid);
		sep = up;
		rid = r2;
	}
	uint32_t root = idx_node_new(x, 0);
	x->node[root].n = 1;
	x->node[root].key[0] = sep;
	x->node[root].val[0] = x->root;
	x->node[root].val[1] = rid;
	x->root = root;
}

/* The values next to position i of a leaf: below (the previous leaf's last
 * when i == 0) and at i (the next leaf's first when i == n). */
static void idx_neighbours(const struct purge__index *x, uint32_t leaf, uint32_t i, uint32_t *below,
                           uint32_t *above)
{
	const idx_node *nd = &x->node[leaf];
	const idx_node *prev = nd->prev ? &x->node[nd->prev] : NULL;
	const idx_node *next = nd->next ? &x->node[nd->next] : NULL;

	*below = i ? nd->val[i - 1] : prev ? prev->val[prev->n - 1] : PURGE_IDX_NOVAL;
	*above = i < nd->n ? nd->val[i] : next ? next->val[0] : PURGE_IDX_NOVAL;
}

int purge__idx_insert_unless(struct purge__index *x, uintptr_t key, uint32_t val,
                             bool (*clash)(void *ctx, uint32_t below, uint32_t above), void *ctx)
{
	idx_path pa;
	uint32_t below, above;

	if (!x->root && !(x->root = idx_node_new(x, 1)))
		return -ENOSPC;
	uint32_t leaf = idx_descend(x, key, &pa), i = idx_upper(&x->node[leaf], key);
	if (clash) {
		idx_neighbours(x, leaf, i, &below, &above);
		if (clash(ctx, below, above))
			return -EEXIST;
	}
	idx_node *nd = &x->node[leaf];
	if (nd->n < IDX_K) {
		idx_leaf_put(nd, i, key, val);
		x->count++;
		return 0;
	}
	/* a split at every level and a new root at worst */
	if (x->cap - 1 - x->used < (uint32_t)pa.depth + 2)
		return -ENOSPC;
	uintptr_t sep;
	uint32_t rid = idx_split_leaf(x, leaf, &sep), h = x->node[leaf].n;
	if (key >= sep)
		idx_leaf_put(&x->node[rid], i - h, key, val);
	else
		idx_leaf_put(&x->node[leaf], i, key, val);
	x->count++;
	idx_grow_up(x, &pa, sep, rid);
	return 0;
}

int purge__idx_insert(struct purge__index *x, uintptr_t key, uint32_t val)
{
	return purge__idx_insert_unless(x, key, val, NULL, NULL);
}

/* ---- remove ------------------------------------------------------------ */

/* A plain loop, as in idx_leaf_put. */
static void idx_leaf_cut(idx_node *nd, uint32_t i)
{
	uint32_t n = nd->n - 1;

	for (uint32_t j = i; j < n; j++) {
		nd->key[j] = nd->key[j + 1];
		nd->val[j] = nd->val[j + 1];
	}
	nd->key[n] = PURGE_IDX_NONE;
	nd->n = n;
}

/* Child ci of p takes the last entry of its left neighbour. */
static void idx_borrow_left(struct purge__index *x, idx_node *p, uint32_t ci)
{
	idx_node *l = &x->node[p->val[ci - 1]], *c = &x->node[p->val[ci]];
	uint32_t inner = !c->leaf;

	memmove(&c->key[1], &c->key[0], c->n * sizeof(c->key[0]));
	memmove(&c->val[1], &c->val[0], (c->n + inner) * sizeof(c->val[0]));
	if (inner) {
		c->key[0] = p->key[ci - 1];
		c->val[0] = l->val[l->n];
		p->key[ci - 1] = l->key[l->n - 1];
	} else {
		c->key[0] = l->key[l->n - 1];
		c->val[0] = l->val[l->n - 1];
		p->key[ci - 1] = c->key[0];
	}
	idx_shrink(l, l->n, l->n - 1);
	c->n++;
}

/* Child ci of p takes the first entry of its right neighbour. */
static void idx_borrow_right(struct purge__index *x, idx_node *p, uint32_t ci)
{
	idx_node *c = &x->node[p->val[ci]], *r = &x->node[p->val[ci + 1]];
	uint32_t inner = !r->leaf;

	if (inner) {
		c->key[c->n] = p->key[ci];
		c->val[c->n + 1] = r->val[0];
		p->key[ci] = r->key[0];
	} else {
		c->key[c->n] = r->key[0];
		c->val[c->n] = r->val[0];
	}
	c->n++;
	memmove(&r->key[0], &r->key[1], (r->n - 1) * sizeof(r->key[0]));
	memmove(&r->val[0], &r->val[1], (r->n - 1 + inner) * sizeof(r->val[0]));
	idx_shrink(r, r->n, r->n - 1);
	if (!inner)
		p->key[ci] = r->key[0];
}

/* Child j + 1 of p joins child j; p loses key j. */
static void idx_merge(struct purge__index *x, idx_node *p, uint32_t j)
{
	uint32_t lid = p->val[j], rid = p->val[j + 1];
	idx_node *l = &x->node[lid], *r = &x->node[rid];

	if (l->leaf) {
		l->next = r->next;
		if (r->next)
			x->node[r->next].prev = lid;
	} else {
		l->key[l->n++] = p->key[j];
		l->val[l->n] = r->val[0];
		memcpy(&l->val[l->n + 1], &r->val[1], r->n * sizeof(r->val[0]));
	}
	memcpy(&l->key[l->n], r->key, r->n * sizeof(r->key[0]));
	if (l->leaf)
		memcpy(&l->val[l->n], r->val, r->n * sizeof(r->val[0]));
	l->n += r->n;
	idx_node_free(x, rid);
	memmove(&p->key[j], &p->key[j + 1], (p->n - j - 1) * sizeof(p->key[0]));
	memmove(&p->val[j + 1], &p->val[j + 2], (p->n - j - 1) * sizeof(p->val[0]));
	idx_shrink(p, p->n, p->n - 1);
}

/* Child ci of p is under IDX_MIN: borrow (true) or idx_merge (false: p lost a key). */
static bool idx_fix_child(struct purge__index *x, uint32_t pid, uint32_t ci)
{
	idx_node *p = &x->node[pid];

	if (ci > 0 && x->node[p->val[ci - 1]].n > IDX_MIN) {
		idx_borrow_left(x, p, ci);
		return true;
	}
	if (ci < p->n && x->node[p->val[ci + 1]].n > IDX_MIN) {
		idx_borrow_right(x, p, ci);
		return true;
	}
	idx_merge(x, p, ci > 0 ? ci - 1 : ci);
	return false;
}

static void idx_rebalance(struct purge__index *x, const idx_path *pa, uint32_t id)
{
	for (int d = pa->depth - 1; d >= 0 && x->node[id].n < IDX_MIN; d--) {
		if (idx_fix_child(x, pa->node[d], pa->ci[d]))
			return;
		id = pa->node[d];
	}
	while (!x->node[x->root].leaf && x->node[x->root].n == 0) {
		uint32_t old = x->root;
		x->root = x->node[old].val[0];
		idx_node_free(x, old);
	}
}

static void idx_cut_at(struct purge__index *x, const idx_path *pa, uint32_t leaf, uint32_t i)
{
	idx_leaf_cut(&x->node[leaf], i);
	if (--x->count == 0)
		purge__idx_clear(x);
	else
		idx_rebalance(x, pa, leaf);
}

bool purge__idx_remove(struct purge__index *x, uintptr_t key)
{
	idx_path pa;

	if (!x->count)
		return false;
	uint32_t leaf = idx_descend(x, key, &pa), i = idx_upper(&x->node[leaf], key);
	if (i == 0 || x->node[leaf].key[i - 1] != key)
		return false;
	idx_cut_at(x, &pa, leaf, i - 1);
	return true;
}

void purge__idx_remove_at(struct purge__index *x, const struct purge__ipos *p)
{
	if (p->pa.depth < 0)
		purge__idx_remove(x, x->node[p->leaf].key[p->i]);
	else
		idx_cut_at(x, &p->pa, p->leaf, p->i);
}

int purge__idx_set_key(struct purge__index *x, const struct purge__ipos *p, uintptr_t key)
{
	idx_node *nd = &x->node[p->leaf];
	uintptr_t old = nd->key[p->i];
	uint32_t val = nd->val[p->i];

	/* inside the leaf the next key bounds it; the last key of a leaf may
	 * cross a separator: take it out and put it back */
	if (p->i + 1 < nd->n) {
		nd->key[p->i] = key;
		return 0;
	}
	purge__idx_remove(x, old);
	return purge__idx_insert(x, key, val);
}

/* ---- bulk load --------------------------------------------------------- */

/* One level: n (first key, node) pairs in lv, grouped under new parents
 * of at most IDX_FILL children each; lv gets the parents.  Returns their count. */
static size_t idx_load_level(struct purge__index *x, struct purge__kv *lv, size_t n)
{
	size_t groups = (n + IDX_FILL - 1) / IDX_FILL, at = 0;

	for (size_t g = 0; g < groups; g++) {
		size_t take = (n - at) / (groups - g);
		uint32_t id = idx_node_new(x, 0);
		if (!id)
			return 0;
		idx_node *nd = &x->node[id];
		struct purge__kv first = lv[at];
		nd->n = (uint32_t)take - 1;
		nd->val[0] = (uint32_t)first.val;
		for (size_t k = 1; k < take; k++) {
			nd->key[k - 1] = lv[at + k].key;
			nd->val[k] = (uint32_t)lv[at + k].val;
		}
		lv[g] = (struct purge__kv){first.key, id};
		at += take;
	}
	return groups;
}

/* The leaves, evenly filled, linked; kv[g] gets group g's (first key,
 * leaf) pair once the group is read (g is never past the group's start). */
static size_t idx_load_leaves(struct purge__index *x, struct purge__kv *kv, size_t n)
{
	size_t groups = (n + IDX_FILL - 1) / IDX_FILL, at = 0;
	uint32_t prev = 0;

	for (size_t g = 0; g < groups; g++) {
		size_t take = (n - at) / (groups - g);
		uint32_t id = idx_node_new(x, 1);
		if (!id)
			return 0;
		idx_node *nd = &x->node[id];
		for (size_t k = 0; k < take; k++) {
			nd->key[k] = kv[at + k].key;
			nd->val[k] = (uint32_t)kv[at + k].val;
		}
		nd->n = (uint32_t)take;
		nd->prev = prev;
		if (prev)
			x->node[prev].next = id;
		prev = id;
		kv[g] = (struct purge__kv){kv[at].key, id};
		at += take;
	}
	return groups;
}

int purge__idx_load(struct purge__index *x, struct purge__kv *kv, size_t n)
{
	purge__idx_clear(x);
	if (n == 0)
		return 0;
	/* each level's (first key, node) pairs overwrite pairs already read */
	size_t m = idx_load_leaves(x, kv, n);
	while (m > 1)
		m = idx_load_level(x, kv, m);
	if (m == 0) {
		purge__idx_clear(x);
		return -ENOSPC;
	}
	x->root = (uint32_t)kv[0].val;
	x->count = (uint32_t)n;
	return 0;
}
