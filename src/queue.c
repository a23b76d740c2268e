/* SPDX-License-Identifier: MIT */
/*
 * Pending ranges: enqueue, cancel, coalesce and accounting.  Pure
 * bookkeeping: no system call here except through purge__flush*().
 *
 * Invariant, in enqueued bytes, at every point:
 *   enqueued == purged + cancelled + failed + pending
 */
#include <errno.h>
#include <limits.h>
#include <stdalign.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Highest user address + 1 where the ABI fixes it; elsewhere the kernel's
 * EFAULT on such a range is handled by flush.c. */
#if defined(__x86_64__) || (defined(__riscv) && __riscv_xlen == 64)
#define USER_TOP ((uintptr_t)1 << 56) /* 5-level paging; 4-level stops at 2^47 */
#elif defined(__aarch64__)
#define USER_TOP ((uintptr_t)1 << 52)
#else
#define USER_TOP UINTPTR_MAX
#endif

#define ALIGN_UP(x, a) (((x) + (a)-1) & ~((uintptr_t)(a)-1))

static size_t header_bytes(void)
{
	return ALIGN_UP(sizeof(struct purge_queue), alignof(max_align_t));
}

size_t purge_queue_bytes(unsigned capacity)
{
	size_t cap = capacity ? capacity : PURGE_DEFAULT_CAPACITY;

	if (cap > (UINT_MAX >> 8))
		return 0;
	return header_bytes() + cap * (sizeof(struct iovec) + sizeof(size_t));
}

/* Where the kernel lacks MADV_FREE (< 4.5) use DONTNEED and say so in the
 * stats; any other advice the kernel does not know is an error. */
static int resolve_advice(purge_queue *q)
{
	int ret = q->be->madv(q->be->ctx, NULL, 0, q->set.advice);

	if (ret == -EINVAL && q->set.advice == MADV_FREE) {
		q->set.advice = MADV_DONTNEED;
		ret = 0;
	}
	return ret ? -EOPNOTSUPP : 0;
}

static int init_lock(purge_queue *q)
{
	pthread_mutexattr_t at;
	int ret;

	if (!(q->set.flags & PURGE_LOCKED))
		return 0;
	/* recursive, so a call from on_failure sees busy instead of deadlocking */
	pthread_mutexattr_init(&at);
	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
	ret = pthread_mutex_init(&q->lock, &at);
	pthread_mutexattr_destroy(&at);
	return -ret;
}

static void init_fields(purge_queue *q, void *mem, const struct purge__settings *set,
                        const struct purge__backend *be)
{
	memset(q, 0, sizeof(*q));
	q->set = *set;
	q->be = be;
	q->page = (size_t)sysconf(_SC_PAGESIZE);
	q->v = (struct iovec *)((char *)mem + header_bytes());
	q->dup = (size_t *)(q->v + q->set.capacity);
	q->lo = UINTPTR_MAX;
}

int purge__queue_init_backend(purge_queue **qp, void *mem, size_t size,
                              const struct purge_config *cfg, const struct purge__backend *be)
{
	struct purge__settings set;
	int ret;

	if (!qp || !mem || !be || ((uintptr_t)mem % alignof(max_align_t)))
		return -EINVAL;
	ret = purge__settings_init(&set, cfg);
	if (ret)
		return ret;
	if (size < purge_queue_bytes(set.capacity))
		return -ENOSPC;
	purge_queue *q = mem;
	init_fields(q, mem, &set, be);
	ret = resolve_advice(q);
	if (!ret)
		ret = init_lock(q);
	if (ret)
		return ret;
	int why = 0;
	if (q->set.mode == PURGE_MODE_AUTO)
		q->backend = be->path(be->ctx, q->set.advice, &why);
	else
		q->backend =
		    q->set.mode == PURGE_MODE_LOOP ? PURGE_BACKEND_LOOP : PURGE_BACKEND_VECTORED;
	*qp = q;
	return 0;
}

static bool flush_due(purge_queue *q)
{
	if (q->count >= q->set.capacity)
		return true;
	if (q->set.max_pending_bytes && q->st.pending_bytes > q->set.max_pending_bytes)
		return true;
	return q->set.max_delay_ns && purge__now_ns() - q->oldest_ns >= q->set.max_delay_ns;
}

/* Validate and page-trim [addr, addr+len) into [*s, *e); 1 = nothing left. */
static int normalise(const purge_queue *q, void *addr, size_t len, uintptr_t *s, uintptr_t *e)
{
	uintptr_t a = (uintptr_t)addr, mask = q->page - 1;

	if (!addr || a + len < a || a + len > USER_TOP)
		return -EINVAL;
	if (q->set.flags & PURGE_TRIM) {
		*s = ALIGN_UP(a, q->page);
		*e = (a + len) & ~mask;
		return *e > *s ? 0 : 1;
	}
	if ((a | len) & mask)
		return -EINVAL;
	*s = a;
	*e = a + len;
	return 0;
}

static void append(purge_queue *q, uintptr_t s, uintptr_t e)
{
	if (q->count == 0 && q->set.max_delay_ns)
		q->oldest_ns = purge__now_ns();
	q->v[q->count].iov_base = (void *)s;
	q->v[q->count].iov_len = e - s;
	q->count++;
	q->lo = s < q->lo ? s : q->lo;
	q->hi = e > q->hi ? e : q->hi;
	q->st.pending_ranges++;
	q->st.pending_bytes += e - s;
}

int purge__enqueue(purge_queue *q, void *addr, size_t len)
{
	uintptr_t s, e;
	int ret;

	if (len == 0)
		return 0;
	ret = normalise(q, addr, len, &s, &e);
	if (ret)
		return ret < 0 ? ret : 0;
	if (q->count >= q->set.capacity) { /* only after a cancel split filled it */
		q->st.auto_flushes++;
		purge__flush(q);
	}
	q->st.enqueued_ranges++;
	q->st.enqueued_bytes += e - s;
	append(q, s, e);
	if (flush_due(q)) {
		q->st.auto_flushes++;
		purge__flush(q);
	}
	return 0;
}

/* Drop v[i] (order does not matter: flush sorts). */
static void remove_at(purge_queue *q, unsigned i)
{
	q->v[i] = q->v[--q->count];
	q->st.pending_ranges--;
}

static void cancelled(purge_queue *q, size_t bytes)
{
	q->st.cancelled_bytes += bytes;
	q->st.pending_bytes -= bytes;
}

/* [s, e) strictly inside v[i]: keep the left part in place, queue the right
 * part in a free slot, or purge it now when the queue is full (a split can
 * fill the last slot; enqueue flushes a full queue before appending). */
static void split(purge_queue *q, unsigned i, uintptr_t s, uintptr_t e)
{
	uintptr_t b = (uintptr_t)q->v[i].iov_base, end = b + q->v[i].iov_len;
	struct iovec right = {.iov_base = (void *)e, .iov_len = end - e};

	q->v[i].iov_len = s - b;
	cancelled(q, e - s);
	q->st.pending_ranges++;
	if (q->count < q->set.capacity) {
		q->v[q->count++] = right;
		return;
	}
	q->busy = true;
	purge__flush_ranges(q, &right, NULL, 1);
	q->busy = false;
}

/* Apply the cancel of [s, e) to v[i]; returns false when v[i] was removed
 * (so the caller looks at slot i again). */
static bool cancel_one(purge_queue *q, unsigned i, uintptr_t s, uintptr_t e)
{
	uintptr_t b = (uintptr_t)q->v[i].iov_base, end = b + q->v[i].iov_len;

	if (end <= s || b >= e)
		return true;
	if (b >= s && end <= e) {
		cancelled(q, end - b);
		remove_at(q, i);
		return false;
	}
	if (b < s && end > e) {
		split(q, i, s, e);
	} else if (b < s) {
		cancelled(q, end - s);
		q->v[i].iov_len = s - b;
	} else {
		cancelled(q, e - b);
		q->v[i].iov_base = (void *)e;
		q->v[i].iov_len = end - e;
	}
	return true;
}

int purge__cancel(purge_queue *q, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, mask = q->page - 1;

	if (len == 0)
		return 0;
	if (a + len < a || a + len > UINTPTR_MAX - mask)
		return -EINVAL;
	/* widen outward: cancelling too much is safe, too little is not */
	uintptr_t s = a & ~mask, e = ALIGN_UP(a + len, q->page);
	if (q->count == 0 || e <= q->lo || s >= q->hi)
		return 0;
	for (unsigned i = 0; i < q->count;)
		i += cancel_one(q, i, s, e);
	return 0;
}

static bool base_less(const struct iovec *x, const struct iovec *y)
{
	return (uintptr_t)x->iov_base < (uintptr_t)y->iov_base;
}

static void sift_down(struct iovec *v, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && base_less(&v[child], &v[child + 1]))
			child++;
		if (!base_less(&v[root], &v[child]))
			return;
		struct iovec t = v[root];
		v[root] = v[child];
		v[child] = t;
	}
}

/* In-place heapsort by address: no allocation (glibc's qsort may malloc),
 * no recursion, O(n log n) worst case.  Sorted input, the common case for
 * allocators that free in address order, costs one pass. */
static void sort_ranges(struct iovec *v, size_t n)
{
	size_t i;

	for (i = 1; i < n && !base_less(&v[i], &v[i - 1]); i++)
		;
	if (i >= n)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (i = n; i-- > 1;) {
		struct iovec t = v[0];
		v[0] = v[i];
		v[i] = t;
		sift_down(v, 0, i);
	}
}

/* Sort, then merge adjacent and overlapping ranges in place.  Bytes of a
 * range already covered by its neighbour go to dup[], so that they are
 * accounted purged or failed with the merged range.  Returns the count. */
unsigned purge__coalesce(purge_queue *q)
{
	struct iovec *v = q->v;
	unsigned k = 0;

	if (q->count == 0)
		return 0;
	sort_ranges(v, q->count);
	q->dup[0] = 0;
	for (unsigned i = 1; i < q->count; i++) {
		uintptr_t kb = (uintptr_t)v[k].iov_base, ke = kb + v[k].iov_len;
		uintptr_t ib = (uintptr_t)v[i].iov_base, ie = ib + v[i].iov_len;
		if (ib > ke) {
			v[++k] = v[i];
			q->dup[k] = 0;
			continue;
		}
		q->dup[k] += (ie < ke ? ie : ke) - ib;
		if (ie > ke)
			v[k].iov_len = ie - kb;
	}
	q->st.merged_ranges += q->count - (k + 1);
	q->st.pending_ranges -= q->count - (k + 1);
	q->count = k + 1;
	return q->count;
}

void purge__account_purged(purge_queue *q, size_t bytes)
{
	q->st.purged_bytes += bytes;
	q->st.pending_bytes -= bytes;
}

void purge__account_failed(purge_queue *q, void *addr, size_t len, int err)
{
	q->st.failed_ranges++;
	q->st.failed_bytes += len;
	q->st.pending_bytes -= len;
	if (q->set.on_failure)
		q->set.on_failure(q->set.arg, addr, len, err);
}
