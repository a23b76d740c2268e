/* SPDX-License-Identifier: MIT */
/*
 * The pending store (store.h).
 *
 * Plain: pieces are the slots [head, bump) of rng, in enqueue order; an
 * add at the end of the array first moves them to the front.  Linked: any
 * slot may hold a piece; the age list runs from head to tail through link;
 * free pieces chain through link.next, and slots never used since the
 * store linked are taken from bump on (nfresh of them).  info says where a linked piece is: not
 * indexed yet (the list's suffix from unsynced), in the index, or in the
 * overlap list (it overlaps an indexed piece: bytes enqueued twice).
 */
#include "compat.h"

#include <assert.h>
#include <string.h>

#include "sort.h"
#include "store.h"

#define NONE PURGE_STORE_NONE

enum { STORE_TAIL, STORE_INDEX, STORE_OVL };
#define STORE_TAKEN  (1u << 31) /* in info: chosen by a take by address */
#define STORE_HELD   (1u << 30) /* in info: held for its huge-page frame (frames.c) */
#define STORE_MARKS  (STORE_TAKEN | STORE_HELD)
#define STORE_POS(i) (((i) & ~STORE_MARKS) >> 2) /* place in ovl[] */

static uintptr_t store_start(const struct purge__store *s, uint32_t id)
{
	return (uintptr_t)s->rng[id].iov_base;
}

static uintptr_t store_end(const struct purge__store *s, uint32_t id)
{
	return (uintptr_t)s->rng[id].iov_base + s->rng[id].iov_len;
}

static void store_set(struct purge__store *s, uint32_t id, uintptr_t start, uintptr_t end)
{
	s->rng[id] = (struct iovec){(void *)start, end - start};
}

static uint32_t store_where(const struct purge__store *s, uint32_t id)
{
	return s->link[id].info & 3u;
}

/* The place of a linked piece; its marks stay. */
static void store_put_where(struct purge__store *s, uint32_t id, uint32_t w, uint32_t pos)
{
	s->link[id].info = (s->link[id].info & STORE_MARKS) | w | pos << 2;
}

static bool store_held(const struct purge__store *s, uint32_t id)
{
	return s->linked && (s->link[id].info & STORE_HELD);
}

/* New bounds for a pending piece: held bytes follow. */
static void store_trim(struct purge__store *s, uint32_t id, uintptr_t start, uintptr_t end)
{
	if (store_held(s, id))
		s->held_bytes = s->held_bytes - s->rng[id].iov_len + (end - start);
	store_set(s, id, start, end);
}

static void store_reset(struct purge__store *s)
{
	s->linked = false;
	s->bump = s->head = 0;
	s->tail = s->free = NONE;
	s->live = s->nfresh = 0;
	s->unsynced = s->fresh = NONE;
	s->nunsynced = 0;
	s->nheld = 0;
	s->held_bytes = 0;
	s->novl = 0;
	purge__idx_clear(&s->idx);
	s->lo = UINTPTR_MAX;
	s->hi = 0;
}

void purge__store_init(struct purge__store *s, uint32_t npieces, struct iovec *rng,
                       struct purge__link *link, uint64_t *stamp, uint32_t *ovl,
                       struct purge__node *nodes, uint32_t nnodes, void *scratch)
{
	memset(s, 0, sizeof(*s));
	s->npieces = npieces;
	s->rng = rng;
	s->link = link;
	s->stamp = stamp;
	s->ovl = ovl;
	s->scratch = scratch;
	/* bulk indexing sorts in the node memory: it must hold the pairs */
	assert((size_t)nnodes * sizeof(*nodes) >= (size_t)npieces * sizeof(struct purge__kv));
	purge__idx_init(&s->idx, nodes, nnodes);
	store_reset(s);
}

/* ---- the age list --------------------------------------------------------- */

/* A piece for a linked store; the caller made room. */
static uint32_t store_alloc(struct purge__store *s)
{
	uint32_t id = s->free;

	assert(s->live < s->npieces);
	if (id != NONE) {
		s->free = s->link[id].next;
	} else {
		assert(s->nfresh > 0);
		id = s->bump++;
		s->nfresh--;
	}
	s->live++;
	return id;
}

/* Into the list after `after` (NONE: at the head). */
static void store_link_after(struct purge__store *s, uint32_t id, uint32_t after)
{
	uint32_t next = after == NONE ? s->head : s->link[after].next;

	s->link[id].prev = after; /* its info stays */
	s->link[id].next = next;
	if (after == NONE)
		s->head = id;
	else
		s->link[after].next = id;
	if (next == NONE)
		s->tail = id;
	else
		s->link[next].prev = id;
}

static void store_unlink(struct purge__store *s, uint32_t id)
{
	struct purge__link l = s->link[id];

	if (store_held(s, id)) {
		s->nheld--;
		s->held_bytes -= s->rng[id].iov_len;
	}
	s->link[id].info &= ~STORE_MARKS; /* a free slot is neither held nor taken */
	if (s->fresh == id)
		s->fresh = l.next;
	if (l.prev == NONE)
		s->head = l.next;
	else
		s->link[l.prev].next = l.next;
	if (l.next == NONE)
		s->tail = l.prev;
	else
		s->link[l.next].prev = l.prev;
	s->link[id].next = s->free;
	s->free = id;
	s->live--;
}

/* A plain store becomes linked: its slots make the list, the slots taken
 * before them the free list (as many as were taken since the store was
 * empty), the slots after them are fresh. */
static void store_link_all(struct purge__store *s)
{
	uint32_t prev = NONE;

	for (uint32_t id = s->head; id < s->bump; prev = id++) {
		s->link[id].prev = prev;
		s->link[id].next = NONE;
		if (prev != NONE)
			s->link[prev].next = id;
		s->link[id].info = STORE_TAIL;
	}
	s->tail = prev;
	s->free = NONE;
	for (uint32_t id = 0; id < s->head; id++) {
		s->link[id].next = s->free;
		s->free = id;
	}
	s->nfresh = s->npieces - s->bump;
	s->unsynced = s->fresh = s->live ? s->head : NONE;
	s->nunsynced = s->live;
	s->linked = true;
}

/* ---- add and ages -------------------------------------------------------- */

/* A plain store at the end of its array moves its pieces to the front:
 * O(live), after at least pool - capacity adds since the last time. */
static void store_compact(struct purge__store *s)
{
	memmove(s->rng, s->rng + s->head, s->live * sizeof(*s->rng));
	if (s->aged)
		memmove(s->stamp, s->stamp + s->head, s->live * sizeof(*s->stamp));
	s->head = 0;
	s->bump = s->live;
}

void purge__store_add_slow(struct purge__store *s, uintptr_t start, uintptr_t end, uint64_t now)
{
	uint32_t id;

	if (s->live == 0)
		s->epoch = now;
	if (s->linked) {
		id = store_alloc(s);
		store_link_after(s, id, s->tail);
		s->link[id].info = STORE_TAIL;
		if (s->unsynced == NONE)
			s->unsynced = id;
		if (s->fresh == NONE)
			s->fresh = id;
		s->nunsynced++;
	} else {
		if (s->bump == s->npieces)
			store_compact(s);
		id = s->bump++;
		s->live++;
	}
	store_set(s, id, start, end);
	if (s->aged)
		purge__store_stamp(s, id, now);
	s->lo = start < s->lo ? start : s->lo;
	s->hi = end > s->hi ? end : s->hi;
}

/* The pending pieces in age order: plain slots or the list. */
#define STORE_EACH(s, id, k)                                                                       \
	for (uint32_t k = 0, id = (s)->head; k < (s)->live;                                        \
	     k++, id = (s)->linked ? (s)->link[id].next : id + 1)

void purge__store_age(struct purge__store *s)
{
	if (s->aged)
		return;
	s->newest = s->epoch > s->newest ? s->epoch : s->newest;
	STORE_EACH(s, id, k)
	s->stamp[id] = s->newest;
	s->aged = true;
}

uint64_t purge__store_oldest(const struct purge__store *s)
{
	if (s->live == 0)
		return 0;
	return s->aged ? s->stamp[s->head] : s->epoch;
}

/* ---- address order: the index and the overlap list ----------------------- */

static void store_ovl_add(struct purge__store *s, uint32_t id)
{
	store_put_where(s, id, STORE_OVL, s->novl);
	s->ovl[s->novl++] = id;
}

static void store_ovl_del(struct purge__store *s, uint32_t id)
{
	uint32_t pos = STORE_POS(s->link[id].info), last = s->ovl[--s->novl];

	s->ovl[pos] = last;
	store_put_where(s, last, STORE_OVL, pos);
}

/* Would piece id overlap its neighbours in the index?  Indexed pieces are
 * disjoint, so the two next to it are the only candidates. */
struct store_clash {
	const struct purge__store *s;
	uint32_t id;
};

static bool store_clashes(void *ctx, uint32_t below, uint32_t above)
{
	const struct store_clash *c = ctx;
	const struct purge__store *s = c->s;

	return (below != PURGE_IDX_NOVAL && store_end(s, below) > store_start(s, c->id)) ||
	       (above != PURGE_IDX_NOVAL && store_start(s, above) < store_end(s, c->id));
}

/* Into the index, or the overlap list when it overlaps an indexed piece. */
static void store_place(struct purge__store *s, uint32_t id)
{
	struct store_clash c = {s, id};

	if (purge__idx_insert_unless(&s->idx, store_start(s, id), id, store_clashes, &c) == 0)
		store_put_where(s, id, STORE_INDEX, 0);
	else
		store_ovl_add(s, id);
}

/* Every pending piece, sorted in the index's node memory, becomes the new
 * index in O(n); a piece that overlaps the one before it goes to the
 * overlap list. */
static void store_rebuild(struct purge__store *s)
{
	struct purge__kv *kv = s->scratch;
	size_t n = 0, m = 0;

	STORE_EACH(s, id, k)
	kv[n++] = (struct purge__kv){store_start(s, id), id};
	purge__idx_clear(&s->idx);
	s->novl = 0;
	purge__sort_kv(kv, (struct purge__kv *)s->idx.node, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = (uint32_t)kv[i].val;
		if (m && store_start(s, id) < store_end(s, (uint32_t)kv[m - 1].val)) {
			store_ovl_add(s, id);
			continue;
		}
		store_put_where(s, id, STORE_INDEX, 0);
		kv[m++] = kv[i];
	}
	if (purge__idx_load(&s->idx, kv, m) != 0)
		for (size_t i = 0; i < m; i++) /* cannot happen: the nodes are sized */
			store_ovl_add(s, (uint32_t)kv[i].val);
	s->unsynced = NONE;
	s->nunsynced = 0;
}

/* Index what was added since the last time: one at a time, or in bulk
 * when that is most of the store. */
static void store_sync(struct purge__store *s)
{
	if (!s->linked) {
		store_link_all(s);
		store_rebuild(s);
		return;
	}
	if (s->nunsynced >= 32 && 2 * (uint64_t)s->nunsynced >= s->idx.count) {
		store_rebuild(s);
		return;
	}
	for (uint32_t id = s->unsynced; id != NONE; id = s->link[id].next)
		store_place(s, id);
	s->unsynced = NONE;
	s->nunsynced = 0;
}

/* ---- cancel -------------------------------------------------------------- */

/* A linked piece leaves the index or the overlap list, and the list. */
static void store_detach(struct purge__store *s, uint32_t id)
{
	uint32_t w = store_where(s, id);

	if (w == STORE_INDEX) {
		purge__idx_remove(&s->idx, store_start(s, id));
	} else if (w == STORE_OVL) {
		store_ovl_del(s, id);
	} else { /* the unindexed pieces are the list's suffix: id is its first */
		assert(s->unsynced == id);
		s->unsynced = s->link[id].next;
		s->nunsynced--;
	}
	store_unlink(s, id);
}

/* [a, b) of a piece left the store: counted, and kept in the sink if any. */
static void store_removed(struct purge__cut *out, uintptr_t a, uintptr_t b)
{
	out->bytes += b - a;
	if (out->sink) {
		assert(out->nsink < out->cap);
		out->sink[out->nsink++] = (struct iovec){(void *)a, b - a};
	}
}

/* [b, end) becomes a piece of its own right after id, with its age; id
 * keeps [start, a). */
static void store_split(struct purge__store *s, uint32_t id, uintptr_t a, uintptr_t b)
{
	uint32_t rid = store_alloc(s);

	s->splits++;
	s->link[rid].info = s->link[id].info & STORE_HELD; /* a part of a held piece is held */
	store_set(s, rid, b, store_end(s, id));
	s->nheld += store_held(s, rid);
	s->held_bytes += store_held(s, rid) ? s->rng[rid].iov_len : 0;
	store_trim(s, id, store_start(s, id), a);
	if (s->aged)
		s->stamp[rid] = s->stamp[id];
	store_link_after(s, rid, id);
	if (store_where(s, id) == STORE_INDEX && purge__idx_insert(&s->idx, b, rid) == 0)
		store_put_where(s, rid, STORE_INDEX, 0);
	else
		store_ovl_add(s, rid);
}

/* Cancel [a, b) on one piece: one in the overlap list, or the indexed one
 * that starts before a.  True when the piece is gone. */
static bool store_cut(struct purge__store *s, uint32_t id, uintptr_t a, uintptr_t b,
                      struct purge__cut *out)
{
	uintptr_t start = store_start(s, id), end = store_end(s, id);

	if (end <= a || start >= b)
		return false;
	store_removed(out, start > a ? start : a, end < b ? end : b);
	if (start >= a && end <= b) {
		store_detach(s, id);
		out->gone++;
		return true;
	}
	if (start < a && end > b) {
		store_split(s, id, a, b);
		out->split++;
	} else if (start < a) {
		store_trim(s, id, start, a);
	} else { /* never indexed: store_cancel_index moves indexed keys */
		store_trim(s, id, b, end);
	}
	return false;
}

/* The indexed piece at pos starts inside [a, b) and ends after b: it keeps
 * [b, end).  Its key grows but stays below the next piece's start. */
static void store_trim_left(struct purge__store *s, const struct purge__ipos *pos, uint32_t id,
                            uintptr_t b)
{
	store_trim(s, id, b, store_end(s, id));
	if (purge__idx_set_key(&s->idx, pos, b) != 0)
		store_ovl_add(s, id);
}

/* The indexed piece that starts before a, if it reaches a. */
static bool store_cancel_below(struct purge__store *s, uintptr_t a, uintptr_t b,
                               struct purge__ipos *pos, struct purge__cut *out)
{
	uint32_t id = purge__idx_val(&s->idx, pos);

	if (store_start(s, id) >= a)
		return true;               /* it starts inside: the loop takes it */
	bool past = store_end(s, id) >= b; /* nothing else can be in [a, b) */
	store_cut(s, id, a, b, out);
	return !past && purge__idx_next(&s->idx, pos);
}

/* Indexed pieces are disjoint and sorted: the one that starts before a,
 * then those that start inside [a, b).  One descent when nothing is
 * pending there, one and a removal for the common hit. */
static void store_cancel_index(struct purge__store *s, uintptr_t a, uintptr_t b,
                               struct purge__cut *out)
{
	struct purge__ipos pos;

	if (purge__idx_find_le(&s->idx, a, &pos)) {
		if (!store_cancel_below(s, a, b, &pos, out))
			return;
	} else if (!purge__idx_find_ge(&s->idx, a, &pos)) {
		return;
	}
	while (purge__idx_key(&s->idx, &pos) < b) {
		uint32_t id = purge__idx_val(&s->idx, &pos);
		uintptr_t start = store_start(s, id), end = store_end(s, id);
		if (end > b) {
			store_removed(out, start, b);
			store_trim_left(s, &pos, id, b);
			return;
		}
		store_removed(out, start, end);
		out->gone++;
		purge__idx_remove_at(&s->idx, &pos);
		store_unlink(s, id);
		if (end == b || !purge__idx_find_ge(&s->idx, end, &pos))
			return;
	}
}

/* Pieces a cancel of [a, b) adds by splitting that the pool has no room
 * for (0: enough room).  One split for each pending piece that holds
 * [a, b) strictly inside, at most one of them indexed (indexed pieces are
 * disjoint), the others in the overlap list: counted only when that bound,
 * 1 + novl, is more than the room there is. */
static uint32_t store_split_need(const struct purge__store *s, uintptr_t a, uintptr_t b)
{
	struct purge__ipos pos;
	uint32_t n = 0, room = purge__store_room(s);

	if (1 + s->novl <= room)
		return 0;
	if (purge__idx_find_le(&s->idx, a, &pos)) {
		uint32_t id = purge__idx_val(&s->idx, &pos);
		n += store_start(s, id) < a && store_end(s, id) > b;
	}
	for (uint32_t k = 0; k < s->novl; k++)
		n += store_start(s, s->ovl[k]) < a && store_end(s, s->ovl[k]) > b;
	return n > room ? n : 0;
}

uint32_t purge__store_cancel(struct purge__store *s, uintptr_t start, uintptr_t end,
                             struct purge__cut *out)
{
	*out = (struct purge__cut){0};
	return purge__store_remove(s, start, end, out);
}

uint32_t purge__store_remove(struct purge__store *s, uintptr_t start, uintptr_t end,
                             struct purge__cut *out)
{
	if (s->live == 0 || end <= s->lo || start >= s->hi)
		return 0;
	store_sync(s);
	uint32_t need = store_split_need(s, start, end);
	if (need)
		return need;
	store_cancel_index(s, start, end, out);
	for (uint32_t k = 0; k < s->novl;)
		if (!store_cut(s, s->ovl[k], start, end, out))
			k++;
	if (s->live == 0)
		store_reset(s);
	return 0;
}

/* ---- what frames.c reads and marks -------------------------------------- */

/* Pending bytes of the indexed pieces in [a, b) (they are disjoint), and
 * how many of them meet it. */
static uint64_t store_cover_index(struct purge__store *s, uintptr_t a, uintptr_t b,
                                  uint32_t *pieces)
{
	struct purge__ipos pos;
	uint64_t bytes = 0;

	bool ok = purge__idx_find_le(&s->idx, a, &pos) || purge__idx_find_ge(&s->idx, a, &pos);
	for (; ok && purge__idx_key(&s->idx, &pos) < b; ok = purge__idx_next(&s->idx, &pos)) {
		uint32_t id = purge__idx_val(&s->idx, &pos);
		uintptr_t lo = store_start(s, id) > a ? store_start(s, id) : a;
		uintptr_t hi = store_end(s, id) < b ? store_end(s, id) : b;
		if (hi > lo) {
			bytes += hi - lo;
			++*pieces;
		}
	}
	return bytes;
}

#define STORE_OVL_PARTS 64 /* overlapping pieces in one interval counted exactly */

/* What the overlapping pieces add to the indexed ones in [a, b): their
 * parts there, sorted and merged, less the indexed bytes under them.  With
 * more than STORE_OVL_PARTS of them in [a, b), a lower bound that is not
 * zero when one of them is there. */
static uint64_t store_cover_ovl(struct purge__store *s, uintptr_t a, uintptr_t b, uint64_t indexed)
{
	struct iovec part[STORE_OVL_PARTS];
	size_t k = 0;
	uint64_t add = 0;
	uint32_t n;

	for (uint32_t i = 0; i < s->novl; i++) {
		uint32_t id = s->ovl[i];
		uintptr_t lo = store_start(s, id) > a ? store_start(s, id) : a;
		uintptr_t hi = store_end(s, id) < b ? store_end(s, id) : b;
		if (hi <= lo)
			continue;
		if (k == STORE_OVL_PARTS)
			return indexed ? 0 : 1;
		size_t j = k++; /* insertion sort by start */
		for (; j > 0 && (uintptr_t)part[j - 1].iov_base > lo; j--)
			part[j] = part[j - 1];
		part[j] = (struct iovec){(void *)lo, hi - lo};
	}
	for (size_t i = 0; i < k;) {
		uintptr_t lo = (uintptr_t)part[i].iov_base, hi = lo + part[i].iov_len;
		for (i++; i < k && (uintptr_t)part[i].iov_base <= hi; i++) {
			uintptr_t e = (uintptr_t)part[i].iov_base + part[i].iov_len;
			hi = e > hi ? e : hi;
		}
		add += hi - lo - store_cover_index(s, lo, hi, &n);
	}
	return add;
}

uint64_t purge__store_cover(struct purge__store *s, uintptr_t a, uintptr_t b, uint32_t *pieces)
{
	*pieces = s->novl; /* each may overlap [a, b): room for them in a sink */
	uint64_t bytes = store_cover_index(s, a, b, pieces);
	return s->novl ? bytes + store_cover_ovl(s, a, b, bytes) : bytes;
}

static void store_hold(struct purge__store *s, uint32_t id)
{
	if (store_held(s, id))
		return;
	s->link[id].info |= STORE_HELD;
	s->nheld++;
	s->held_bytes += s->rng[id].iov_len;
}

void purge__store_link(struct purge__store *s)
{
	store_sync(s);
}

void purge__store_hold_in(struct purge__store *s, uintptr_t a, uintptr_t b)
{
	struct purge__ipos pos;

	bool ok = purge__idx_find_ge(&s->idx, a, &pos);
	for (; ok && purge__idx_key(&s->idx, &pos) < b; ok = purge__idx_next(&s->idx, &pos)) {
		uint32_t id = purge__idx_val(&s->idx, &pos);
		if (store_end(s, id) <= b)
			store_hold(s, id);
	}
	for (uint32_t i = 0; i < s->novl; i++)
		if (store_start(s, s->ovl[i]) >= a && store_end(s, s->ovl[i]) <= b)
			store_hold(s, s->ovl[i]);
}

void purge__store_set_fresh(struct purge__store *s, uint32_t id)
{
	s->fresh = s->live ? id : NONE;
}

uint32_t purge__store_first_unheld(const struct purge__store *s, uint32_t id)
{
	if (!s->linked)
		return s->live ? id : NONE;
	while (id != NONE && (s->link[id].info & STORE_HELD))
		id = s->link[id].next;
	return id;
}

/* ---- a part given back --------------------------------------------------- */

/* The first piece in age order that is no older than stamp (aged; else
 * the head), NONE when all are; *past_fresh when the walk passed the
 * first piece new to the plans. */
static uint32_t store_first_not_older(const struct purge__store *s, uint64_t stamp,
                                      bool *past_fresh)
{
	uint32_t id = s->head;

	*past_fresh = false;
	for (; s->aged && id != NONE && s->stamp[id] < stamp; id = s->link[id].next)
		*past_fresh = *past_fresh || id == s->fresh;
	return id;
}

void purge__store_put_back(struct purge__store *s, uintptr_t start, uintptr_t end, uint64_t stamp)
{
	bool past_fresh;

	store_sync(s); /* linked, everything indexed: the new piece goes in now */
	if (s->live == 0)
		s->head = NONE; /* an empty list (a plain store's head is a slot) */
	if (s->live == 0 || stamp < s->epoch)
		s->epoch = stamp; /* the epoch is never later than a piece's enqueue */
	uint32_t before = store_first_not_older(s, stamp, &past_fresh);
	uint32_t id = store_alloc(s);
	s->link[id].info = STORE_TAIL;
	store_set(s, id, start, end);
	if (s->aged)
		s->stamp[id] = stamp;
	store_link_after(s, id, before == NONE ? s->tail : s->link[before].prev);
	store_place(s, id);
	if (!past_fresh) /* ahead of the first new piece: new to the plans too */
		s->fresh = id;
	s->lo = start < s->lo ? start : s->lo;
	s->hi = end > s->hi ? end : s->hi;
}

/* ---- take ---------------------------------------------------------------- */

/* How many of a take fit beside their sort scratch in s->scratch. */
static size_t store_half(const struct purge__store *s)
{
	return ((size_t)s->npieces + 1) / 2;
}

/* The oldest pieces the limits allow, counted from the head. */
static size_t store_count_oldest(const struct purge__store *s, size_t max, uint64_t max_stamp,
                                 uint64_t max_bytes)
{
	size_t k = 0;
	uint64_t bytes = 0;

	STORE_EACH(s, id, n)
	{
		if (k == max || bytes >= max_bytes || (s->aged && s->stamp[id] > max_stamp))
			break;
		bytes += s->rng[id].iov_len;
		k++;
	}
	return k;
}

/* The k oldest pieces of a linked store, in address order without a sort:
 * marked, read in order from the index (it holds all of them once synced;
 * those that overlap others follow), then taken off the list's head.  For
 * k over half the pool, so the walk over every piece is O(k). */
static size_t store_take_by_address(struct purge__store *s, size_t k, struct iovec *v)
{
	struct purge__ipos pos;
	size_t n = 0;
	uint32_t id = s->head;

	store_sync(s);
	for (size_t i = 0; i < k; i++, id = s->link[id].next)
		s->link[id].info |= STORE_TAKEN;
	for (bool ok = purge__idx_find_ge(&s->idx, 0, &pos); ok;
	     ok = purge__idx_next(&s->idx, &pos))
		if (s->link[id = purge__idx_val(&s->idx, &pos)].info & STORE_TAKEN)
			v[n++] = s->rng[id];
	for (uint32_t i = 0; i < s->novl; i++)
		if (s->link[s->ovl[i]].info & STORE_TAKEN)
			v[n++] = s->rng[s->ovl[i]];
	for (size_t i = 0; i < k; i++) {
		s->link[id = s->head].info &= ~STORE_TAKEN;
		store_detach(s, id);
	}
	return n;
}

void purge__store_take_oldest(struct purge__store *s, size_t max, uint64_t max_stamp,
                              uint64_t max_bytes, bool by_address, struct purge__take *t)
{
	struct iovec *v = s->scratch;
	size_t k = store_count_oldest(s, max, max_stamp, max_bytes), half = store_half(s);

	if (!s->linked) { /* plain: the slots themselves, and all the scratch */
		*t = (struct purge__take){s->rng + s->head, k, v, false, false};
		s->head += (uint32_t)k;
		s->live -= (uint32_t)k;
	} else if (by_address && k > half) {
		*t = (struct purge__take){v, store_take_by_address(s, k, v), NULL, true, false};
	} else {
		for (size_t i = 0; i < k; i++) {
			uint32_t id = s->head;
			v[i] = s->rng[id];
			store_detach(s, id);
		}
		*t = (struct purge__take){v, k, by_address ? v + half : NULL, false, false};
	}
	if (s->live == 0)
		store_reset(s);
}

void purge__store_take_all(struct purge__store *s, struct purge__take *t)
{
	struct iovec *v = s->scratch;
	size_t n = 0;

	if (!s->linked) {
		*t = (struct purge__take){s->rng + s->head, s->live, v, false, false};
	} else { /* gathered in age order; the slots are free for sorting then */
		STORE_EACH(s, id, k)
		v[n++] = s->rng[id];
		*t = (struct purge__take){v, n, s->rng, false, false};
	}
	store_reset(s);
}

void purge__store_take_ovl(struct purge__store *s, struct purge__take *t)
{
	struct iovec *v = s->scratch;
	size_t k = 0, half = store_half(s);

	while (s->novl && k < half) {
		uint32_t id = s->ovl[s->novl - 1];
		v[k++] = s->rng[id];
		store_detach(s, id);
	}
	*t = (struct purge__take){v, k, v + half, false, false};
	if (s->live == 0)
		store_reset(s);
}
