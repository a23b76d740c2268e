/* SPDX-License-Identifier: MIT */
/*
 * The shim's pool of reusable address space: the extents jemalloc released
 * (and the shim queued for purging), kept as disjoint ranges in mmap'ed
 * memory.  Plain data: the caller holds its shard's pool_lock.
 *
 * Ranges number in the tens in most programs, but in the thousands when a
 * heap of small large extents (16 KiB values) is freed in random order.
 * So no operation looks at every range or moves them: each range keeps its
 * slot (its id) and is linked three ways,
 *  - into a tree by address, for merging with its neighbours, exact-address
 *    requests and overlaps: a treap (a search tree by start, a heap by a
 *    priority hashed from the id), O(log n) expected.  Its nodes are an
 *    array of their own (16 bytes: start and two links), four to a cache
 *    line: a descent's misses were most of an insert's cost;
 *  - into its size bin's list, for finding a fit: O(bins + a few candidates);
 *  - into the age list, by release time, for giving back the least
 *    recently released: O(1).
 * Before, a sorted array moved its tail on every insert and removal, and
 * the oldest range was found by looking at all of them: with thousands of
 * ranges (redis replacing 16 KiB values by 512-byte ones) memmove and that
 * scan took a quarter of the server's CPU time.  A range's start changes
 * in place when it grows or shrinks: ranges are disjoint, so a start never
 * passes another range's and the tree stays ordered.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

#define NONE POOL_NONE

int pool_init(struct pool *p, unsigned cap)
{
	size_t len = (size_t)cap * (sizeof(*p->r) + sizeof(*p->t));
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED || cap >= NONE)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->r = (struct pool_range *)m;
	p->t = (struct pool_node *)(m + (size_t)cap * sizeof(*p->r));
	p->cap = cap;
	p->free = p->root = p->oldest = p->newest = NONE;
	for (unsigned b = 0; b < POOL_BINS; b++)
		p->head[b] = NONE;
	return 0;
}

/* ---- slots --------------------------------------------------------------- */

/* A slot freed before, or one never used (NONE: all cap in use).  The array
 * is written only as the pool grows: a pool_init that wrote it all cost
 * 1.5 MiB of RSS per shard. */
static unsigned slot_take(struct pool *p)
{
	unsigned id = p->free;

	if (id != NONE)
		p->free = p->r[id].next;
	else if (p->fresh < p->cap)
		id = p->fresh++;
	if (id != NONE)
		p->n++;
	return id;
}

static bool slot_room(const struct pool *p)
{
	return p->free != NONE || p->fresh < p->cap;
}

static void slot_give(struct pool *p, unsigned id)
{
	p->r[id].next = p->free;
	p->free = id;
	p->n--;
}

/* ---- size bins ----------------------------------------------------------- */

unsigned pool_bin(uintptr_t len)
{
	uintptr_t pg = len >> 12;

	if (pg <= POOL_EXACT)
		return (unsigned)pg;
	unsigned lg = 63 - (unsigned)__builtin_clzll((unsigned long long)pg); /* >= 6 */
	unsigned b = POOL_EXACT + 1 + (lg - 6) * 4 + (unsigned)((pg >> (lg - 2)) & 3);
	return b < POOL_BINS ? b : POOL_BINS - 1;
}

/* Files range id in the bin of its length, newest first. */
static void bin_link(struct pool *p, unsigned id)
{
	struct pool_range *r = &p->r[id];
	unsigned b = pool_bin(r->end - r->start);

	r->bin = b;
	r->prev = NONE;
	r->next = p->head[b];
	if (r->next != NONE)
		p->r[r->next].prev = id;
	p->head[b] = id;
	p->used[b / 64] |= (uint64_t)1 << (b % 64);
}

/* Takes range id out of its bin (before its length changes, or it goes). */
static void bin_unlink(struct pool *p, unsigned id)
{
	const struct pool_range *r = &p->r[id];

	if (r->prev != NONE)
		p->r[r->prev].next = r->next;
	else
		p->head[r->bin] = r->next;
	if (r->next != NONE)
		p->r[r->next].prev = r->prev;
	if (p->head[r->bin] == NONE)
		p->used[r->bin / 64] &= ~((uint64_t)1 << (r->bin % 64));
}

/* ---- the age list: oldest release first ---------------------------------- */

/* Puts id after `after` (NONE: first, as the oldest). */
static void age_link(struct pool *p, unsigned id, unsigned after)
{
	struct pool_range *r = &p->r[id];

	r->older = after;
	r->newer = after == NONE ? p->oldest : p->r[after].newer;
	if (after == NONE)
		p->oldest = id;
	else
		p->r[after].newer = id;
	if (r->newer == NONE)
		p->newest = id;
	else
		p->r[r->newer].older = id;
}

static void age_unlink(struct pool *p, unsigned id)
{
	const struct pool_range *r = &p->r[id];

	if (r->older == NONE)
		p->oldest = r->newer;
	else
		p->r[r->older].newer = r->newer;
	if (r->newer == NONE)
		p->newest = r->older;
	else
		p->r[r->newer].older = r->older;
}

/* ---- the address tree ---------------------------------------------------- */

/* A fixed pseudo-random priority per slot (Fibonacci hashing of the id):
 * the treap's shape is that of a random search tree whatever the order of
 * the addresses, depth O(log n) expected. */
static uint32_t prio(unsigned id)
{
	return (uint32_t)(((uint64_t)id + 1) * 0x9E3779B97F4A7C15ull >> 32);
}

/* Splits the subtree t: starts below k to *l, the others to *r. */
static void tree_split(struct pool *p, unsigned t, uintptr_t k, unsigned *l, unsigned *r)
{
	while (t != NONE) {
		if (p->t[t].start < k) {
			*l = t;
			l = &p->t[t].right;
			t = *l;
		} else {
			*r = t;
			r = &p->t[t].left;
			t = *r;
		}
	}
	*l = *r = NONE;
}

/* Joins subtrees a and b, every start in a below every start in b. */
static unsigned tree_join(struct pool *p, unsigned a, unsigned b)
{
	unsigned root, *at = &root;

	while (a != NONE && b != NONE) {
		if (prio(a) > prio(b)) {
			*at = a;
			at = &p->t[a].right;
			a = *at;
		} else {
			*at = b;
			at = &p->t[b].left;
			b = *at;
		}
	}
	*at = a != NONE ? a : b;
	return root;
}

/* The link that points at id (id in the tree), or where id goes. */
static unsigned *tree_link(struct pool *p, unsigned id)
{
	unsigned *at = &p->root;
	uintptr_t k = p->t[id].start;

	while (*at != id && *at != NONE && prio(*at) >= prio(id))
		at = p->t[*at].start < k ? &p->t[*at].right : &p->t[*at].left;
	return at;
}

static void tree_insert(struct pool *p, unsigned id)
{
	unsigned *at = tree_link(p, id);

	tree_split(p, *at, p->t[id].start, &p->t[id].left, &p->t[id].right);
	*at = id;
}

static void tree_erase(struct pool *p, unsigned id)
{
	unsigned *at = tree_link(p, id);

	*at = tree_join(p, p->t[id].left, p->t[id].right);
}

/* The ranges around a: the one with the largest start <= a (*l) and the
 * one with the smallest start above it (*r), NONE where there is none: one
 * descent, whose cache misses were most of an insert's cost. */
static void tree_around(const struct pool *p, uintptr_t a, unsigned *l, unsigned *r)
{
	unsigned t = p->root;

	*l = *r = NONE;
	while (t != NONE) {
		if (p->t[t].start <= a) {
			*l = t;
			t = p->t[t].right;
		} else {
			*r = t;
			t = p->t[t].left;
		}
	}
}

/* The range with the largest start <= a, or NONE. */
static unsigned tree_floor(const struct pool *p, uintptr_t a)
{
	unsigned t = p->root, best = NONE;

	while (t != NONE) {
		if (p->t[t].start <= a) {
			best = t;
			t = p->t[t].right;
		} else {
			t = p->t[t].left;
		}
	}
	return best;
}

/* The range with the smallest start > a, or NONE. */
static unsigned tree_above(const struct pool *p, uintptr_t a)
{
	unsigned t = p->root, best = NONE;

	while (t != NONE) {
		if (p->t[t].start > a) {
			best = t;
			t = p->t[t].left;
		} else {
			t = p->t[t].right;
		}
	}
	return best;
}

/* ---- ranges -------------------------------------------------------------- */

/* A new range, in all three structures; NONE when the slots are used up. */
static unsigned range_add(struct pool *p, struct pool_range nr, unsigned older)
{
	unsigned id = slot_take(p);

	if (id == NONE)
		return NONE;
	p->r[id] = nr;
	p->t[id].start = nr.start;
	tree_insert(p, id);
	bin_link(p, id);
	age_link(p, id, older);
	return id;
}

static void range_drop(struct pool *p, unsigned id)
{
	tree_erase(p, id);
	bin_unlink(p, id);
	age_unlink(p, id);
	slot_give(p, id);
}

/* Gives range id new bounds (its neighbours in the tree unchanged). */
static void range_resize(struct pool *p, unsigned id, uintptr_t s, uintptr_t e)
{
	bin_unlink(p, id);
	p->r[id].start = p->t[id].start = s;
	p->r[id].end = e;
	bin_link(p, id);
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Range id grew by a release: it takes the release's tag if that is larger
 * (dirty when any part is: POOL_DIRTY is the largest value), and is now the
 * most recently released. */
static void range_grow(struct pool *p, unsigned id, uintptr_t s, uintptr_t e, uint64_t queued)
{
	struct pool_range *r = &p->r[id];

	range_resize(p, id, s, e);
	r->queued = max_u64(r->queued, queued);
	r->stamp = ++p->stamp;
	if (p->newest != id) {
		age_unlink(p, id);
		age_link(p, id, p->newest);
	}
}

int pool_insert(struct pool *p, uintptr_t s, uintptr_t e, uint64_t queued)
{
	unsigned l, r;

	tree_around(p, s, &l, &r);

	if ((l != NONE && p->r[l].end > s) || (r != NONE && p->r[r].start < e))
		return -EEXIST;
	bool left = l != NONE && p->r[l].end == s;
	bool right = r != NONE && p->r[r].start == e;
	if (left && right) {
		uintptr_t end = p->r[r].end;
		uint64_t rq = p->r[r].queued;
		range_drop(p, r);
		range_grow(p, l, p->r[l].start, end, max_u64(queued, rq));
	} else if (left) {
		range_grow(p, l, p->r[l].start, e, queued);
	} else if (right) {
		range_grow(p, r, s, p->r[r].end, queued);
	} else {
		struct pool_range nr = {
		    .start = s, .end = e, .queued = queued, .stamp = ++p->stamp};
		if (range_add(p, nr, p->newest) == NONE)
			return -ENOSPC;
	}
	p->bytes += e - s;
	return 0;
}

/* ---- hand-outs ----------------------------------------------------------- */

/* Where `size` bytes aligned to `align` fit in r, or 0. */
static uintptr_t fit(const struct pool_range *r, size_t size, size_t align)
{
	uintptr_t a = (r->start + align - 1) & ~(uintptr_t)(align - 1);

	if (a < r->start || a > r->end || r->end - a < size)
		return 0;
	return a;
}

/* Likely purged (or never touched): not dirty, and queued before the
 * oldest range still pending, or nothing is pending.  A hint only: the
 * queue settles oldest first, but a full flush settles newer ranges too,
 * and the coarse clock gives many ranges the same time. */
static bool settled(const struct pool_range *r, const struct pool_want *w)
{
	return r->queued != POOL_DIRTY && (w->oldest == 0 || r->queued < w->oldest);
}

/* The class a caller wants first: ranges likely purged when it needs zeros
 * (their cancel is likely to answer 0, sparing a MADV_DONTNEED on the
 * spot); otherwise ranges likely still resident, which reuse without page
 * faults and whose cancel spares the purge.  Reusing those first is also
 * what keeps pending bytes low. */
static bool wanted(const struct pool_range *r, const struct pool_want *w)
{
	return w->zero == settled(r, w);
}

/* True when candidate c ranks before the best so far: the wanted class,
 * then the tighter fit (keeps big ranges for big requests), then the most
 * recently released. */
static bool better(const struct pool_range *c, const struct pool_range *best,
                   const struct pool_want *w)
{
	bool cw = wanted(c, w), bw = wanted(best, w);

	if (cw != bw)
		return cw;
	size_t cl = c->end - c->start, bl = best->end - best->start;
	if (cl != bl)
		return cl < bl;
	return c->stamp > best->stamp;
}

/* Ranges looked at per bin, at most, and in all once a fit is found:
 * bounds the cost when many ranges share a bin, or none is of the wanted
 * class.  Each list is newest first, so the ones looked at are the newest,
 * and wanted ranges (likely resident: released recently) come first. */
#define BIN_LOOKS  32
#define MORE_LOOKS 64

/* The next bin at or after b that holds ranges, or POOL_BINS. */
static unsigned next_bin(const struct pool *p, unsigned b)
{
	while (b < POOL_BINS) {
		uint64_t m = p->used[b / 64] >> (b % 64);
		if (m)
			return b + (unsigned)__builtin_ctzll(m);
		b = (b / 64 + 1) * 64;
	}
	return POOL_BINS;
}

/* A range of the wanted class that w fills exactly: only a more recent
 * one would rank before it, and each bin's list is newest first. */
static bool perfect(const struct pool_range *r, const struct pool_want *w)
{
	return r->end - r->start == w->size && wanted(r, w);
}

/* The best range for w by better(), among those looked at: bins from w's
 * size up, smallest first, until one has a range of the wanted class (a
 * larger bin could only hold a looser fit) or MORE_LOOKS ranges were looked
 * at after the first fit; the first perfect one ends the search.  O(bins +
 * BIN_LOOKS + MORE_LOOKS).  Without that end, a hand-out from a bin full of
 * ranges its size (redis' 64 KiB values) looked at 32 of them: 1,100
 * instructions a hand-out (callgrind). */
static unsigned find_fit(const struct pool *p, const struct pool_want *w, uintptr_t *at)
{
	unsigned best = NONE, more = 0;

	for (unsigned b = next_bin(p, pool_bin(w->size)); b < POOL_BINS && more < MORE_LOOKS;
	     b = next_bin(p, b + 1)) {
		unsigned looks = 0;
		for (unsigned id = p->head[b]; id != NONE && looks < BIN_LOOKS && more < MORE_LOOKS;
		     id = p->r[id].next, looks++, more += best != NONE) {
			uintptr_t a = fit(&p->r[id], w->size, w->align);
			if (a && (best == NONE || better(&p->r[id], &p->r[best], w))) {
				best = id;
				*at = a;
				if (perfect(&p->r[id], w))
					return best;
			}
		}
		if (best != NONE && wanted(&p->r[best], w))
			break;
	}
	return best;
}

static unsigned find_at(const struct pool *p, uintptr_t want, size_t size)
{
	unsigned id = tree_floor(p, want);

	/* r->start <= want by the search; r may still end before want */
	if (id == NONE || want >= p->r[id].end || p->r[id].end - want < size)
		return NONE;
	return id;
}

/* Cut [a, a+size) out of range id, keeping what is left on either side;
 * false (nothing changed) when that needs a slot and none is left. */
static bool carve(struct pool *p, unsigned id, uintptr_t a, size_t size)
{
	struct pool_range *r = &p->r[id];
	uintptr_t s = r->start, e = r->end;

	if (a == s && a + size == e) {
		range_drop(p, id);
	} else if (a != s && a + size != e) {
		/* the tail keeps the range's tag and age: next to it in the list */
		struct pool_range tail = {
		    .start = a + size, .end = e, .queued = r->queued, .stamp = r->stamp};
		if (!slot_room(p))
			return false;
		range_resize(p, id, s, a);
		range_add(p, tail, id);
	} else {
		range_resize(p, id, a == s ? a + size : s, a == s ? e : a);
	}
	p->bytes -= size;
	return true;
}

bool pool_take(struct pool *p, const struct pool_want *w, struct pool_piece *out)
{
	uintptr_t a = w->at;
	unsigned id = a ? find_at(p, a, w->size) : find_fit(p, w, &a);

	if (id == NONE || (w->only && !wanted(&p->r[id], w)))
		return false;
	bool dirty = p->r[id].queued == POOL_DIRTY;
	if (!carve(p, id, a, w->size))
		return false;
	out->addr = a;
	out->dirty = dirty;
	return true;
}

bool pool_take_oldest(struct pool *p, uintptr_t *s, uintptr_t *e)
{
	unsigned id = p->oldest;

	if (id == NONE)
		return false;
	*s = p->r[id].start;
	*e = p->r[id].end;
	p->bytes -= *e - *s;
	range_drop(p, id);
	return true;
}

void pool_mark_dirty(struct pool *p, uintptr_t s, uintptr_t e)
{
	unsigned id = tree_floor(p, s);

	if (id == NONE || p->r[id].end <= s)
		id = tree_above(p, s);
	for (; id != NONE && p->r[id].start < e; id = tree_above(p, p->r[id].start))
		p->r[id].queued = POOL_DIRTY;
}
