/* SPDX-License-Identifier: MIT */
/*
 * Cut the pending ranges into process_madvise calls of at most `batch`
 * iovecs and `call_bytes` bytes, resume after partial progress, and attribute
 * every failure to its range.  Talks to the kernel only through q->be.
 *
 * The pending array is handed to the kernel as is (struct iovec): a call
 * covers v[first .. first+cnt), the last one possibly cut short by the byte
 * cap; entries are advanced in place as their bytes are settled.
 */
#include <errno.h>
#include <limits.h>

#include "internal.h"

struct call {
	size_t first; /* first entry in the call */
	size_t cnt;   /* iovecs in the call */
	size_t cut;   /* length of the last iovec when the byte cap cut it, else 0 */
	size_t bytes; /* bytes asked */
};

static size_t skip_empty(const struct iovec *v, size_t i, size_t n)
{
	while (i < n && v[i].iov_len == 0)
		i++;
	return i;
}

static size_t piece_len(const struct iovec *v, const struct call *c, size_t j)
{
	return j == c->first + c->cnt - 1 && c->cut ? c->cut : v[j].iov_len;
}

/* Settle the first `len` bytes of v[j] as purged (err == 0) or failed, and
 * move v[j] past them.  Once v[j] is used up, the bytes merged into it from
 * overlapping enqueues (dup[j]) share the outcome of its last piece. */
static void consume(purge_queue *q, struct iovec *v, size_t *dup, size_t j, size_t len, int err)
{
	void *base = v[j].iov_base;

	v[j].iov_base = (char *)base + len;
	v[j].iov_len -= len;
	if (v[j].iov_len == 0) {
		size_t d = dup ? dup[j] : 0; /* no dup[] without coalescing */
		q->st.pending_ranges--;
		q->st.pending_bytes -= d;
		if (err)
			q->st.failed_bytes += d;
		else
			q->st.purged_bytes += d;
	}
	if (err)
		purge__account_failed(q, base, len, err);
	else
		purge__account_purged(q, len);
}

/* The errno of one range: madvise() it alone, which also re-applies it
 * harmlessly (DONTNEED/FREE are idempotent; kernel-notes §9.6).  A forced
 * vectored queue asks process_madvise instead, so it never uses madvise. */
static int attribute(purge_queue *q, struct iovec *piece)
{
	const struct purge__backend *be = q->be;

	if (q->set.mode == PURGE_MODE_VECTORED) {
		q->st.pmadv_calls++;
		ssize_t r = be->pmadv(be->ctx, piece, 1, q->set.advice);
		return r == (ssize_t)piece->iov_len ? 0 : r < 0 ? (int)r : -EIO;
	}
	q->st.madv_calls++;
	return be->madv(be->ctx, piece->iov_base, piece->iov_len, q->set.advice);
}

static void loop_ranges(purge_queue *q, struct iovec *v, size_t *dup, size_t i, size_t n)
{
	const struct purge__backend *be = q->be;

	for (; i < n; i++) {
		while (v[i].iov_len) {
			size_t len =
			    v[i].iov_len < q->set.call_bytes ? v[i].iov_len : q->set.call_bytes;
			q->st.madv_calls++;
			int err = be->madv(be->ctx, v[i].iov_base, len, q->set.advice);
			consume(q, v, dup, i, len, err);
		}
	}
}

/* process_madvise is refused for good (seccomp, old kernel): remember it for
 * the process, then finish this batch through the loop, or report it when
 * the queue is forced to the vectored path. */
static size_t refuse(purge_queue *q, struct iovec *v, size_t *dup, size_t i, size_t n, int err)
{
	q->be->demote(q->be->ctx, q->set.advice, err);
	if (q->set.mode == PURGE_MODE_VECTORED) {
		for (; i < n; i++)
			if (v[i].iov_len)
				consume(q, v, dup, i, v[i].iov_len, err);
		return n;
	}
	q->st.fallbacks++;
	q->backend = PURGE_BACKEND_LOOP;
	loop_ranges(q, v, dup, i, n);
	return n;
}

static void plan_call(const purge_queue *q, const struct iovec *v, size_t i, size_t n,
                      struct call *c)
{
	size_t cap = q->set.call_bytes;

	*c = (struct call){.first = i};
	for (; i < n && c->cnt < q->set.batch; i++) {
		size_t len = v[i].iov_len, room = cap - c->bytes;
		if (len > room) {
			/* room is a page multiple: 0 or a real piece */
			if (room) {
				c->cnt++;
				c->cut = room;
				c->bytes += room;
			}
			return;
		}
		c->bytes += len;
		c->cnt++;
	}
}

static ssize_t submit(purge_queue *q, struct iovec *v, const struct call *c)
{
	struct iovec *last = &v[c->first + c->cnt - 1];
	size_t keep = last->iov_len;

	if (c->cut)
		last->iov_len = c->cut;
	q->st.pmadv_calls++;
	ssize_t ret = q->be->pmadv(q->be->ctx, &v[c->first], c->cnt, q->set.advice);
	last->iov_len = keep;
	return ret;
}

/* Settle the iovecs wholly inside the first `done` bytes; returns the index
 * of the first one that is not (the failing iovec of a short count). */
static size_t settle_prefix(purge_queue *q, struct iovec *v, size_t *dup, const struct call *c,
                            size_t done)
{
	size_t j = c->first, end = c->first + c->cnt;

	for (size_t len; j < end && (len = piece_len(v, c, j)) <= done; j++) {
		done -= len;
		consume(q, v, dup, j, len, 0);
	}
	return j;
}

/* Settle iov[j] of the call; returns where to go on from: j itself, which
 * still holds the rest of a cut range, or is empty and skipped. */
static size_t settle_one(purge_queue *q, struct iovec *v, size_t *dup, const struct call *c,
                         size_t j, int err)
{
	consume(q, v, dup, j, piece_len(v, c, j), err);
	return j;
}

/* process_madvise returned -1: errno is about the whole call or iov[0]
 * (kernel-notes §9.7).  Returns the next entry to submit. */
static size_t settle_error(purge_queue *q, struct iovec *v, size_t *dup, size_t n,
                           const struct call *c, int err)
{
	size_t j = c->first;
	struct iovec p0 = {v[j].iov_base, piece_len(v, c, j)};

	if (err == -ENOSYS || err == -EBADF || err == -ESRCH)
		return refuse(q, v, dup, j, n, err);
	if (err == -EPERM && q->set.mode != PURGE_MODE_VECTORED) {
		/* sealed iov[0] (madvise fails alike) or a seccomp filter */
		int r = attribute(q, &p0);
		settle_one(q, v, dup, c, j, r);
		return r == -EPERM ? j : refuse(q, v, dup, skip_empty(v, j, n), n, err);
	}
	if (err == -EINVAL || err == -ENOMEM || err == -EPERM) {
		/* about iov[0] now that the path is known to work */
		return settle_one(q, v, dup, c, j, attribute(q, &p0));
	}
	/* EFAULT (a range past TASK_SIZE) and the rest tell nothing about
	 * which range: ask each one of this call alone */
	for (; j < c->first + c->cnt; j++) {
		struct iovec p = {v[j].iov_base, piece_len(v, c, j)};
		consume(q, v, dup, j, p.iov_len, attribute(q, &p));
	}
	return c->first;
}

/* The whole call succeeded (the common case): settle it in one step, without
 * touching the entries, which are never looked at again; only a cut last
 * entry moves past the part done.  Returns the entry to go on from. */
static size_t settle_all(purge_queue *q, struct iovec *v, const size_t *dup, const struct call *c)
{
	size_t end = c->first + c->cnt, whole = c->cut ? end - 1 : end, bytes = c->bytes;

	for (size_t j = c->first; dup && j < whole; j++)
		bytes += dup[j];
	q->st.purged_bytes += bytes;
	q->st.pending_bytes -= bytes;
	q->st.pending_ranges -= whole - c->first;
	if (c->cut) {
		v[whole].iov_base = (char *)v[whole].iov_base + c->cut;
		v[whole].iov_len -= c->cut;
	}
	return whole;
}

/* Returns the entry to go on from (settled ones are empty and skipped). */
static size_t settle(purge_queue *q, struct iovec *v, size_t *dup, size_t n, const struct call *c,
                     ssize_t ret)
{
	if (ret < 0)
		return settle_error(q, v, dup, n, c, (int)ret);
	if ((size_t)ret >= c->bytes)
		return settle_all(q, v, dup, c);
	q->st.short_counts++;
	size_t j = settle_prefix(q, v, dup, c, (size_t)ret);
	if (j == c->first + c->cnt)
		return c->first;
	/* short count: iov[j] failed, its errno is lost; later ones untouched */
	struct iovec p = {v[j].iov_base, piece_len(v, c, j)};
	return settle_one(q, v, dup, c, j, attribute(q, &p));
}

static void vector_ranges(purge_queue *q, struct iovec *v, size_t *dup, size_t n)
{
	struct call c;

	for (size_t i = skip_empty(v, 0, n); i < n; i = skip_empty(v, i, n)) {
		plan_call(q, v, i, n, &c);
		i = settle(q, v, dup, n, &c, submit(q, v, &c));
	}
}

void purge__flush_ranges(purge_queue *q, struct iovec *v, size_t *dup, size_t n)
{
	int why = 0, path = PURGE_BACKEND_VECTORED;

	if (q->set.mode == PURGE_MODE_LOOP)
		path = PURGE_BACKEND_LOOP;
	else if (q->set.mode == PURGE_MODE_AUTO)
		path = q->be->path(q->be->ctx, q->set.advice, &why);
	q->backend = path;
	if (path == PURGE_BACKEND_VECTORED)
		vector_ranges(q, v, dup, n);
	else
		loop_ranges(q, v, dup, 0, n);
}

int purge__flush(purge_queue *q)
{
	uint64_t failed = q->st.failed_ranges;
	size_t n;

	if (q->count == 0)
		return 0;
	q->busy = true;
	q->st.flushes++;
	bool merge = !(q->set.flags & PURGE_NO_COALESCE);
	n = merge ? purge__coalesce(q) : q->count;
	purge__flush_ranges(q, q->v, merge ? q->dup : NULL, n);
	q->count = 0;
	q->lo = UINTPTR_MAX;
	q->hi = 0;
	q->busy = false;
	failed = q->st.failed_ranges - failed;
	return failed > INT_MAX ? INT_MAX : (int)failed;
}
