/* SPDX-License-Identifier: MIT */
/*
 * Settle a sorted list of pending ranges: cut it into process_madvise calls
 * of at most `batch` iovecs and `call_bytes` bytes, merging ranges that
 * touch into one iovec, resume after partial progress, and book every byte
 * of every range as purged or failed.  Talks to the kernel through q->be.
 *
 * A call whose ranges need no merging and fit the byte cap goes to the
 * kernel straight from the list (it is an array of iovecs): the library
 * adds a scan to the kernel's work and copies nothing.  A call that merges
 * is written to q->iov, with where each iovec starts in q->ioslot.
 *
 * A merged iovec that fails is never reported as a whole: its ranges go
 * again one iovec each ("solo"), so that one bad range (a hole, an mlocked
 * or sealed page, MADV_FREE on a shared mapping) never stops its
 * neighbours and only its own bytes are reported.  Re-advising the good
 * parts is harmless: DONTNEED, FREE, COLD and PAGEOUT are idempotent.
 * merged_ranges counts the joins of iovecs the kernel took whole.
 */
#include "compat.h"

#include <errno.h>
#include <stdbool.h>

#include "books.h"
#include "flight.h"
#include "flush.h"
#include "internal.h"
#include "trace.h"

struct flush_run {
	purge_queue *q;
	const struct iovec *sel;
	size_t n;
	size_t i, off;           /* cursor: the first byte not settled is sel[i] + off */
	const struct iovec *iov; /* the planned call: sel + i (direct) or q->iov */
	bool direct;
	size_t p0;       /* where the plan starts (the cursor moves on) */
	size_t pi, poff; /* where the plan ends */
	size_t joins;    /* joins of the planned call */
	size_t solo;     /* ranges below this index are submitted alone */
	int path;        /* PURGE_BACKEND_* in use */
	int refused;     /* forced vectored, refused: the rest fails with it */
	struct purge__flush_out out;
};

static uintptr_t flush_base(const struct iovec *v)
{
	return (uintptr_t)v->iov_base;
}

/* ---- system calls, timed and counted ------------------------------------ */

#ifdef PURGE_HAVE_SDT
static size_t flush_iov_bytes(const struct iovec *iov, size_t k)
{
	size_t n = 0;

	for (size_t i = 0; i < k; i++)
		n += iov[i].iov_len;
	return n;
}
#endif

static ssize_t flush_pmadv(struct flush_run *r, const struct iovec *iov, size_t k)
{
	const struct purge__backend *be = r->q->be;
	bool shared = purge__flight_shared(r->q);
	if (shared)
		purge__flight_drop(r->q);
	uint64_t t0 = purge__now(r->q, false);
	ssize_t ret = be->pmadv(be->ctx, iov, k, r->q->set.advice->value);
	uint64_t t1 = purge__now(r->q, false);
	if (shared)
		purge__flight_retake(r->q);

	purge__books_call(r->q, k, t1 - t0);
	r->out.calls++;
	PURGE_TRACE4(pmadv, r->q, k, flush_iov_bytes(iov, k), ret);
	return ret;
}

static int flush_madv(struct flush_run *r, const struct iovec *v)
{
	const struct purge__backend *be = r->q->be;
	bool shared = purge__flight_shared(r->q);
	if (shared)
		purge__flight_drop(r->q);
	uint64_t t0 = purge__now(r->q, false);
	int ret = be->madv(be->ctx, v->iov_base, v->iov_len, r->q->set.advice->value);
	uint64_t t1 = purge__now(r->q, false);
	if (shared)
		purge__flight_retake(r->q);

	purge__books_call(r->q, 0, t1 - t0);
	r->out.calls++;
	PURGE_TRACE4(madv, r->q, v->iov_base, v->iov_len, ret);
	return ret;
}

/* The errno of one range alone (docs/kernel-notes.md §9.6).  A forced
 * vectored queue asks process_madvise, so it never calls madvise. */
static int flush_attribute(struct flush_run *r, const struct iovec *v)
{
	if (r->q->set.mode != PURGE_MODE_VECTORED)
		return flush_madv(r, v);
	ssize_t ret = flush_pmadv(r, v, 1);
	return ret == (ssize_t)v->iov_len ? 0 : ret < 0 ? (int)ret : -EIO;
}

/* ---- the cursor ---------------------------------------------------------- */

/* Book the next len bytes from the cursor, range by range. */
static void flush_settle(struct flush_run *r, size_t len, int err)
{
	size_t bytes = 0, done = 0;

	r->out.bytes += len;
	while (len > 0) {
		const struct iovec *p = &r->sel[r->i];
		size_t part = p->iov_len - r->off < len ? p->iov_len - r->off : len;
		bool last = r->off + part == p->iov_len;
		if (err) {
			purge__books_failed(r->q, (char *)p->iov_base + r->off, part, err, last);
			r->out.reports++;
		}
		bytes += part;
		done += last;
		len -= part;
		r->off = last ? 0 : r->off + part;
		r->i += last;
	}
	if (!err)
		purge__books_purged(r->q, bytes, done);
}

static bool flush_can_join(const struct flush_run *r, size_t left)
{
	return !(r->q->set.flags & PURGE_NO_COALESCE) && left >= r->solo;
}

/* The next `batch` ranges from the cursor, as they are: true when none
 * needs a merge or a cut (byte cap) and they can go to the kernel
 * straight from the list. */
static bool flush_touches_next(const struct flush_run *r, size_t j)
{
	return j + 1 < r->n && flush_can_join(r, j) &&
	       flush_base(&r->sel[j + 1]) == flush_base(&r->sel[j]) + r->sel[j].iov_len;
}

static bool flush_plan_direct(struct flush_run *r, size_t batch, size_t *bytes)
{
	size_t j = r->i, total = 0, room = r->q->set.call_bytes;

	if (r->off)
		return false;
	for (; j < r->n && j - r->i < batch; j++) {
		/* a range a cancel emptied (shared queues) ends the call */
		if (r->sel[j].iov_len > room - total || r->sel[j].iov_len == 0)
			break;
		if (flush_touches_next(r, j)) /* also the one after the batch: it would join */
			return false;
		total += r->sel[j].iov_len;
	}
	if (j == r->i) /* one range larger than the cap: cut it */
		return false;
	r->iov = r->sel + r->i;
	r->direct = true;
	r->p0 = r->i;
	r->pi = j;
	r->poff = 0;
	r->joins = 0;
	*bytes = total;
	return true;
}

/* The iovec that starts at (*j, *o), at most room bytes: ranges that touch
 * join it.  Moves (*j, *o) past it and returns its length. */
static size_t flush_segment(struct flush_run *r, size_t *j, size_t *o, size_t room, uint32_t *joins)
{
	size_t len = 0;

	for (;;) {
		const struct iovec *p = &r->sel[*j];
		size_t part = p->iov_len - *o;
		if (part > room - len) {
			*o += room - len;
			return room;
		}
		len += part;
		*o = 0;
		if (++*j == r->n || len == room || !flush_can_join(r, *j - 1) ||
		    flush_base(&r->sel[*j]) != flush_base(p) + p->iov_len ||
		    r->sel[*j].iov_len == 0)
			return len;
		++*joins;
	}
}

/* A call that merges or cuts: iovecs in q->iov, where each starts (and
 * the joins it holds) in q->ioslot. */
static size_t flush_plan_merged(struct flush_run *r, size_t batch, size_t *bytes)
{
	purge_queue *q = r->q;
	size_t k = 0, j = r->i, o = r->off, room = q->set.call_bytes, total = 0;

	r->joins = 0;
	while (k < batch && j < r->n && total < room && r->sel[j].iov_len > o) {
		struct purge__slot *at = &q->ioslot[k];
		*at = (struct purge__slot){(uint32_t)j, 0, o};
		size_t len = flush_segment(r, &j, &o, room - total, &at->joins);
		q->iov[k].iov_base = (char *)r->sel[at->piece].iov_base + at->off;
		q->iov[k++].iov_len = len;
		r->joins += at->joins;
		total += len;
	}
	r->iov = q->iov;
	r->direct = false;
	r->p0 = r->i;
	r->pi = j;
	r->poff = o;
	*bytes = total;
	return k;
}

/* The next call from the cursor: returns its iovec count; *bytes their total. */
static size_t flush_plan(struct flush_run *r, size_t batch, size_t *bytes)
{
	if (flush_plan_direct(r, batch, bytes))
		return r->pi - r->i;
	return flush_plan_merged(r, batch, bytes);
}

/* The whole plan went through: book it in one step. */
static void flush_settle_plan(struct flush_run *r, size_t bytes)
{
	purge__books_purged(r->q, bytes, r->pi - r->i);
	purge__books_merged(r->q, r->joins);
	r->out.bytes += bytes;
	r->i = r->pi;
	r->off = r->poff;
}

/* Where iovec f of the plan starts. */
static struct purge__slot flush_slot(const struct flush_run *r, size_t f)
{
	return r->direct ? (struct purge__slot){(uint32_t)(r->p0 + f), 0, 0} : r->q->ioslot[f];
}

/* The joins of the plan's iovecs before iovec f. */
static size_t flush_joins_before(const struct flush_run *r, size_t f)
{
	size_t joins = 0;

	for (size_t t = 0; !r->direct && t < f; t++)
		joins += r->q->ioslot[t].joins;
	return joins;
}

/* ---- failures ------------------------------------------------------------ */

/* iovec f failed and the cursor is at its start.  A merged one whose
 * errno is not known is asked alone first, whole (a huge-page frame that
 * goes in parts is split); if that fails too, or err says why, its ranges
 * go again alone.  A range alone is booked with err (0: ask the kernel). */
static void flush_failed_iovec(struct flush_run *r, size_t f, int err)
{
	const struct purge__slot at = flush_slot(r, f);
	const struct iovec *v = &r->iov[f];
	size_t j = at.piece, left = v->iov_len + at.off;
	struct iovec one = *v; /* v may be the list itself: settling moves past it */

	if (left > r->sel[j].iov_len) {
		if (err == 0 && flush_attribute(r, &one) == 0) {
			purge__books_merged(r->q, at.joins);
			flush_settle(r, one.iov_len, 0);
			return;
		}
		while (left > r->sel[j].iov_len)
			left -= r->sel[j++].iov_len;
		r->solo = j + 1;
		return;
	}
	flush_settle(r, one.iov_len, err ? err : flush_attribute(r, &one));
}

/* process_madvise is refused for good (seccomp, old kernel): remember it
 * for the process; a forced vectored queue reports the rest, any other
 * goes on with the loop. */
static void flush_refuse(struct flush_run *r, int err)
{
	purge_queue *q = r->q;

	q->be->demote(q->be->ctx, q->set.advice->value);
	PURGE_TRACE3(demote, q, q->set.advice->value, err);
	if (q->set.mode == PURGE_MODE_VECTORED) {
		r->refused = err;
		return;
	}
	r->path = q->backend = PURGE_BACKEND_LOOP;
	purge__books_fallback(q);
}

/* The call's ranges, each piece asked alone. */
static void flush_each_alone(struct flush_run *r, size_t bytes)
{
	while (bytes > 0) {
		const struct iovec *p = &r->sel[r->i];
		size_t part = p->iov_len - r->off < bytes ? p->iov_len - r->off : bytes;
		struct iovec v = {(char *)p->iov_base + r->off, part};
		flush_settle(r, part, flush_attribute(r, &v));
		bytes -= part;
	}
}

/* -1 from process_madvise: errno is about the whole call or iov[0]
 * (docs/kernel-notes.md §9.7). */
static void flush_call_error(struct flush_run *r, size_t bytes, int err)
{
	if (err == -ENOSYS || err == -EBADF || err == -ESRCH) {
		flush_refuse(r, err);
	} else if (err == -EPERM && r->q->set.mode != PURGE_MODE_VECTORED) {
		/* sealed iov[0] (madvise fails alike) or a seccomp filter */
		struct iovec first = r->iov[0];
		int m = flush_madv(r, &first);
		if (m == -EPERM) {
			flush_failed_iovec(r, 0, -EPERM);
			return;
		}
		if (m == 0) { /* done: the loop goes on after it */
			purge__books_merged(r->q, flush_joins_before(r, 1));
			flush_settle(r, first.iov_len, 0);
		}
		flush_refuse(r, err);
	} else if (err == -EINVAL || err == -ENOMEM || err == -EPERM) {
		flush_failed_iovec(r, 0, 0);
	} else {
		/* EFAULT and the rest name no range */
		flush_each_alone(r, bytes);
	}
}

/* The kernel did the first ret bytes: whole iovecs, then one that failed
 * (its errno is lost); later ones were not touched. */
static void flush_short_count(struct flush_run *r, size_t k, size_t ret)
{
	size_t done = 0, f = 0;

	purge__books_short(r->q);
	while (f < k && done + r->iov[f].iov_len <= ret)
		done += r->iov[f++].iov_len;
	purge__books_merged(r->q, flush_joins_before(r, f));
	flush_settle(r, done, 0);
	flush_failed_iovec(r, f, 0);
}

/* ---- a shared queue's round (flight.h) ------------------------------------ */

/* Steps over what cancels of other threads took from the round (and takes
 * in what they split off it): a range
 * emptied (booked by the cancel), or one whose unsent tail it took (its
 * last bytes were settled already).  False when the round is done. */
static bool flush_skip(struct flush_run *r)
{
	if (purge__flight_shared(r->q)) /* the right parts cancels split go last */
		r->n = r->q->fl.n;
	while (r->i < r->n) {
		size_t len = r->sel[r->i].iov_len;
		if (r->off == 0 && len != 0)
			return true;
		if (r->off && r->off < len)
			return true;
		if (r->off)
			purge__books_purged(r->q, 0, 1);
		r->i++;
		r->off = 0;
	}
	return false;
}

/* The plan goes to the kernel: other threads' cancels wait for what it
 * covers, and may take what follows it. */
static void flush_zone(struct flush_run *r)
{
	if (purge__flight_shared(r->q))
		purge__flight_zone(r->q, r->i, r->off, r->pi, r->poff);
}

/* The plan is booked: cancels may take from the cursor on. */
static void flush_complete(struct flush_run *r)
{
	if (purge__flight_shared(r->q))
		purge__flight_complete(r->q, r->i, r->off, r->solo);
}

/* ---- the paths ----------------------------------------------------------- */

static void flush_vectored(struct flush_run *r)
{
	while (flush_skip(r) && r->path == PURGE_BACKEND_VECTORED && !r->refused) {
		size_t bytes, k = flush_plan(r, r->q->set.batch, &bytes);
		flush_zone(r);
		ssize_t ret = flush_pmadv(r, r->iov, k);
		if (ret >= (ssize_t)bytes)
			flush_settle_plan(r, bytes);
		else if (ret >= 0)
			flush_short_count(r, k, (size_t)ret);
		else
			flush_call_error(r, bytes, (int)ret);
		flush_complete(r);
	}
}

static void flush_looped(struct flush_run *r)
{
	while (flush_skip(r)) {
		size_t bytes;
		flush_plan(r, 1, &bytes);
		flush_zone(r);
		int err = flush_madv(r, &r->iov[0]);
		if (!err)
			flush_settle_plan(r, bytes);
		else
			flush_failed_iovec(r, 0, err);
		flush_complete(r);
	}
}

/* Forced vectored and refused: every range left fails, in call_bytes pieces. */
static void flush_report_rest(struct flush_run *r)
{
	r->solo = r->n;
	while (flush_skip(r)) {
		size_t bytes;
		flush_plan(r, 1, &bytes);
		flush_settle(r, bytes, r->refused);
	}
}

/* System calls and the caller's callback may change errno: the library's
 * callers see it unchanged. */
struct purge__flush_out purge__flush_run(purge_queue *q, const struct iovec *sel, size_t n)
{
	struct flush_run r = {.q = q, .sel = sel, .n = n};
	int saved = errno;

	r.path = q->backend = purge__path(q, true);
	while (flush_skip(&r)) {
		if (r.refused)
			flush_report_rest(&r);
		else if (r.path == PURGE_BACKEND_VECTORED)
			flush_vectored(&r);
		else
			flush_looped(&r);
	}
	errno = saved;
	return r.out;
}
