/* SPDX-License-Identifier: MIT */
/*
 * The huge-page frame plan (PURGE_HUGE): what an automatic flush, a
 * PURGE_INCREMENTAL round, purge_flush_to or purge_flush_due settles, so
 * that no purge splits a huge page for nothing.  A frame is the aligned
 * span that one huge page (a PMD) maps.  The part of a pending range that
 * lies in
 *  - a frame that is wholly pending is settled with the whole frame, and
 *    whole frames go to the kernel first;
 *  - a frame that a huge page backs (or may: the kernel cannot always
 *    tell) is held: left pending until its frame is whole, until it is
 *    max_delay_ns old, or until purge_flush();
 *  - any other frame is settled.
 * A plan looks at the pieces no plan has seen (from `fresh` on) and at
 * held pieces past their hold (a prefix of the age list), oldest first:
 * its cost follows what is new, not what is held.
 *
 * It works on a candidate's range as it was when the round took it, and
 * on every pending byte there, whatever piece holds it: pieces enqueued
 * over pending bytes (the overlap list) overlap others, and a removal may
 * split a candidate.  So a frame counts as whole when the union of what
 * is pending covers it, a take removes every piece's bytes in its range,
 * and a hold holds every piece that lies inside the range.
 *
 * A round works in the store's scratch (npieces + 1 iovecs, S >= 6): its
 * K = max(S/8, 1) candidates, (start, end | old) in age order, first; the
 * edge frames they touch (2K at most), sorted with their decisions, after
 * them, with as much again to sort them; the selection in the rest, at
 * most 5K (S - 5K but for small pools): whole frames from the front, the
 * rest from the back, each run sorted at the end in the 5K before it,
 * ranges enqueued twice last.
 */
#include "compat.h"

#include <string.h>

#include "books.h"
#include "frames.h"
#include "internal.h"
#include "sort.h"

enum { FRAME_WHOLE = 1, FRAME_HUGE = 2, FRAME_FREE = 3, FRAME_KIND = 3, FRAME_COUNTED = 4 };

/* The scans of one flush round, through one handle opened at the first;
 * err: the kernel could not tell (the open or a scan failed), so it is
 * not asked again this round. */
struct frames_scan {
	purge_queue *q;
	int h, err;
	bool opened;
};

struct frames_round {
	purge_queue *q;
	struct purge__store *s;
	uintptr_t fsize;
	struct purge__kv *cand, *fr; /* cand: start, end | (1: past its hold) */
	size_t ncand, nfr;
	struct iovec *sel;                /* [0, cap): whole from the front, rest from the back */
	size_t cap, nwhole, nrest, ncuts; /* ncuts: room kept for frames_order_whole */
	uint64_t old_until;               /* stamps <= this are past their hold (0: none) */
	uint64_t max_stamp;               /* new pieces stamped later wait for another plan */
	uint64_t frames_whole, frames_split;
	struct frames_scan sc;
};

static uintptr_t frames_of(const struct frames_round *r, uintptr_t a)
{
	return a & ~(r->fsize - 1);
}

static bool frames_old(const struct frames_round *r, uint32_t id)
{
	return r->old_until && purge__store_aged(r->s) &&
	       purge__store_stamp_of(r->s, id) <= r->old_until;
}

/* ---- candidates: held pieces past their hold, then what is new --------- */

/* Piece id as a candidate: its range now, and whether it is past its hold
 * (ends are page multiples: bit 0 is free). */
static bool frames_add(struct frames_round *r, uint32_t id, size_t max)
{
	if (r->ncand == max)
		return false;
	r->cand[r->ncand++] = (struct purge__kv){purge__store_start(r->s, id),
	                                         purge__store_end(r->s, id) | frames_old(r, id)};
	return true;
}

static uintptr_t frames_cand_end(const struct purge__kv *c)
{
	return c->val & ~(uintptr_t)1;
}

/* Up to max candidates (and about max_bytes of them) in age order; the
 * new fresh is the first new piece not taken. */
static uint32_t frames_collect(struct frames_round *r, size_t max, uint64_t max_bytes)
{
	struct purge__store *s = r->s;
	uint64_t bytes = 0;
	uint32_t id = purge__store_first(s);

	for (; id != purge__store_fresh(s) && id != PURGE_STORE_NONE && frames_old(r, id) &&
	       bytes < max_bytes;
	     id = purge__store_next(s, id))
		if (frames_add(r, id, max))
			bytes += purge__store_len(s, id);
	for (id = purge__store_fresh(s); id != PURGE_STORE_NONE && bytes < max_bytes;
	     id = purge__store_next(s, id)) {
		if ((purge__store_aged(s) && purge__store_stamp_of(s, id) > r->max_stamp) ||
		    !frames_add(r, id, max))
			break;
		bytes += purge__store_len(s, id);
	}
	return id;
}

/* ---- decisions per edge frame ------------------------------------------- */

/* The frames a candidate covers in part: at most its first and its last. */
static void frames_edges(struct frames_round *r)
{
	for (size_t i = 0; i < r->ncand; i++) {
		uintptr_t a = r->cand[i].key, b = frames_cand_end(&r->cand[i]);
		uintptr_t f0 = frames_of(r, a), f1 = frames_of(r, b - 1);
		if (a != f0 || b < f0 + r->fsize)
			r->fr[r->nfr++] = (struct purge__kv){f0, 0};
		if (f1 != f0 && b != f1 + r->fsize)
			r->fr[r->nfr++] = (struct purge__kv){f1, 0};
	}
	purge__sort_kv(r->fr, r->fr + r->nfr, r->nfr);
	size_t m = 0;
	for (size_t i = 0; i < r->nfr; i++)
		if (m == 0 || r->fr[m - 1].key != r->fr[i].key)
			r->fr[m++] = r->fr[i];
	r->nfr = m;
}

/* ---- which frames huge pages back ----------------------------------------- */

static void frames_scan_end(struct frames_scan *sc)
{
	if (sc->opened && sc->h >= 0)
		sc->q->be->scan_close(sc->q->be->ctx, sc->h);
	sc->opened = false;
}

static bool frames_in_spans(const struct iovec *sp, ssize_t n, uintptr_t f, uintptr_t fsize)
{
	for (ssize_t k = 0; k < n; k++)
		if ((uintptr_t)sp[k].iov_base <= f &&
		    f + fsize <= (uintptr_t)sp[k].iov_base + sp[k].iov_len)
			return true;
	return false;
}

/* The undecided frames (val 0) of fr[i..j), sorted: FRAME_HUGE where a huge
 * page backs the frame or the kernel cannot tell, else FRAME_FREE.  One
 * scan from fr[i] to the end of fr[j - 1], and more where its answer
 * stops short (more than 32 spans). */
static void frames_scan_run(struct frames_scan *sc, struct purge__kv *fr, size_t i, size_t j)
{
	const struct purge__backend *be = sc->q->be;
	uintptr_t fsize = sc->q->frame, hi = fr[j - 1].key + fsize;
	struct iovec sp[32];

	if (!sc->opened) {
		sc->h = be->scan_open(be->ctx);
		sc->err = sc->h < 0 ? sc->h : 0;
		sc->opened = true;
	}
	while (i < j) {
		uintptr_t done = hi;
		ssize_t n = sc->err;
		if (n == 0 &&
		    (n = be->huge_spans(be->ctx, sc->h, fr[i].key, hi, sp, 32, &done)) < 0)
			sc->err = (int)n;
		size_t from = i;
		for (; i < j && (n < 0 || fr[i].key + fsize <= done); i++)
			if (fr[i].val == 0)
				fr[i].val = n < 0 || frames_in_spans(sp, n, fr[i].key, fsize)
				                ? FRAME_HUGE
				                : FRAME_FREE;
		if (i == from) /* no progress: the rest may be huge */
			for (; i < j; i++)
				fr[i].val = fr[i].val ? fr[i].val : FRAME_HUGE;
	}
}

/* Decides the undecided frames of the sorted fr[0..n), asking only about
 * them: one scan for each run of them at most one frame apart (the kernel
 * walks a frame between at about the cost of a call). */
static void frames_lookup(struct frames_scan *sc, struct purge__kv *fr, size_t n)
{
	uintptr_t fsize = sc->q->frame;

	for (size_t i = 0; i < n;) {
		if (fr[i].val) {
			i++;
			continue;
		}
		size_t last = i;
		for (size_t j = i + 1; j < n && fr[j].key - fr[last].key <= 2 * fsize; j++)
			last = fr[j].val ? last : j;
		frames_scan_run(sc, fr, i, last + 1);
		i = last + 1;
	}
}

static void frames_decide(struct frames_round *r)
{
	uint32_t pieces;

	for (size_t i = 0; i < r->nfr; i++) {
		uintptr_t f = r->fr[i].key;
		if (purge__store_cover(r->s, f, f + r->fsize, &pieces) == r->fsize)
			r->fr[i].val = FRAME_WHOLE;
	}
	frames_lookup(&r->sc, r->fr, r->nfr);
}

/* The edge frame f's entry (sorted, present). */
static struct purge__kv *frames_entry(const struct frames_round *r, uintptr_t f)
{
	size_t lo = 0, hi = r->nfr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->fr[mid].key < f)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &r->fr[lo];
}

static uintptr_t frames_decision(const struct frames_round *r, uintptr_t f)
{
	return frames_entry(r, f)->val & FRAME_KIND;
}

/* ---- taking parts out --------------------------------------------------- */

/* Every pending byte of [a, b) out of the store into the whole run or the
 * rest, *bytes of them (each counted once); false when the selection or
 * the pool's room for splits is short (nothing changed). */
static bool frames_take(struct frames_round *r, uintptr_t a, uintptr_t b, bool whole,
                        uint64_t *bytes)
{
	uint32_t pieces;

	if ((*bytes = purge__store_cover(r->s, a, b, &pieces)) == 0)
		return true;
	/* a whole run keeps room for frames_order_whole's cuts: two for each
	 * overlapping piece (it cuts one, or the indexed one that follows it) */
	uint32_t cuts = whole ? 2 * purge__store_overlapping(r->s) : 0;
	if (r->nwhole + r->nrest + r->ncuts + pieces + cuts > r->cap)
		return false;
	struct iovec *at = whole ? r->sel + r->nwhole : r->sel + r->cap - r->nrest - pieces;
	struct purge__cut cut = {.sink = at, .cap = pieces};
	if (purge__store_remove(r->s, a, b, &cut) != 0)
		return false;
	if (whole) {
		r->nwhole += cut.nsink;
		r->ncuts += cuts;
	} else { /* from the back: close the gap the count left */
		memmove(r->sel + r->cap - r->nrest - cut.nsink, at, cut.nsink * sizeof(*at));
		r->nrest += cut.nsink;
	}
	purge__books_parts(r->q, cut.nsink, cut.gone, cut.split);
	return true;
}

/* The part [lo, hi) of a candidate in frame f, decided d. */
static bool frames_part(struct frames_round *r, uintptr_t f, uintptr_t lo, uintptr_t hi,
                        uintptr_t d, bool old)
{
	uint64_t bytes;

	if (d == FRAME_HUGE && !old)
		return true; /* held */
	bool whole = d == FRAME_WHOLE;
	if (!frames_take(r, whole ? f : lo, whole ? f + r->fsize : hi, whole, &bytes))
		return false;
	struct purge__kv *e = frames_entry(r, f);
	if (bytes && !(e->val & FRAME_COUNTED)) { /* a frame counts once, in however many parts */
		r->frames_whole += whole;
		r->frames_split += d == FRAME_HUGE;
		e->val |= FRAME_COUNTED;
	}
	return true;
}

/* The parts of one candidate [a, b), in address order: its first and last
 * frame as decided, the frames it covers alone between them as one take;
 * false when it must wait for the next round. */
static bool frames_piece(struct frames_round *r, uintptr_t a, uintptr_t b, bool old)
{
	uintptr_t f0 = frames_of(r, a), f1 = frames_of(r, b - 1), in0 = f0, in1 = f1 + r->fsize;
	uint64_t bytes;

	if (a != f0 || b < f0 + r->fsize) { /* first frame, in part */
		if (!frames_part(r, f0, a, f0 + r->fsize < b ? f0 + r->fsize : b,
		                 frames_decision(r, f0), old))
			return false;
		in0 = f0 + r->fsize;
	}
	if (f1 != f0 && b != f1 + r->fsize)
		in1 = f1; /* the last frame, in part, goes after the run */
	if (in1 > in0) {  /* frames between are whole, or gone whole with another's */
		if (!frames_take(r, in0, in1, true, &bytes))
			return false;
		r->frames_whole += bytes / r->fsize;
	}
	if (in1 == f1 && f1 != f0)
		return frames_part(r, f1, f1, b, frames_decision(r, f1), old);
	return true;
}

/* The candidates in age order; what is left of each waits for its frame.
 * When one must wait for the next round, the plans see again every piece
 * from the first one not held on. */
static void frames_settle(struct frames_round *r)
{
	struct purge__store *s = r->s;

	for (size_t i = 0; i < r->ncand; i++) {
		uintptr_t a = r->cand[i].key, b = frames_cand_end(&r->cand[i]);
		if (!frames_piece(r, a, b, r->cand[i].val & 1)) {
			purge__store_set_fresh(s,
			                       purge__store_first_unheld(s, purge__store_first(s)));
			return;
		}
		purge__store_hold_in(s, a, b);
	}
}

/* The whole run in address order, each frame one range for the kernel: a
 * range that overlaps those before it keeps its bytes beyond them in
 * order, where they merge, and its bytes under them go last (purged
 * again, harmless); each part is booked as a range done.  The run grows
 * by one for each range so cut: a cut range overlaps the one that set the
 * end before it, and one of the two came from the overlap list (indexed
 * pieces are disjoint), which is charged; each is charged at most twice,
 * once as either (frames_take kept that room after it; tmp: n iovecs of
 * scratch).  Returns its length. */
static size_t frames_order_whole(purge_queue *q, struct iovec *v, struct iovec *tmp, size_t n)
{
	size_t k = 0, r = 0;
	uintptr_t end = 0;

	purge__sort_iov(v, tmp, n);
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)v[i].iov_base, b = a + v[i].iov_len;
		if (k && a < end) {
			tmp[r++] = (struct iovec){(void *)a, (b < end ? b : end) - a};
			if (b <= end)
				continue;
			purge__books_parts(q, 1, 0, 0); /* one range, two parts */
			a = end;
		}
		v[k++] = (struct iovec){(void *)a, b - a};
		end = b;
	}
	memcpy(v + k, tmp, r * sizeof(*v));
	return k + r;
}

/* ---- the round ---------------------------------------------------------- */

void purge__frames_take(purge_queue *q, const struct purge__frames_plan *p, struct purge__take *t)
{
	struct purge__store *s = &q->s;
	struct iovec *v = purge__store_scratch(s);
	size_t S = purge__store_scratch_len(s), K = S / 8 ? S / 8 : 1;
	size_t max = p->max_pieces < K ? p->max_pieces : K;
	struct frames_round r = {.q = q,
	                         .s = s,
	                         .fsize = q->frame,
	                         .cand = (struct purge__kv *)v,
	                         .fr = (struct purge__kv *)v + K,
	                         .sel = v + 5 * K,
	                         /* at most the 5K before it, where each run is sorted */
	                         .cap = S - 5 * K < 5 * K ? S - 5 * K : 5 * K,
	                         .old_until = p->old_until,
	                         .max_stamp = p->max_stamp,
	                         .sc = {.q = q}};

	purge__store_link(s);
	/* the store keeps fresh valid while the round removes pieces */
	purge__store_set_fresh(s, frames_collect(&r, max ? max : 1, p->max_bytes));
	frames_edges(&r);
	frames_decide(&r);
	frames_scan_end(&r.sc);
	frames_settle(&r);
	/* whole frames first, then the rest, each in address order */
	r.nwhole = frames_order_whole(q, r.sel, v, r.nwhole);
	memmove(r.sel + r.nwhole, r.sel + r.cap - r.nrest, r.nrest * sizeof(*v));
	purge__sort_iov(r.sel + r.nwhole, v, r.nrest);
	purge__sort_overlaps_last(r.sel + r.nwhole, v, r.nrest);
	*t = (struct purge__take){r.sel, r.nwhole + r.nrest, NULL, true, true};
	purge__books_frames(q, r.frames_whole, r.frames_split);
}

/* ---- frames a flush that holds nothing purges --------------------------- */

#define FRAMES_PARTS 64

struct frames_tally {
	purge_queue *q;
	struct frames_scan sc;
	struct purge__kv part[FRAMES_PARTS]; /* frames purged in part, not looked up yet */
	size_t npart;
	uint64_t whole, split;
};

/* Of the frames purged in part, those huge pages back are split (where
 * the kernel cannot tell, every one may be). */
static void frames_tally_parts(struct frames_tally *t)
{
	frames_lookup(&t->sc, t->part, t->npart);
	for (size_t i = 0; i < t->npart; i++)
		t->split += t->part[i].val == FRAME_HUGE;
	t->npart = 0;
}

static void frames_tally_one(struct frames_tally *t, uintptr_t frame, uint64_t cover)
{
	if (cover >= t->q->frame) {
		t->whole++;
		return;
	}
	if (t->npart == FRAMES_PARTS)
		frames_tally_parts(t);
	t->part[t->npart++] = (struct purge__kv){frame, 0};
}

/* The ordered ranges v[0..n) (none overlaps the one before), which the
 * flush merges where they touch: each frame they cover whole, or in part. */
static void frames_tally_ordered(struct frames_tally *t, const struct iovec *v, size_t n)
{
	uintptr_t F = t->q->frame, cur = 0;
	uint64_t cover = 0;

	for (size_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)v[i].iov_base, b = a + v[i].iov_len;
		if (a >= cur && b <= cur + F) { /* the frame of the piece before */
			cover += b - a;
			continue;
		}
		for (uintptr_t f = a & ~(F - 1); f < b; f += F) {
			if (f != cur && cover)
				frames_tally_one(t, cur, cover);
			if (f != cur)
				cover = 0;
			cur = f;
			cover += (b < f + F ? b : f + F) - (a > f ? a : f);
		}
	}
	if (cover)
		frames_tally_one(t, cur, cover);
	frames_tally_parts(t);
}

/* Does one of the ordered v[0..n) meet [a, b)?  Their ends ascend too. */
static bool frames_touched(const struct iovec *v, size_t n, uintptr_t a, uintptr_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)v[mid].iov_base + v[mid].iov_len <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && (uintptr_t)v[lo].iov_base < b;
}

/* The ranges after them (enqueued over pending bytes) go to the kernel one
 * by one, after the ordered ones: a frame none of those touched counts
 * once, by the first of them that reaches it. */
static void frames_tally_rest(struct frames_tally *t, const struct iovec *v, size_t k, size_t n)
{
	uintptr_t F = t->q->frame, next = 0; /* frames below next are counted */

	for (size_t i = k; i < n; i++) {
		uintptr_t a = (uintptr_t)v[i].iov_base, b = a + v[i].iov_len;
		for (uintptr_t f = a & ~(F - 1); f < b; f += F) {
			if (f < next || frames_touched(v, k, f, f + F))
				continue;
			frames_tally_one(t, f, (b < f + F ? b : f + F) - (a > f ? a : f));
			next = f + F;
		}
	}
	frames_tally_parts(t);
}

void purge__frames_tally(purge_queue *q, const struct iovec *v, size_t ordered, size_t n)
{
	struct frames_tally t = {.q = q, .sc = {.q = q}};
	size_t k = ordered < n ? ordered : n;

	if (ordered == SIZE_MAX) /* a take by address: its overlapping pieces come last */
		for (uintptr_t end = k = 0; k < n && (uintptr_t)v[k].iov_base >= end; k++)
			end = (uintptr_t)v[k].iov_base + v[k].iov_len;
	frames_tally_ordered(&t, v, k);
	frames_tally_rest(&t, v, k, n);
	frames_scan_end(&t.sc);
	purge__books_frames(q, t.whole, t.split);
}
