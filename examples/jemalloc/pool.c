/* SPDX-License-Identifier: MIT */
/*
 * The shim's pool of reusable address space: the extents jemalloc released
 * (and the shim queued for purging), kept as a sorted array of disjoint
 * ranges in mmap'ed memory.  Plain data: the caller holds shim.pool_lock.
 *
 * Ranges number in the tens to hundreds (extents are large; neighbours
 * merge), so linear scans and memmove are cheaper than any tree here.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

int pool_init(struct pool *p, unsigned cap)
{
	void *m = mmap(NULL, (size_t)cap * sizeof(*p->r), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->r = m;
	p->cap = cap;
	return 0;
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
		l->end = right ? p->r[i].end : e;
		l->queued = max_u64(l->queued, right ? max_u64(queued, p->r[i].queued) : queued);
		l->stamp = stamp;
		if (right)
			remove_at(p, i);
	} else if (right) {
		p->r[i].start = s;
		p->r[i].queued = max_u64(p->r[i].queued, queued);
		p->r[i].stamp = stamp;
	} else {
		int ret = insert_at(p, i, (struct pool_range){s, e, queued, stamp});
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

static int find_fit(const struct pool *p, const struct pool_want *w, uintptr_t *at)
{
	int best = -1;

	for (unsigned i = 0; i < p->n; i++) {
		uintptr_t a = fit(&p->r[i], w->size, w->align);
		if (a && (best < 0 || better(&p->r[i], &p->r[best], w))) {
			best = (int)i;
			*at = a;
		}
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
	} else if (a == r->start) {
		r->start = a + size;
	} else if (a + size == end) {
		r->end = a;
	} else {
		struct pool_range tail = {a + size, end, r->queued, r->stamp};
		if (insert_at(p, i + 1, tail))
			return false;
		p->r[i].end = a;
	}
	p->bytes -= size;
	return true;
}

bool pool_take(struct pool *p, const struct pool_want *w, struct pool_piece *out)
{
	uintptr_t a = w->at;
	int i = a ? find_at(p, a, w->size) : find_fit(p, w, &a);

	if (i < 0)
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
