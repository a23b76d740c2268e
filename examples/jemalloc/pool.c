/* SPDX-License-Identifier: MIT */
/*
 * The shim's pool of reusable address space: the extents jemalloc released
 * (and the shim queued for purging), kept as a sorted array of disjoint
 * ranges in mmap'ed memory.  Plain data: the caller holds its shard's
 * pool_lock.
 *
 * Ranges number in the tens in most programs, but tens of thousands when a
 * heap of small large extents (16 KiB values) is freed in random order.
 * Address lookups are binary searches, and a fit is found through size
 * bins (O(bins + a few candidates)), not by looking at every range: that
 * scan was the shim's largest cost in such a heap.  Inserting and removing
 * still move the array's tail (memmove, fast at these sizes).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

int pool_init(struct pool *p, unsigned cap)
{
	size_t len = (size_t)cap * (sizeof(*p->r) + sizeof(*p->node));
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->r = (struct pool_range *)m;
	p->node = (struct pool_node *)(m + (size_t)cap * sizeof(*p->r));
	p->cap = cap;
	p->free = POOL_NONE;
	for (unsigned b = 0; b < POOL_BINS; b++)
		p->head[b] = POOL_NONE;
	return 0;
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

/* Files range i in its bin, newest first. */
static void link_range(struct pool *p, unsigned i)
{
	/* a node freed before, or one never used: the array is written only
	 * as the pool grows (a pool_init that wrote it all cost 1.5 MiB of RSS
	 * per shard) */
	unsigned id = p->free != POOL_NONE ? p->free : p->fresh++;
	unsigned b = pool_bin(p->r[i].end - p->r[i].start);
	struct pool_node *nd = &p->node[id];

	if (id == p->free)
		p->free = nd->next;
	*nd = (struct pool_node){p->r[i].start, POOL_NONE, p->head[b], b};
	if (nd->next != POOL_NONE)
		p->node[nd->next].prev = id;
	p->head[b] = id;
	p->used[b / 64] |= (uint64_t)1 << (b % 64);
	p->r[i].node = id;
}

/* Takes range i out of its bin (before it changes or goes). */
static void unlink_range(struct pool *p, unsigned i)
{
	unsigned id = p->r[i].node;
	struct pool_node *nd = &p->node[id];

	if (nd->prev != POOL_NONE)
		p->node[nd->prev].next = nd->next;
	else
		p->head[nd->bin] = nd->next;
	if (nd->next != POOL_NONE)
		p->node[nd->next].prev = nd->prev;
	if (p->head[nd->bin] == POOL_NONE)
		p->used[nd->bin / 64] &= ~((uint64_t)1 << (nd->bin % 64));
	nd->next = p->free;
	p->free = id;
}

/* First index whose range starts at or after s. */
static unsigned lower_bound(const struct pool *p, uintptr_t s)
{
	unsigned lo = 0, hi = p->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (p->r[mid].start < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void remove_at(struct pool *p, unsigned i)
{
	unlink_range(p, i);
	memmove(&p->r[i], &p->r[i + 1], (p->n - i - 1) * sizeof(*p->r));
	p->n--;
}

static int insert_at(struct pool *p, unsigned i, struct pool_range nr)
{
	if (p->n == p->cap)
		return -ENOSPC;
	memmove(&p->r[i + 1], &p->r[i], (p->n - i) * sizeof(*p->r));
	p->r[i] = nr;
	p->n++;
	link_range(p, i);
	return 0;
}

/*
 * A merged range takes the largest tag of its parts: dirty when any part is
 * (POOL_DIRTY is the largest value), else queued when its newest part was.
 */
int pool_insert(struct pool *p, uintptr_t s, uintptr_t e, uint64_t queued)
{
	unsigned i = lower_bound(p, s);
	uint64_t stamp = ++p->stamp;

	if ((i > 0 && p->r[i - 1].end > s) || (i < p->n && p->r[i].start < e))
		return -EEXIST;
	bool left = i > 0 && p->r[i - 1].end == s;
	bool right = i < p->n && p->r[i].start == e;
	if (left) {
		struct pool_range *l = &p->r[i - 1];
		unlink_range(p, i - 1);
		l->end = right ? p->r[i].end : e;
		l->queued = max_u64(l->queued, right ? max_u64(queued, p->r[i].queued) : queued);
		l->stamp = stamp;
		link_range(p, i - 1);
		if (right)
			remove_at(p, i);
	} else if (right) {
		unlink_range(p, i);
		p->r[i].start = s;
		p->r[i].queued = max_u64(p->r[i].queued, queued);
		p->r[i].stamp = stamp;
		link_range(p, i);
	} else {
		int ret = insert_at(p, i, (struct pool_range){s, e, queued, stamp, 0});
		if (ret)
			return ret;
	}
	p->bytes += e - s;
	return 0;
}

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

/* The best range for w by better(), among those looked at: bins from w's
 * size up, smallest first, until one has a range of the wanted class (a
 * larger bin could only hold a looser fit) or MORE_LOOKS ranges were looked
 * at after the first fit.  O(bins + BIN_LOOKS + MORE_LOOKS). */
static int find_fit(const struct pool *p, const struct pool_want *w, uintptr_t *at)
{
	int best = -1;
	unsigned more = 0;

	for (unsigned b = next_bin(p, pool_bin(w->size)); b < POOL_BINS && more < MORE_LOOKS;
	     b = next_bin(p, b + 1)) {
		unsigned looks = 0;
		for (unsigned id = p->head[b];
		     id != POOL_NONE && looks < BIN_LOOKS && more < MORE_LOOKS;
		     id = p->node[id].next, looks++, more += best >= 0) {
			unsigned i = lower_bound(p, p->node[id].start);
			uintptr_t a = fit(&p->r[i], w->size, w->align);
			if (a && (best < 0 || better(&p->r[i], &p->r[best], w))) {
				best = (int)i;
				*at = a;
			}
		}
		if (best >= 0 && wanted(&p->r[best], w))
			break;
	}
	return best;
}

static int find_at(const struct pool *p, uintptr_t want, size_t size)
{
	unsigned i = lower_bound(p, want + 1);

	if (i == 0)
		return -1;
	const struct pool_range *r = &p->r[i - 1];
	/* r->start <= want by the search; r may still end before want */
	return want < r->end && r->end - want >= size ? (int)(i - 1) : -1;
}

/* Cut [a, a+size) out of range i, keeping what is left on either side. */
static bool carve(struct pool *p, unsigned i, uintptr_t a, size_t size)
{
	struct pool_range *r = &p->r[i];
	uintptr_t end = r->end;

	if (a == r->start && a + size == end) {
		remove_at(p, i);
		p->bytes -= size;
		return true;
	}
	if (a != r->start && a + size != end) {
		struct pool_range tail = {a + size, end, r->queued, r->stamp, 0};
		if (insert_at(p, i + 1, tail))
			return false;
		r = &p->r[i];
	}
	unlink_range(p, i);
	if (a == r->start)
		r->start = a + size;
	else
		r->end = a;
	link_range(p, i);
	p->bytes -= size;
	return true;
}

bool pool_take(struct pool *p, const struct pool_want *w, struct pool_piece *out)
{
	uintptr_t a = w->at;
	int i = a ? find_at(p, a, w->size) : find_fit(p, w, &a);

	if (i < 0 || (w->only && !wanted(&p->r[i], w)))
		return false;
	bool dirty = p->r[i].queued == POOL_DIRTY;
	if (!carve(p, (unsigned)i, a, w->size))
		return false;
	out->addr = a;
	out->dirty = dirty;
	return true;
}

bool pool_take_oldest(struct pool *p, uintptr_t *s, uintptr_t *e)
{
	unsigned old = 0;

	if (p->n == 0)
		return false;
	for (unsigned i = 1; i < p->n; i++)
		if (p->r[i].stamp < p->r[old].stamp)
			old = i;
	*s = p->r[old].start;
	*e = p->r[old].end;
	p->bytes -= *e - *s;
	remove_at(p, old);
	return true;
}

void pool_mark_dirty(struct pool *p, uintptr_t s, uintptr_t e)
{
	unsigned i = lower_bound(p, s);

	if (i > 0)
		i--;
	for (; i < p->n && p->r[i].start < e; i++)
		if (p->r[i].end > s)
			p->r[i].queued = POOL_DIRTY;
}
