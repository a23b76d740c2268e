/* SPDX-License-Identifier: MIT */
/*
 * The address index: a B+tree over the start addresses of pending ranges
 * that do not overlap, with nodes carved from the queue's storage.  Plain
 * data, no system call, no allocation: queue.c owns one.
 *
 * Costs, n entries: find O(log n); insert and remove O(log n) (node splits,
 * borrows and merges keep every node but the root at least a third full);
 * bulk load from sorted keys O(n).
 */
#ifndef PURGE_INDEX_H
#define PURGE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

#define PURGE_IDX_K 63 /* keys per node: 2^6 - 1, see upper() in index.c */

#define PURGE_IDX_NONE UINTPTR_MAX

struct purge__node {
	uint32_t n;                     /* keys in use */
	uint32_t leaf;                  /* 1: leaf; 0: internal */
	uint32_t prev, next;            /* leaves: neighbours in key order; free nodes: next */
	uintptr_t key[PURGE_IDX_K + 1]; /* unused slots hold PURGE_IDX_NONE */
	uint32_t val[PURGE_IDX_K + 1];  /* leaf: values; internal: n + 1 children */
};

struct purge__index {
	struct purge__node *node; /* node[0] is unused: 0 means "none" */
	uint32_t cap;             /* nodes, node[0] included */
	uint32_t bump;            /* next never-used node */
	uint32_t free;            /* free list */
	uint32_t used;            /* nodes in the tree */
	uint32_t root;
	uint32_t count; /* entries */
};

#define PURGE_IDX_MAXH 16 /* height bound: >= 29 children a node, 2^32 keys need 7 */

/* The internal nodes a descent went through, and the child taken at each. */
struct purge__ipath {
	uint32_t node[PURGE_IDX_MAXH];
	uint32_t ci[PURGE_IDX_MAXH];
	int depth; /* -1: not known (the position moved to another leaf) */
};

/* A position: entry i of leaf node `leaf`, with the path to that leaf. */
struct purge__ipos {
	uint32_t leaf, i;
	struct purge__ipath pa;
};

/* A (key, value) pair for bulk loading. */
struct purge__kv {
	uintptr_t key;
	uintptr_t val;
};

/* Nodes needed for `entries` entries at most, whatever the order of
 * inserts and removes. */
size_t purge__idx_nodes(size_t entries);
void purge__idx_init(struct purge__index *x, struct purge__node *mem, uint32_t cap);
void purge__idx_clear(struct purge__index *x);
#define PURGE_IDX_NOVAL UINT32_MAX

/* 0, or -ENOSPC when no node is left (the index is unchanged). */
int purge__idx_insert(struct purge__index *x, uintptr_t key, uint32_t val);
/* The same, unless clash(ctx, below, above) is true for the values of the
 * entries that would be its neighbours (PURGE_IDX_NOVAL: none): then
 * -EEXIST.  One descent for the check and the insert. */
int purge__idx_insert_unless(struct purge__index *x, uintptr_t key, uint32_t val,
                             bool (*clash)(void *ctx, uint32_t below, uint32_t above), void *ctx);
/* Removes the entry with exactly this key; false when there is none. */
bool purge__idx_remove(struct purge__index *x, uintptr_t key);
/* Removes the entry at p, without a second descent when p knows its path;
 * p is stale afterwards. */
void purge__idx_remove_at(struct purge__index *x, const struct purge__ipos *p);
/* The entry with the largest key <= key. */
bool purge__idx_find_le(const struct purge__index *x, uintptr_t key, struct purge__ipos *p);
/* The entry with the smallest key >= key. */
bool purge__idx_find_ge(const struct purge__index *x, uintptr_t key, struct purge__ipos *p);
/* Moves p to the next entry in key order; false at the end. */
bool purge__idx_next(const struct purge__index *x, struct purge__ipos *p);
/* Replaces the key at p (p is stale afterwards); the caller keeps the order
 * (previous key < key < next key) and only raises a key: a leaf's first
 * key lowered below its separator is not found again (the store only
 * trims ranges from the left).  0, or -ENOSPC (the entry is gone). */
int purge__idx_set_key(struct purge__index *x, const struct purge__ipos *p, uintptr_t key);
/* Rebuilds the index from n pairs sorted by key, keys distinct; the pairs
 * are overwritten.  -ENOSPC when the nodes do not suffice (index empty). */
int purge__idx_load(struct purge__index *x, struct purge__kv *kv, size_t n);

static inline uintptr_t purge__idx_key(const struct purge__index *x, const struct purge__ipos *p)
{
	return x->node[p->leaf].key[p->i];
}

static inline uint32_t purge__idx_val(const struct purge__index *x, const struct purge__ipos *p)
{
	return x->node[p->leaf].val[p->i];
}

#pragma GCC visibility pop

#endif
