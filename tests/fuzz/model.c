/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../fake_kernel.h"
#include "model.h"

#define NP   64   /* pages in the region */
#define MAXL 1024 /* model list: capacity (<= 64) plus splits */
#define MAXF 4096 /* failure reports per operation */

enum { E_PATTERN, E_ZERO, E_ANY };

struct fz {
	struct fuzz_src *src;
	const struct fuzz_opts *o;
	struct fake_kernel fk;
	char *r;
	size_t page;
	purge_queue *q;
	void *qmem;
	struct purge_config cfg;
	/* model */
	struct {
		uintptr_t s, e;
	} l[MAXL];
	size_t n;
	uint64_t enq, canc, settled, pend, flushes;
	uint8_t expect[NP], pat[NP], locked[NP];
	unsigned gen;
	/* failures reported during the current operation */
	struct {
		uintptr_t s, e;
		int err;
	} f[MAXF];
	size_t nf;
	uint64_t op;
};

static void fail(struct fz *z, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz: op %llu: ", (unsigned long long)z->op);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

#define CHECK(z, c, ...)                                                                           \
	do {                                                                                       \
		if (!(c))                                                                          \
			fail(z, __VA_ARGS__);                                                      \
	} while (0)

static uint32_t rnd(struct fuzz_src *s, uint32_t bound)
{
	uint32_t v = 0;

	if (!s->p) {
		s->state = s->state * 6364136223846793005ull + 1442695040888963407ull;
		v = (uint32_t)(s->state >> 33);
	} else if (s->n >= 2) {
		v = (uint32_t)s->p[0] | (uint32_t)s->p[1] << 8;
		s->p += 2, s->n -= 2;
	} else {
		s->done = true;
	}
	return bound ? v % bound : v;
}

static uintptr_t pa(struct fz *z, size_t i)
{
	return (uintptr_t)z->r + i * z->page;
}

static size_t pidx(struct fz *z, uintptr_t a)
{
	return (a - (uintptr_t)z->r) / z->page;
}

static void on_failure(void *arg, void *addr, size_t len, int err)
{
	struct fz *z = arg;

	CHECK(z, z->nf < MAXF, "too many failures");
	CHECK(z, err < 0, "failure with errno %d", err);
	z->f[z->nf].s = (uintptr_t)addr;
	z->f[z->nf].e = (uintptr_t)addr + len;
	z->f[z->nf].err = err;
	z->nf++;
}

static bool pending(struct fz *z, size_t i)
{
	uintptr_t a = pa(z, i);

	for (size_t k = 0; k < z->n; k++)
		if (z->l[k].s <= a && a < z->l[k].e)
			return true;
	return false;
}

/* The allocator writes to a page it owns: a fresh pattern. */
static void write_page(struct fz *z, size_t i)
{
	z->pat[i] = (uint8_t)(1 + (z->gen++ % 250));
	memset((void *)pa(z, i), z->pat[i], z->page);
	z->expect[i] = E_PATTERN;
}

static bool page_is(struct fz *z, size_t i, uint8_t b)
{
	const volatile uint8_t *p = (const uint8_t *)pa(z, i);

	return p[0] == b && p[z->page / 2] == b && p[z->page - 1] == b;
}

static void check_pages(struct fz *z)
{
	for (size_t i = 0; i < NP; i++) {
		if (pending(z, i) || z->expect[i] == E_ANY)
			continue;
		if (z->expect[i] == E_PATTERN)
			CHECK(z, page_is(z, i, z->pat[i]), "page %zu: live data destroyed", i);
		else
			CHECK(z, page_is(z, i, 0), "page %zu: enqueued but not purged", i);
	}
}

static void check_stats(struct fz *z)
{
	struct purge_stats st;

	purge_get_stats(z->q, &st);
	CHECK(z, st.enqueued_bytes == z->enq, "enqueued %lu, model %lu",
	      (unsigned long)st.enqueued_bytes, (unsigned long)z->enq);
	CHECK(z, st.cancelled_bytes == z->canc, "cancelled %lu, model %lu",
	      (unsigned long)st.cancelled_bytes, (unsigned long)z->canc);
	CHECK(z, st.pending_bytes == z->pend, "pending %lu, model %lu",
	      (unsigned long)st.pending_bytes, (unsigned long)z->pend);
	CHECK(z, st.purged_bytes + st.failed_bytes == z->settled, "settled %lu, model %lu",
	      (unsigned long)(st.purged_bytes + st.failed_bytes), (unsigned long)z->settled);
	CHECK(z,
	      st.enqueued_bytes ==
	          st.purged_bytes + st.cancelled_bytes + st.failed_bytes + st.pending_bytes,
	      "accounting identity broken");
	CHECK(z, st.pending_ranges <= z->n, "pending ranges %lu > model %zu",
	      (unsigned long)st.pending_ranges, z->n);
	CHECK(z, st.flushes == z->flushes, "flushes %lu, model %lu", (unsigned long)st.flushes,
	      (unsigned long)z->flushes);
}

/* A failed range must be one the kernel had a reason to refuse. */
static void apply_failures(struct fz *z)
{
	for (size_t k = 0; k < z->nf; k++) {
		/* a forced vectored queue reports a refused call's ranges */
		bool why = z->fk.refuse && z->cfg.mode == PURGE_MODE_VECTORED;
		for (uintptr_t a = z->f[k].s; a < z->f[k].e; a += z->page) {
			size_t i = pidx(z, a);
			CHECK(z, i < NP, "failure outside the region");
			why |= z->locked[i] || (!z->o->real_kernel && z->fk.fail[i]);
			z->expect[i] = E_ANY;
		}
		CHECK(z, why, "range %zu+%zu failed (%d) for no reason", pidx(z, z->f[k].s),
		      (z->f[k].e - z->f[k].s) / z->page, z->f[k].err);
	}
	z->nf = 0;
}

/* What a flush does in the model: every pending page ends zero (or failed). */
static void model_flush(struct fz *z)
{
	if (!z->n)
		return;
	for (size_t i = 0; i < NP; i++)
		if (pending(z, i))
			z->expect[i] = E_ZERO;
	z->settled += z->pend;
	z->pend = 0;
	z->n = 0;
	z->flushes++;
}

static void model_append(struct fz *z, uintptr_t s, uintptr_t e)
{
	CHECK(z, z->n < MAXL, "model list full");
	z->l[z->n].s = s;
	z->l[z->n].e = e;
	z->n++;
	z->pend += e - s;
}

static bool due(struct fz *z)
{
	return z->n >= z->cfg.capacity ||
	       (z->cfg.max_pending_bytes && z->pend > z->cfg.max_pending_bytes);
}

/* A random range in the region: whole pages, sometimes with ragged ends. */
static void pick_range(struct fz *z, uintptr_t *s, uintptr_t *e)
{
	size_t first = rnd(z->src, NP), npg = rnd(z->src, 9);

	if (first + npg > NP)
		npg = NP - first;
	*s = pa(z, first) + (rnd(z->src, 4) ? 0 : rnd(z->src, (uint32_t)z->page));
	*e = pa(z, first + npg);
	if (first + npg < NP && !rnd(z->src, 4))
		*e += rnd(z->src, (uint32_t)z->page);
	if (*e < *s)
		*e = *s;
}

static void op_enqueue(struct fz *z)
{
	uintptr_t s, e, mask = z->page - 1;

	pick_range(z, &s, &e);
	int want = 0;
	uintptr_t ts = (s + mask) & ~mask, te = e & ~mask;
	if (!(z->cfg.flags & PURGE_TRIM) && e > s && ((s | e) & mask))
		want = -EINVAL;
	if (want == 0 && e > s && te > ts) {
		for (uintptr_t a = ts; a < te; a += z->page)
			write_page(z, pidx(z, a)); /* the allocator's dirty data */
		if (z->n >= z->cfg.capacity)
			model_flush(z);
		model_append(z, ts, te);
		z->enq += te - ts;
		if (due(z))
			model_flush(z);
	}
	int ret = purge_enqueue(z->q, (void *)s, e - s);
	CHECK(z, ret == want, "enqueue %zu+%zu: %d, want %d", pidx(z, s), (size_t)(e - s), ret,
	      want);
}

static void op_invalid(struct fz *z)
{
	static const uintptr_t bad[][2] = {
	    {0, 4096}, {UINTPTR_MAX & ~(uintptr_t)4095, 8192}, {4096, SIZE_MAX & ~(uintptr_t)4095}};
	size_t k = rnd(z->src, 3);

	CHECK(z, purge_enqueue(z->q, (void *)bad[k][0], bad[k][1]) == -EINVAL, "bad range %zu", k);
	CHECK(z, purge_enqueue(z->q, (void *)pa(z, rnd(z->src, NP)), 0) == 0, "zero length");
}

/* Mirrors purge_cancel's walk, including where a split's right part goes. */
static void model_cancel(struct fz *z, uintptr_t s, uintptr_t e, uintptr_t *now, size_t *nnow)
{
	for (size_t k = 0; k < z->n;) {
		uintptr_t b = z->l[k].s, end = z->l[k].e;
		if (end <= s || b >= e) {
			k++;
			continue;
		}
		uintptr_t lo = b > s ? b : s, hi = end < e ? end : e;
		z->canc += hi - lo;
		z->pend -= hi - lo;
		if (b >= s && end <= e) {
			z->l[k] = z->l[--z->n];
			continue;
		}
		if (b < s && end > e) {
			z->l[k].e = s;
			if (z->n < z->cfg.capacity) {
				z->l[z->n].s = e, z->l[z->n].e = end, z->n++;
			} else { /* purged at once */
				z->pend -= end - e, z->settled += end - e;
				now[2 * *nnow] = e, now[2 * *nnow + 1] = end, ++*nnow;
			}
		} else if (b < s) {
			z->l[k].e = s;
		} else {
			z->l[k].s = e;
		}
		k++;
	}
}

static void op_cancel(struct fz *z)
{
	uintptr_t s, e, mask = z->page - 1, now[2 * MAXL];
	size_t nnow = 0;

	pick_range(z, &s, &e);
	uintptr_t ws = s & ~mask, we = (e + mask) & ~mask;
	if (e > s)
		model_cancel(z, ws, we, now, &nnow);
	CHECK(z, purge_cancel(z->q, (void *)s, e - s) == 0, "cancel");
	for (size_t k = 0; k < nnow; k++)
		for (uintptr_t a = now[2 * k]; a < now[2 * k + 1]; a += z->page)
			z->expect[pidx(z, a)] = E_ZERO;
	if (e > s)
		for (uintptr_t a = ws; a < we; a += z->page)
			write_page(z, pidx(z, a)); /* reused: live again */
}

static void op_flush(struct fz *z)
{
	model_flush(z);
	int ret = purge_flush(z->q);
	CHECK(z, ret == (int)z->nf, "flush returned %d, %zu reported", ret, z->nf);
}

static void op_batch(struct fz *z)
{
	unsigned b = rnd(z->src, 3) ? 1 + rnd(z->src, 8) : rnd(z->src, 1100);
	unsigned old = purge_get_batch(z->q);
	int want = b == 0 || b > PURGE_BATCH_MAX ? -EINVAL : 0;

	CHECK(z, purge_set_batch(z->q, b) == want, "set_batch %u", b);
	CHECK(z, purge_get_batch(z->q) == (want ? old : b), "get_batch");
}

/* Make pages fail: mlock (DONTNEED answers EINVAL) or a fake errno. */
static void op_inject(struct fz *z)
{
	static const int errs[] = {-ENOMEM, -EINVAL, -EPERM, -EFAULT, -EAGAIN};
	size_t i = rnd(z->src, NP);

	z->locked[i] = !z->locked[i];
	if (z->o->real_kernel) {
		/* raw syscalls: sanitizers make mlock() a no-op */
		long r = syscall(z->locked[i] ? SYS_mlock : SYS_munlock, pa(z, i), z->page);
		CHECK(z, r == 0, "mlock");
		return;
	}
	z->fk.fail[i] = z->locked[i] ? errs[rnd(z->src, 5)] : 0;
}

static void op_refuse(struct fz *z)
{
	static const int errs[] = {-ENOSYS, -EPERM, -EBADF, -ESRCH, -EINVAL};

	if (z->o->real_kernel || z->fk.refuse)
		return;
	z->fk.refuse = errs[rnd(z->src, 5)];
	z->fk.refuse_after = z->fk.pmadv_calls + rnd(z->src, 3);
}

static void random_config(struct fz *z)
{
	struct fuzz_src *r = z->src;
	static const unsigned caps[] = {1, 2, 3, 8, 64};
	bool vec = !z->o->real_kernel || purge_backend(MADV_DONTNEED) == PURGE_BACKEND_VECTORED;

	z->cfg = (struct purge_config){
	    .capacity = caps[rnd(r, 5)],
	    .batch = rnd(r, 2) ? 1 + rnd(r, 4) : PURGE_BATCH_MAX,
	    .flags = rnd(r, 8),
	    .mode = (int)rnd(r, 3),
	    .max_pending_bytes = rnd(r, 2) ? 0 : (1 + rnd(r, 16)) * z->page,
	    .max_call_bytes = rnd(r, 2) ? 0 : (1 + rnd(r, 4)) * z->page + rnd(r, 7),
	    .on_failure = on_failure,
	    .arg = z,
	};
	if (z->cfg.mode == PURGE_MODE_VECTORED && !vec)
		z->cfg.mode = PURGE_MODE_AUTO;
}

static void open_queue(struct fz *z)
{
	struct purge__backend const *be = z->o->real_kernel ? &purge__sys_backend : &z->fk.be;
	size_t bytes = purge_queue_bytes(z->cfg.capacity);

	z->qmem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	CHECK(z, purge__queue_init_backend(&z->q, z->qmem, bytes, &z->cfg, be) == 0, "init");
	z->enq = z->canc = z->settled = z->pend = z->flushes = 0;
	z->n = 0;
}

static void close_queue(struct fz *z)
{
	model_flush(z);
	int ret = purge_queue_destroy(z->q);
	CHECK(z, ret == (int)z->nf, "destroy returned %d, %zu reported", ret, z->nf);
	apply_failures(z);
	free(z->qmem);
}

/* New thresholds, batch, flags and mode; the fake kernel forgets refusals. */
static void op_reconfigure(struct fz *z)
{
	close_queue(z);
	if (!z->o->real_kernel) {
		z->fk.refuse = 0;
		z->fk.path = PURGE_BACKEND_VECTORED;
	}
	random_config(z);
	open_queue(z);
}

static void one_op(struct fz *z)
{
	uint32_t k = rnd(z->src, 100);

	if (k < 35)
		op_enqueue(z);
	else if (k < 60)
		op_cancel(z);
	else if (k < 72)
		op_flush(z);
	else if (k < 78)
		op_batch(z);
	else if (k < 81)
		op_reconfigure(z);
	else if (k < 88)
		op_inject(z);
	else if (k < 90)
		op_refuse(z);
	else if (k < 93)
		op_invalid(z);
	else
		op_enqueue(z);
	apply_failures(z);
	check_stats(z);
	check_pages(z);
	CHECK(z, z->fk.violations == 0, "the library sent a bad iovec");
}

static void setup(struct fz *z)
{
	z->page = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (NP + 2) * z->page, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(z, m != MAP_FAILED, "mmap");
	mprotect(m, z->page, PROT_NONE);
	mprotect(m + (NP + 1) * z->page, z->page, PROT_NONE);
	z->r = m + z->page;
	fake_init(&z->fk, (uintptr_t)z->r, NP);
	z->fk.zero_memory = true;
	for (size_t i = 0; i < NP; i++)
		write_page(z, i);
	random_config(z);
	open_queue(z);
}

static void teardown(struct fz *z)
{
	close_queue(z);
	check_pages(z);
	munmap(z->r - z->page, (NP + 2) * z->page);
	fake_free(&z->fk);
}

uint64_t fuzz_run(struct fuzz_src *src, const struct fuzz_opts *o)
{
	struct fz *z = calloc(1, sizeof(*z));

	z->src = src;
	z->o = o;
	setup(z);
	for (z->op = 0; z->op < o->max_ops && !src->done; z->op++)
		one_op(z);
	uint64_t ops = z->op;
	teardown(z);
	free(z);
	return ops;
}
