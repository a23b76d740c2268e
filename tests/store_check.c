/* SPDX-License-Identifier: MIT */
/* The store's invariants (store_check.h), read straight from its arrays. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_check.h"

#define NONE PURGE_STORE_NONE

/* info bits of store.c: where a linked piece is */
enum { W_TAIL, W_INDEX, W_OVL };

static bool indexed_as(const struct purge__store *s, uint32_t id)
{
	struct purge__ipos pos;
	uintptr_t key = (uintptr_t)s->rng[id].iov_base;

	return purge__idx_find_ge(&s->idx, key, &pos) && purge__idx_key(&s->idx, &pos) == key &&
	       purge__idx_val(&s->idx, &pos) == id;
}

static const char *check_piece(const struct purge__store *s, uint32_t id, bool *tail_seen,
                               uint32_t *counts)
{
	uint32_t w = s->link[id].info & 3u;

	if (s->rng[id].iov_len == 0)
		return "a pending piece is empty";
	counts[w]++;
	if (w == W_TAIL) {
		*tail_seen = true;
	} else if (*tail_seen) {
		return "an indexed piece after an unindexed one: not a suffix";
	}
	if (w == W_INDEX && !indexed_as(s, id))
		return "a piece marked indexed is not in the index under its start";
	uint32_t pos = (s->link[id].info & ~(7u << 29)) >> 2;
	if (w == W_OVL && (pos >= s->novl || s->ovl[pos] != id))
		return "a piece marked overlapping is not at its place in ovl[]";
	return NULL;
}

/* Held pieces (frames.c) are counted right, and every piece a plan saw
 * (before fresh) is held: a plan settles or holds all it sees. */
static const char *check_held(const struct purge__store *s, uint32_t id, bool *fresh_seen,
                              uint32_t *nheld, uint64_t *held_bytes)
{
	bool held = s->link[id].info & (1u << 30);

	*fresh_seen |= id == s->fresh;
	if (!held && !*fresh_seen)
		return "a piece a plan saw (before fresh) is neither held nor settled";
	*nheld += held;
	*held_bytes += held ? s->rng[id].iov_len : 0;
	return NULL;
}

static const char *check_linked(const struct purge__store *s, uint64_t *bytes)
{
	uint32_t n = 0, prev = NONE, counts[3] = {0}, nfree = 0, nheld = 0;
	uint64_t held_bytes = 0;
	bool tail_seen = false, fresh_seen = false;
	const char *why;
	uint8_t *seen = calloc(s->npieces, 1);

	for (uint32_t id = s->head; id != NONE; prev = id, id = s->link[id].next) {
		if (id >= s->npieces || seen[id] || ++n > s->live)
			return free(seen), "the age list is longer than live, or loops";
		seen[id] = 1;
		if (s->link[id].prev != prev)
			return free(seen), "a prev link is wrong";
		if ((why = check_piece(s, id, &tail_seen, counts)) != NULL ||
		    (why = check_held(s, id, &fresh_seen, &nheld, &held_bytes)) != NULL)
			return free(seen), why;
		*bytes += s->rng[id].iov_len;
	}
	for (uint32_t id = s->free; id != NONE; id = s->link[id].next) {
		if (id >= s->npieces || seen[id] || ++nfree > s->npieces)
			return free(seen), "the free list holds a live piece, or loops";
		seen[id] = 1;
	}
	free(seen);
	if (n != s->live || prev != s->tail)
		return "the age list is shorter than live, or tail is wrong";
	if (nheld != s->nheld || held_bytes != s->held_bytes)
		return "the held count or bytes differ from the held pieces";
	if (s->fresh != NONE && !fresh_seen)
		return "fresh names no pending piece";
	if (nfree + s->nfresh + s->live != s->npieces)
		return "free pieces, fresh slots and live pieces do not make the pool";
	if (counts[W_TAIL] != s->nunsynced || counts[W_INDEX] != s->idx.count ||
	    counts[W_OVL] != s->novl)
		return "where the pieces are does not match nunsynced, the index count or novl";
	return NULL;
}

const char *store_check(const purge_queue *q)
{
	const struct purge__store *s = &q->s;
	uint64_t bytes = 0;

	if (s->live > s->npieces)
		return "more live pieces than the pool";
	if (s->linked) {
		const char *why = check_linked(s, &bytes);
		if (why)
			return why;
	} else {
		if (s->novl || s->idx.count || s->nunsynced)
			return "a plain store with an index or an overlap list";
		for (uint32_t id = s->head; id < s->bump; id++)
			bytes += s->rng[id].iov_len;
		if (s->head + s->live != s->bump || s->bump > s->npieces)
			return "a plain store's pieces are not the slots [head, head + live)";
	}
	if (bytes != q->st.pending_bytes || s->live != q->st.pending_ranges)
		return "the store's pieces and the books' pending ranges or bytes differ";
	return NULL;
}
