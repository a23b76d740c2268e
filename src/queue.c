/* SPDX-License-Identifier: MIT */
/*
 * The pending store: enqueue, cancel, age order and address order.  Pure
 * bookkeeping: no system call, no counter of the books (the caller hands
 * what changed to books.c), never calls flush.c.
 *
 * Costs, n pending pieces:
 *   add           O(1): a pool slot and a ring entry;
 *   cancel        O(log n) per piece it touches, after indexing what was
 *                 added since the last cancel (O(log n) each, or a bulk
 *                 rebuild, O(n) after an O(n) sort, when that is most);
 *   take oldest   O(1) per piece from the ring, O(log n) from the late heap
 *                 or the index;
 *   take all      O(n).
 */
#include "compat.h"

#include <assert.h>
#include <string.h>

#include "internal.h"

#define NONE UINT32_MAX

static uint32_t where(const struct purge__piece *p)
{
	return p->info & 3u;
}

/* A reference still names its piece while the piece's seq is unchanged. */
#define ref_ok(s, r)  ((s)->piece[(r).id].seq == (r).seq)
#define lref_ok(s, r) ref_ok(s, r)

static void reset(struct purge__store *s)
{
	s->bump = 0;
	s->free = NONE;
	s->live = 0;
	s->head = s->tail = s->syncp = 0;
	s->nlate = 0;
	s->novl = 0;
	purge__idx_clear(&s->idx);
	s->lo = UINTPTR_MAX;
	s->hi = 0;
}

void purge__store_init(struct purge__store *s, void *pieces, uint32_t npieces, void *ring,
                       uint64_t rsize, void *late, void *ovl, void *nodes, uint32_t nnodes,
                       struct purge__kv *scratch)
{
	memset(s, 0, sizeof(*s));
	s->piece = pieces;
	s->npieces = npieces;
	s->ring = ring;
	s->rmask = rsize - 1;
	s->late = late;
	s->ovl = ovl;
	s->scratch = scratch;
	purge__idx_init(&s->idx, nodes, nnodes);
	reset(s);
}

/* ---- pool --------------------------------------------------------------- */

/* The caller made room: purge__store_room() is at least the pieces it adds. */
static uint32_t piece_new(struct purge__store *s)
{
	uint32_t id = s->free;

	assert(s->live < s->npieces);

	if (id != NONE)
		s->free = (uint32_t)s->piece[id].start;
	else /* first use since the store started over: nothing refers to it */
		s->piece[id = s->bump++].seq = 0;
	s->live++;
	return id;
}

/* Freeing a piece that heads the ring or the late heap makes the store
 * untidy: tidy() runs at the end of the call.  Any other head stays valid. */
static void piece_free(struct purge__store *s, uint32_t id)
{
	struct purge__piece *p = &s->piece[id];

	s->untidy |= (s->head < s->tail && s->ring[s->head & s->rmask].id == id) ||
	             (s->nlate && s->late[0].id == id);
	p->seq++;
	p->info = PIECE_FREE;
	p->start = s->free;
	s->free = id;
	s->live--;
}

/* ---- age order: ring and late heap ------------------------------------- */

/* Drops stale references; the ring always has room for every live piece. */
static void ring_compact(struct purge__store *s)
{
	uint64_t w = s->head, syncp = s->tail;

	for (uint64_t r = s->head; r < s->tail; r++) {
		struct purge__ref ref = s->ring[r & s->rmask];
		if (r == s->syncp)
			syncp = w;
		if (ref_ok(s, ref))
			s->ring[w++ & s->rmask] = ref;
	}
	s->syncp = s->syncp == s->tail ? w : syncp;
	s->tail = w;
}

static void ring_push(struct purge__store *s, uint32_t id)
{
	if (s->tail - s->head > s->rmask)
		ring_compact(s);
	s->ring[s->tail++ & s->rmask] = (struct purge__ref){id, s->piece[id].seq};
}

/* Older first; of equal ages the lower address, then the shorter range:
 * an order the contract can state (parts split off by one cancel have no
 * other order of their own). */
static bool late_before(const struct purge__lref *a, const struct purge__lref *b)
{
	if (a->stamp != b->stamp)
		return a->stamp < b->stamp;
	return a->start != b->start ? a->start < b->start : a->end < b->end;
}

static void late_sift_up(struct purge__lref *h, uint32_t i)
{
	while (i > 0) {
		uint32_t up = (i - 1) / 2;
		if (!late_before(&h[i], &h[up]))
			return;
		struct purge__lref t = h[up];
		h[up] = h[i];
		h[i] = t;
		i = up;
	}
}

static void late_sift_down(struct purge__lref *h, uint32_t n, uint32_t i)
{
	for (uint32_t c; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && late_before(&h[c + 1], &h[c]))
			c++;
		if (!late_before(&h[c], &h[i]))
			return;
		struct purge__lref t = h[c];
		h[c] = h[i];
		h[i] = t;
	}
}

/* Drops stale entries and restores the heap: O(n), when it is full. */
static void late_rebuild(struct purge__store *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nlate; i++)
		if (lref_ok(s, s->late[i]))
			s->late[n++] = s->late[i];
	s->nlate = n;
	for (uint32_t i = n / 2; i-- > 0;)
		late_sift_down(s->late, n, i);
}

static void late_push(struct purge__store *s, uint32_t id)
{
	const struct purge__piece *p = &s->piece[id];

	if (s->nlate == s->npieces) /* one live entry per piece at most */
		late_rebuild(s);
	s->late[s->nlate] = (struct purge__lref){p->stamp, p->start, p->end, id, p->seq};
	late_sift_up(s->late, s->nlate++);
}

static void late_pop(struct purge__store *s)
{
	s->late[0] = s->late[--s->nlate];
	late_sift_down(s->late, s->nlate, 0);
}

/* Both heads name live pieces afterwards; an empty store starts over. */
static void tidy(struct purge__store *s)
{
	s->untidy = false;
	if (s->live == 0) {
		reset(s);
		return;
	}
	while (s->head < s->tail && !ref_ok(s, s->ring[s->head & s->rmask]))
		s->head++;
	if (s->syncp < s->head)
		s->syncp = s->head;
	while (s->nlate && !lref_ok(s, s->late[0]))
		late_pop(s);
}

/* The oldest pending piece; from_ring says which head it is. */
static bool oldest(const struct purge__store *s, uint32_t *id, bool *from_ring)
{
	bool ring = s->head<s->tail, late = s->nlate> 0;

	if (ring && late)
		ring = s->piece[s->ring[s->head & s->rmask].id].stamp <= s->late[0].stamp;
	else if (!ring && !late)
		return false;
	*from_ring = ring;
	*id = ring ? s->ring[s->head & s->rmask].id : s->late[0].id;
	return true;
}

uint64_t purge__store_oldest(const struct purge__store *s)
{
	uint32_t id;
	bool ring;

	return oldest(s, &id, &ring) ? s->piece[id].stamp : 0;
}

/* ---- address order: index and overlap list ----------------------------- */

static void set_where(struct purge__piece *p, uint32_t w, uint32_t pos)
{
	p->info = w | pos << 2;
}

static void ovl_add(struct purge__store *s, uint32_t id)
{
	set_where(&s->piece[id], PIECE_OVL, s->novl);
	s->ovl[s->novl++] = id;
}

static void ovl_del(struct purge__store *s, uint32_t id)
{
	uint32_t pos = s->piece[id].info >> 2, last = s->ovl[--s->novl];

	s->ovl[pos] = last;
	set_where(&s->piece[last], PIECE_OVL, pos);
}

/* Would piece id overlap its neighbours in the index?  Indexed pieces are
 * disjoint, so the two next to it are the only candidates. */
struct clash_ctx {
	const struct purge__store *s;
	uint32_t id;
};

static bool clashes(void *ctx, uint32_t below, uint32_t above)
{
	const struct clash_ctx *c = ctx;
	const struct purge__piece *p = &c->s->piece[c->id];

	return (below != PURGE_IDX_NOVAL && c->s->piece[below].end > p->start) ||
	       (above != PURGE_IDX_NOVAL && c->s->piece[above].start < p->end);
}

/* Into the index, or the overlap list when it overlaps an indexed piece. */
static void place(struct purge__store *s, uint32_t id)
{
	struct clash_ctx c = {s, id};

	if (purge__idx_insert_unless(&s->idx, s->piece[id].start, id, clashes, &c) == 0)
		set_where(&s->piece[id], PIECE_INDEX, 0);
	else
		ovl_add(s, id);
}

/* Indexed and unindexed pieces, sorted, become the new index in O(n). */
static void rebuild(struct purge__store *s)
{
	struct purge__kv *a = s->scratch, *t = s->scratch + s->npieces;
	struct purge__ipos pos;
	size_t n = 0, m = 0;

	if (purge__idx_find_ge(&s->idx, 0, &pos))
		do
			a[n++] = (struct purge__kv){purge__idx_key(&s->idx, &pos),
			                            purge__idx_val(&s->idx, &pos)};
		while (purge__idx_next(&s->idx, &pos));
	for (uint64_t r = s->syncp; r < s->tail; r++) {
		struct purge__ref ref = s->ring[r & s->rmask];
		if (ref_ok(s, ref) && where(&s->piece[ref.id]) == PIECE_TAIL)
			a[n++] = (struct purge__kv){s->piece[ref.id].start, ref.id};
	}
	purge__sort(a, t, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = (uint32_t)a[i].val;
		if (m && s->piece[id].start < s->piece[a[m - 1].val].end) {
			ovl_add(s, id);
			continue;
		}
		set_where(&s->piece[id], PIECE_INDEX, 0);
		a[m++] = a[i];
	}
	if (purge__idx_load(&s->idx, a, m, t) != 0)
		for (size_t i = 0; i < m; i++) /* cannot happen: nodes are sized */
			ovl_add(s, (uint32_t)a[i].val);
	s->syncp = s->tail;
}

/* Index the pieces added since the last time. */
static void sync(struct purge__store *s)
{
	uint64_t todo = s->tail - s->syncp;

	if (todo >= 32 && todo * 2 >= s->idx.count) {
		rebuild(s);
		return;
	}
	for (; s->syncp < s->tail; s->syncp++) {
		struct purge__ref ref = s->ring[s->syncp & s->rmask];
		if (ref_ok(s, ref) && where(&s->piece[ref.id]) == PIECE_TAIL)
			place(s, ref.id);
	}
}

/* ---- add, cancel, take -------------------------------------------------- */

void purge__store_add(struct purge__store *s, uintptr_t start, uintptr_t end, uint64_t stamp)
{
	uint32_t id = piece_new(s);
	struct purge__piece *p = &s->piece[id];

	/* keep the ring in stamp order even if a clock steps back */
	stamp = stamp < s->newest ? s->newest : stamp;
	s->newest = stamp;
	p->start = start;
	p->end = end;
	p->stamp = stamp;
	set_where(p, PIECE_TAIL, 0);
	ring_push(s, id);
	s->lo = start < s->lo ? start : s->lo;
	s->hi = end > s->hi ? end : s->hi;
}

static void detach(struct purge__store *s, uint32_t id)
{
	struct purge__piece *p = &s->piece[id];

	if (where(p) == PIECE_INDEX)
		purge__idx_remove(&s->idx, p->start);
	else if (where(p) == PIECE_OVL)
		ovl_del(s, id);
	piece_free(s, id);
}

/* [b, p->end) becomes a piece of its own with p's age; p keeps [.., a). */
static void split(struct purge__store *s, uint32_t id, uintptr_t a, uintptr_t b)
{
	uint32_t rid = piece_new(s);
	struct purge__piece *p = &s->piece[id], *r = &s->piece[rid];

	r->start = b;
	r->end = p->end;
	r->stamp = p->stamp;
	p->end = a;
	if (where(p) == PIECE_INDEX && purge__idx_insert(&s->idx, b, rid) == 0)
		set_where(r, PIECE_INDEX, 0);
	else
		ovl_add(s, rid);
	late_push(s, rid);
}

/* Cancel [a, b) on one piece: one in the overlap list, or the indexed one
 * that starts before a.  True when the piece is gone. */
static bool cut(struct purge__store *s, uint32_t id, uintptr_t a, uintptr_t b,
                struct purge__cut *out)
{
	struct purge__piece *p = &s->piece[id];

	if (p->end <= a || p->start >= b)
		return false;
	out->bytes += (p->end < b ? p->end : b) - (p->start > a ? p->start : a);
	if (p->start >= a && p->end <= b) {
		detach(s, id);
		out->gone++;
		return true;
	}
	if (p->start < a && p->end > b) {
		split(s, id, a, b);
		out->split++;
	} else if (p->start < a) {
		p->end = a;
	} else {
		p->start = b; /* never indexed: cancel_index moves indexed keys */
	}
	return false;
}

/* The indexed piece at pos starts inside [a, b) and ends after b: it keeps
 * [b, end).  Its key grows but stays below the next piece's start. */
static void trim_left(struct purge__store *s, const struct purge__ipos *pos, uint32_t id,
                      uintptr_t b)
{
	s->piece[id].start = b;
	if (purge__idx_set_key(&s->idx, pos, b) != 0)
		ovl_add(s, id);
}

/* Indexed pieces are disjoint and sorted: the one that starts before a,
 * then those that start inside [a, b).  One descent when nothing is
 * pending there, one and a removal for the common hit. */
static void cancel_index(struct purge__store *s, uintptr_t a, uintptr_t b, struct purge__cut *out)
{
	struct purge__ipos pos;

	if (purge__idx_find_le(&s->idx, a, &pos)) {
		uint32_t id = purge__idx_val(&s->idx, &pos);
		if (s->piece[id].start < a) {
			bool past = s->piece[id].end >= b; /* nothing else can be in [a, b) */
			cut(s, id, a, b, out);
			if (past || !purge__idx_next(&s->idx, &pos))
				return;
		}
	} else if (!purge__idx_find_ge(&s->idx, a, &pos)) {
		return;
	}
	while (purge__idx_key(&s->idx, &pos) < b) {
		uint32_t id = purge__idx_val(&s->idx, &pos);
		uintptr_t end = s->piece[id].end;
		if (end > b) {
			out->bytes += b - s->piece[id].start;
			trim_left(s, &pos, id, b);
			return;
		}
		out->bytes += end - s->piece[id].start;
		out->gone++;
		purge__idx_remove_at(&s->idx, &pos);
		piece_free(s, id);
		if (end == b || !purge__idx_find_ge(&s->idx, end, &pos))
			return;
	}
}

/* Pieces a cancel of [a, b) adds by splitting that the pool has no room
 * for (0: enough room).  One split for each pending piece that holds
 * [a, b) strictly inside, at most one of them indexed (indexed pieces are
 * disjoint), the others in the overlap list: counted only when that bound,
 * 1 + novl, is more than the room there is. */
static uint32_t short_of_room(struct purge__store *s, uintptr_t a, uintptr_t b)
{
	struct purge__ipos pos;
	uint32_t n = 0;

	if (1 + s->novl <= purge__store_room(s))
		return 0;
	if (purge__idx_find_le(&s->idx, a, &pos)) {
		const struct purge__piece *p = &s->piece[purge__idx_val(&s->idx, &pos)];
		n += p->start < a && p->end > b;
	}
	for (uint32_t k = 0; k < s->novl; k++)
		n += s->piece[s->ovl[k]].start < a && s->piece[s->ovl[k]].end > b;
	return n > purge__store_room(s) ? n : 0;
}

uint32_t purge__store_cancel(struct purge__store *s, uintptr_t start, uintptr_t end,
                             struct purge__cut *out)
{
	*out = (struct purge__cut){0};
	if (s->live == 0 || end <= s->lo || start >= s->hi)
		return 0;
	sync(s);
	uint32_t need = short_of_room(s, start, end);
	if (need)
		return need;
	cancel_index(s, start, end, out);
	for (uint32_t k = 0; k < s->novl;)
		if (!cut(s, s->ovl[k], start, end, out))
			k++;
	if (s->untidy || s->live == 0)
		tidy(s);
	return 0;
}

static void take(struct purge__store *s, uint32_t id, struct purge__kv *sel)
{
	const struct purge__piece *p = &s->piece[id];

	*sel = (struct purge__kv){p->start, p->end - p->start};
	detach(s, id);
}

size_t purge__store_take_oldest(struct purge__store *s, struct purge__kv *sel, size_t max,
                                uint64_t max_stamp, uint64_t max_bytes)
{
	uint64_t bytes = 0;
	size_t n = 0;
	uint32_t id;
	bool ring;

	while (n < max && bytes < max_bytes && oldest(s, &id, &ring) &&
	       s->piece[id].stamp <= max_stamp) {
		if (ring)
			s->head++;
		else
			late_pop(s);
		take(s, id, &sel[n]);
		bytes += sel[n++].val;
		tidy(s);
	}
	return n;
}

static void take_copy(struct purge__kv *sel, size_t *n, const struct purge__piece *p, bool *ordered)
{
	if (*n && p->start < sel[*n - 1].key + sel[*n - 1].val)
		*ordered = false;
	sel[(*n)++] = (struct purge__kv){p->start, p->end - p->start};
}

size_t purge__store_take_all(struct purge__store *s, struct purge__kv *sel, bool *ordered)
{
	size_t n = 0;

	/* everything goes: copy, then start over instead of detaching */
	*ordered = true;
	for (uint64_t r = s->head; r < s->tail; r++) {
		struct purge__ref ref = s->ring[r & s->rmask];
		if (ref_ok(s, ref))
			take_copy(sel, &n, &s->piece[ref.id], ordered);
	}
	for (uint32_t i = 0; i < s->nlate; i++)
		if (lref_ok(s, s->late[i]))
			take_copy(sel, &n, &s->piece[s->late[i].id], ordered);
	reset(s);
	return n;
}

size_t purge__store_take_ovl(struct purge__store *s, struct purge__kv *sel)
{
	size_t n = 0;

	while (s->novl)
		take(s, s->ovl[s->novl - 1], &sel[n++]);
	tidy(s);
	return n;
}
