/* SPDX-License-Identifier: MIT */
/*
 * Settle a sorted list of pending ranges: cut it into process_madvise calls
 * of at most `batch` iovecs and `call_bytes` bytes, merging ranges that
 * touch into one iovec, resume after partial progress, and book every byte
 * of every range as purged or failed.  Talks to the kernel through q->be.
 *
 * A merged iovec that fails is never reported as a whole: its ranges go
 * again one iovec each ("solo"), so that one bad range (a hole, an mlocked
 * or sealed page, MADV_FREE on a shared mapping) never stops its
 * neighbours and only its own bytes are reported.  Re-advising the good
 * parts is harmless: DONTNEED, FREE, COLD and PAGEOUT are idempotent.
 */
#include "compat.h"

#include <errno.h>
#include <stdbool.h>

#include "internal.h"
#include "trace.h"

struct run {
	purge_queue *q;
	const struct purge__kv *sel; /* key: start, val: length */
	size_t n;
	size_t i, off;   /* cursor: the first byte not settled is sel[i].key + off */
	size_t pi, poff; /* where the last plan ends */
	size_t solo;     /* ranges below this index are submitted alone */
	size_t merged;   /* joins made by the last plan */
	int path;        /* PURGE_BACKEND_* in use */
	int refused;     /* forced vectored, refused: the rest fails with it */
};

/* ---- system calls, timed and counted ------------------------------------ */

#ifdef PURGE_HAVE_SDT
static size_t iov_bytes(const struct iovec *iov, size_t k)
{
	size_t n = 0;

	for (size_t i = 0; i < k; i++)
		n += iov[i].iov_len;
	return n;
}
#endif

static ssize_t call_pmadv(struct run *r, const struct iovec *iov, size_t k)
{
	const struct purge__backend *be = r->q->be;
	uint64_t t0 = purge__now(r->q, false);
	ssize_t ret = be->pmadv(be->ctx, iov, k, r->q->set.advice);

	purge__books_call(r->q, k, purge__now(r->q, false) - t0);
	PURGE_TRACE4(pmadv, r->q, k, iov_bytes(iov, k), ret);
	return ret;
}

static int call_madv(struct run *r, const struct iovec *v)
{
	const struct purge__backend *be = r->q->be;
	uint64_t t0 = purge__now(r->q, false);
	int ret = be->madv(be->ctx, v->iov_base, v->iov_len, r->q->set.advice);

	purge__books_call(r->q, 0, purge__now(r->q, false) - t0);
	PURGE_TRACE4(madv, r->q, v->iov_base, v->iov_len, ret);
	return ret;
}

/* The errno of one range alone (docs/kernel-notes.md §9.6).  A forced
 * vectored queue asks process_madvise, so it never calls madvise. */
static int attribute(struct run *r, const struct iovec *v)
{
	if (r->q->set.mode != PURGE_MODE_VECTORED)
		return call_madv(r, v);
	ssize_t ret = call_pmadv(r, v, 1);
	return ret == (ssize_t)v->iov_len ? 0 : ret < 0 ? (int)ret : -EIO;
}

/* ---- the cursor ---------------------------------------------------------- */

/* Book the next len bytes from the cursor, range by range. */
static void settle(struct run *r, size_t len, int err)
{
	size_t bytes = 0, done = 0;

	while (len > 0) {
		const struct purge__kv *p = &r->sel[r->i];
		size_t part = p->val - r->off < len ? p->val - r->off : len;
		bool last = r->off + part == p->val;
		if (err)
			purge__books_failed(r->q, (void *)(p->key + r->off), part, err, last);
		bytes += part;
		done += last;
		len -= part;
		r->off = last ? 0 : r->off + part;
		r->i += last;
	}
	if (!err)
		purge__books_purged(r->q, bytes, done);
}

static bool can_join(const struct run *r, size_t left)
{
	return !(r->q->set.flags & PURGE_NO_COALESCE) && left >= r->solo;
}

/* The iovec that starts at (*j, *o), at most room bytes: ranges that touch
 * join it.  Moves (*j, *o) past it and returns its length. */
static size_t segment(struct run *r, size_t *j, size_t *o, size_t room)
{
	size_t len = 0;

	for (;;) {
		const struct purge__kv *p = &r->sel[*j];
		size_t part = p->val - *o;
		if (part > room - len) {
			*o += room - len;
			return room;
		}
		len += part;
		*o = 0;
		if (++*j == r->n || len == room || !can_join(r, *j - 1) ||
		    r->sel[*j].key != p->key + p->val)
			return len;
		r->merged++;
	}
}

/* The next call from the cursor: iovecs in q->iov, where each starts in
 * q->ioslot.  Returns the iovec count; *bytes their total. */
static size_t plan(struct run *r, size_t batch, size_t *bytes)
{
	purge_queue *q = r->q;
	size_t k = 0, j = r->i, o = r->off, room = q->set.call_bytes, total = 0;

	r->merged = 0;
	while (k < batch && j < r->n && total < room) {
		q->ioslot[k] = (struct purge__slot){j, o};
		size_t len = segment(r, &j, &o, room - total);
		q->iov[k].iov_base = (void *)(r->sel[q->ioslot[k].piece].key + q->ioslot[k].off);
		q->iov[k++].iov_len = len;
		total += len;
	}
	r->pi = j;
	r->poff = o;
	*bytes = total;
	return k;
}

/* The whole plan went through: book it in one step. */
static void settle_plan(struct run *r, size_t bytes)
{
	purge__books_purged(r->q, bytes, r->pi - r->i);
	purge__books_merged(r->q, r->merged);
	r->i = r->pi;
	r->off = r->poff;
}

/* ---- failures ------------------------------------------------------------ */

/* iovec f failed and the cursor is at its start.  Merged ranges go again
 * alone; a range alone is booked with err (0: ask the kernel). */
static void failed_iovec(struct run *r, size_t f, int err)
{
	const struct purge__slot *at = &r->q->ioslot[f];
	const struct iovec *v = &r->q->iov[f];
	size_t j = at->piece, left = v->iov_len + at->off;

	if (left > r->sel[j].val) {
		while (left > r->sel[j].val)
			left -= r->sel[j++].val;
		r->solo = j + 1;
		return;
	}
	settle(r, v->iov_len, err ? err : attribute(r, v));
}

/* process_madvise is refused for good (seccomp, old kernel): remember it
 * for the process; a forced vectored queue reports the rest, any other
 * goes on with the loop. */
static void refuse(struct run *r, int err)
{
	purge_queue *q = r->q;

	q->be->demote(q->be->ctx, q->set.advice);
	PURGE_TRACE3(demote, q, q->set.advice, err);
	if (q->set.mode == PURGE_MODE_VECTORED) {
		r->refused = err;
		return;
	}
	r->path = q->backend = PURGE_BACKEND_LOOP;
	purge__books_fallback(q);
}

/* The call's ranges, each piece asked alone. */
static void each_alone(struct run *r, size_t bytes)
{
	while (bytes > 0) {
		const struct purge__kv *p = &r->sel[r->i];
		size_t part = p->val - r->off < bytes ? p->val - r->off : bytes;
		struct iovec v = {(void *)(p->key + r->off), part};
		settle(r, part, attribute(r, &v));
		bytes -= part;
	}
}

/* -1 from process_madvise: errno is about the whole call or iov[0]
 * (docs/kernel-notes.md §9.7). */
static void call_error(struct run *r, size_t bytes, int err)
{
	if (err == -ENOSYS || err == -EBADF || err == -ESRCH) {
		refuse(r, err);
	} else if (err == -EPERM && r->q->set.mode != PURGE_MODE_VECTORED) {
		/* sealed iov[0] (madvise fails alike) or a seccomp filter */
		int m = call_madv(r, &r->q->iov[0]);
		if (m == -EPERM) {
			failed_iovec(r, 0, -EPERM);
			return;
		}
		if (m == 0) /* done: the loop goes on after it */
			settle(r, r->q->iov[0].iov_len, 0);
		refuse(r, err);
	} else if (err == -EINVAL || err == -ENOMEM || err == -EPERM) {
		failed_iovec(r, 0, 0);
	} else {
		/* EFAULT and the rest name no range */
		each_alone(r, bytes);
	}
}

/* The kernel did the first ret bytes: whole iovecs, then one that failed
 * (its errno is lost); later ones were not touched. */
static void short_count(struct run *r, size_t k, size_t ret)
{
	size_t done = 0, f = 0;

	purge__books_short(r->q);
	while (f < k && done + r->q->iov[f].iov_len <= ret)
		done += r->q->iov[f++].iov_len;
	settle(r, done, 0);
	failed_iovec(r, f, 0);
}

/* ---- the paths ----------------------------------------------------------- */

static void vectored(struct run *r)
{
	while (r->i < r->n && r->path == PURGE_BACKEND_VECTORED && !r->refused) {
		size_t bytes, k = plan(r, r->q->set.batch, &bytes);
		ssize_t ret = call_pmadv(r, r->q->iov, k);
		if (ret >= (ssize_t)bytes)
			settle_plan(r, bytes);
		else if (ret >= 0) {
			short_count(r, k, (size_t)ret);
		} else {
			call_error(r, bytes, (int)ret);
		}
	}
}

static void looped(struct run *r)
{
	while (r->i < r->n) {
		size_t bytes;
		plan(r, 1, &bytes);
		int err = call_madv(r, &r->q->iov[0]);
		if (!err)
			settle_plan(r, bytes);
		else
			failed_iovec(r, 0, err);
	}
}

/* Forced vectored and refused: every range left fails, in call_bytes pieces. */
static void report_rest(struct run *r)
{
	r->solo = r->n;
	while (r->i < r->n) {
		size_t bytes;
		plan(r, 1, &bytes);
		settle(r, bytes, r->refused);
	}
}

/* System calls and the caller's callback may change errno: the library's
 * callers see it unchanged. */
void purge__flush_run(purge_queue *q, struct purge__kv *sel, size_t n)
{
	struct run r = {.q = q, .sel = sel, .n = n, .path = PURGE_BACKEND_VECTORED};
	int saved = errno;

	if (q->set.mode == PURGE_MODE_LOOP)
		r.path = PURGE_BACKEND_LOOP;
	else if (q->set.mode == PURGE_MODE_AUTO)
		r.path = q->be->path(q->be->ctx, q->set.advice, true);
	q->backend = r.path;
	while (r.i < r.n) {
		if (r.refused)
			report_rest(&r);
		else if (r.path == PURGE_BACKEND_VECTORED)
			vectored(&r);
		else
			looped(&r);
	}
	errno = saved;
}
