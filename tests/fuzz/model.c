/* SPDX-License-Identifier: MIT */
/*
 * The fuzz driver (model.h): random operations on a queue and on the model
 * of expect.c, over a real region, with the fake or the real kernel and a
 * clock that moves only when the driver says so.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "expect.h"

void fz_fail(struct fz *z, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz: op %llu: ", (unsigned long long)z->op);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

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

uintptr_t fz_pa(const struct fz *z, size_t i)
{
	return (uintptr_t)z->r + i * z->page;
}

size_t fz_pidx(const struct fz *z, uintptr_t a)
{
	return (a - (uintptr_t)z->r) / z->page;
}

/* The allocator writes to a slot it owns: a fresh pattern. */
static void write_slot(struct fz *z, size_t k)
{
	size_t q = z->page / NQ;

	z->pat[k] = (uint8_t)(1 + (z->gen++ % 250));
	memset(z->r + k * q, z->pat[k], q);
	z->expect[k] = E_PATTERN;
	z->wrote[k] = true;
}

void fz_write_page(struct fz *z, size_t i)
{
	for (size_t j = 0; j < NQ; j++)
		write_slot(z, i * NQ + j);
}

void fz_write_slots(struct fz *z, uintptr_t s, uintptr_t e)
{
	uintptr_t lo = (uintptr_t)z->r, hi = lo + NP * z->page;
	size_t q = z->page / NQ;

	s = s < lo ? lo : s;
	e = e > hi ? hi : e;
	for (size_t k = (s - lo) / q; s < e && k < (e - lo + q - 1) / q; k++)
		write_slot(z, k);
}

static void on_failure(void *arg, void *addr, size_t len, int err)
{
	struct fz *z = arg;

	CHECK(z, z->nf < MAXF, "too many failures");
	CHECK(z, err < 0, "failure with errno %d", err);
	CHECK(z, fz_pidx(z, (uintptr_t)addr) < NP && len && len % z->page == 0,
	      "failure outside the region");
	z->f[z->nf].s = (uintptr_t)addr;
	z->f[z->nf].e = (uintptr_t)addr + len;
	z->f[z->nf].err = err;
	z->nf++;
}

/* The real kernel behind the driver's clock. */
static uint64_t model_now(void *ctx, bool coarse)
{
	(void)coarse;
	return ((struct fz *)ctx)->now;
}

/* ---- the backend the queue sees: the kernel's, recording what it took --- */

/* The first `bytes` of v[0..n) were purged: each page once more.  Only
 * pages of the region may be. */
static void fz_applied(struct fz *z, const struct iovec *v, size_t n, size_t bytes)
{
	uintptr_t lo = (uintptr_t)z->r, hi = lo + NP * z->page;

	for (size_t k = 0; k < n && bytes; k++) {
		uintptr_t a = (uintptr_t)v[k].iov_base;
		size_t len = v[k].iov_len < bytes ? v[k].iov_len : bytes;
		CHECK(z, a >= lo && a + len <= hi && (a - lo) % z->page == 0,
		      "the kernel was asked to purge %#zx+%zu, outside the region or its pages",
		      (size_t)(a - lo), len);
		for (uintptr_t p = a; p < a + len; p += z->page)
			z->applied[fz_pidx(z, p)]++;
		bytes -= len;
	}
}

static ssize_t wrap_pmadv(void *ctx, const struct iovec *iov, size_t n, int advice)
{
	struct fz *z = ctx;
	ssize_t ret = z->inner.pmadv(z->inner.ctx, iov, n, advice);

	for (size_t k = 0; z->o->verbose && k < n; k++)
		fprintf(stderr, "    pmadv %zu+%zu%s", fz_pidx(z, (uintptr_t)iov[k].iov_base),
		        iov[k].iov_len / z->page, k + 1 == n ? "" : "");
	if (z->o->verbose)
		fprintf(stderr, " -> %zd splits %u\n", ret, z->fk.splits);
	if (ret > 0)
		fz_applied(z, iov, n, (size_t)ret);
	return ret;
}

static int wrap_madv(void *ctx, void *addr, size_t len, int advice)
{
	struct fz *z = ctx;
	int ret = z->inner.madv(z->inner.ctx, addr, len, advice);
	struct iovec v = {addr, len};

	if (z->o->verbose && len)
		fprintf(stderr, "    madv %zu+%zu: %d\n", fz_pidx(z, (uintptr_t)addr),
		        len / z->page, ret);

	if (ret == 0 && len)
		fz_applied(z, &v, 1, len);
	return ret;
}

static int wrap_path(void *ctx, int advice, bool probe)
{
	struct fz *z = ctx;
	return z->inner.path(z->inner.ctx, advice, probe);
}

static void wrap_demote(void *ctx, int advice)
{
	struct fz *z = ctx;
	z->inner.demote(z->inner.ctx, advice);
}

static uint64_t wrap_now(void *ctx, bool coarse)
{
	struct fz *z = ctx;
	return z->inner.now(z->inner.ctx, coarse);
}

static size_t wrap_page_size(void *ctx)
{
	struct fz *z = ctx;
	return z->inner.page_size(z->inner.ctx);
}

static size_t wrap_frame_size(void *ctx)
{
	struct fz *z = ctx;
	return z->inner.frame_size(z->inner.ctx);
}

static int wrap_scan_open(void *ctx)
{
	struct fz *z = ctx;
	return z->inner.scan_open(z->inner.ctx);
}

static ssize_t wrap_huge_spans(void *ctx, int h, uintptr_t lo, uintptr_t hi, struct iovec *out,
                               size_t max, uintptr_t *done)
{
	struct fz *z = ctx;
	return z->inner.huge_spans(z->inner.ctx, h, lo, hi, out, max, done);
}

static void wrap_scan_close(void *ctx, int h)
{
	struct fz *z = ctx;
	z->inner.scan_close(z->inner.ctx, h);
}

static const struct purge__backend wrap_backend = {
    .pmadv = wrap_pmadv,
    .madv = wrap_madv,
    .path = wrap_path,
    .demote = wrap_demote,
    .now = wrap_now,
    .page_size = wrap_page_size,
    .frame_size = wrap_frame_size,
    .scan_open = wrap_scan_open,
    .huge_spans = wrap_huge_spans,
    .scan_close = wrap_scan_close,
};

bool fz_huge_frames(struct fz *z, bool *huge)
{
	const struct purge__backend *be = &purge__sys_backend;
	size_t fsize = z->fpages * z->page;
	struct iovec sp[FZ_FRAMES];
	uintptr_t done, lo = fz_pa(z, z->frame0), hi = lo + z->nframes * fsize;
	int h = z->nframes ? be->scan_open(NULL) : -1;
	ssize_t n = h < 0 ? h : be->huge_spans(NULL, h, lo, hi, sp, FZ_FRAMES, &done);

	if (h >= 0)
		be->scan_close(NULL, h);
	for (size_t f = 0; f < z->nframes; f++) {
		uintptr_t a = lo + f * fsize;
		huge[f] = false;
		for (ssize_t k = 0; k < n; k++)
			huge[f] |= (uintptr_t)sp[k].iov_base <= a &&
			           a + fsize <= (uintptr_t)sp[k].iov_base + sp[k].iov_len;
	}
	return n >= 0;
}

/* ---- operations ---------------------------------------------------------- */

/* Where a ragged end falls inside its page: mostly on a slot boundary
 * (sub-page objects), sometimes on any byte. */
static uintptr_t ragged(struct fz *z)
{
	if (rnd(z->src, 4) || z->o->thp) /* model pages of 16 real ones: no ragged ends */
		return 0;
	return rnd(z->src, 3) ? rnd(z->src, NQ) * (z->page / NQ) : rnd(z->src, (uint32_t)z->page);
}

/* A random range in the region: whole pages, sometimes with ragged ends. */
static void pick_range(struct fz *z, uintptr_t *s, uintptr_t *e)
{
	size_t first = rnd(z->src, NP), npg = rnd(z->src, 9);

	if (first + npg > NP)
		npg = NP - first;
	*s = fz_pa(z, first) + ragged(z);
	*e = fz_pa(z, first + npg);
	if (first + npg < NP)
		*e += ragged(z);
	if (*e < *s)
		*e = *s;
}

/* An allocator frees [s, e): its dirty data, then the enqueue. */
static void do_enqueue(struct fz *z, uintptr_t s, uintptr_t e)
{
	uintptr_t mask = z->page - 1;
	uintptr_t ts = (s + mask) & ~mask, te = e & ~mask;
	int want = 0;
	if (!(z->cfg.flags & PURGE_TRIM) && e > s && ((s | e) & mask))
		want = -EINVAL;
	if (want == 0 && e > s && te > ts) {
		if (!m_overlap_ok(z, ts, te))
			return; /* keep overlapping enqueues under purge_cancel's limit */
		m_expect_settled(z);
		for (uintptr_t a = ts; a < te; a += z->page)
			fz_write_page(z, fz_pidx(z, a)); /* the allocator's dirty data */
		z->fk.now = ++z->now; /* every enqueue its own time: no equal ages */
		m_enqueue(z, ts, te);
		m_before(z, FZ_ENQ, 0);
	}
	int ret = purge_enqueue(z->q, (void *)s, e - s);
	if (z->o->verbose)
		fprintf(stderr, "  enqueue %zu+%zu pages: %d\n", fz_pidx(z, ts),
		        te > ts ? (size_t)(te - ts) / z->page : 0, ret);
	CHECK(z, ret == want, "enqueue %zu+%zu: %d, want %d", fz_pidx(z, s), (size_t)(e - s), ret,
	      want);
}

static void op_enqueue(struct fz *z)
{
	uintptr_t s, e;

	pick_range(z, &s, &e);
	do_enqueue(z, s, e);
}

/* An allocator reuses [s, e): the cancel, its zero claim read back where
 * purge.h's rule makes one, then the allocator's writes. */
static void do_cancel(struct fz *z, uintptr_t s, uintptr_t e)
{
	uintptr_t mask = z->page - 1;
	uintptr_t ws = s & ~mask, we = (e + mask) & ~mask;
	if (!m_cancel_ok(z, ws, we))
		return; /* keep overlapping ranges under purge_cancel's limit */
	int want = e > s ? m_cancel(z, ws, we) : 0;
	int ret = purge_cancel(z->q, (void *)s, e - s);
	if (z->o->verbose)
		fprintf(stderr, "  cancel %zu+%zu pages: %d\n", fz_pidx(z, ws),
		        (size_t)(we - ws) / z->page, ret);
	CHECK(z, ret == want, "cancel %zu+%zu: %d, want %d", fz_pidx(z, s), (size_t)(e - s), ret,
	      want);
	m_expect_settled(z); /* a cancel may settle the oldest first */
	if (e > s) {
		m_zero_claim(z, s, e, ret);
		fz_write_slots(z, s, e); /* reused: live again */
	}
}

/* Mostly a range of the region; sometimes an interval of up to 4 GiB on
 * either side of it, as an allocator that cancels whole extents. */
static void op_cancel(struct fz *z)
{
	uintptr_t s, e;

	pick_range(z, &s, &e);
	if (!rnd(z->src, 16)) {
		uintptr_t lo = (uintptr_t)z->r, hi = lo + NP * z->page, gib = (uintptr_t)1 << 30;
		uintptr_t back = (uintptr_t)rnd(z->src, 4) * gib + rnd(z->src, 64) * z->page;
		uintptr_t ahead = (uintptr_t)rnd(z->src, 4) * gib + ragged(z);
		s = lo > back ? lo - back : z->page; /* valgrind maps the region low */
		/* and a 32-bit address space ends soon after it */
		uintptr_t room = UINTPTR_MAX - hi - 4 * z->page;
		e = hi + (ahead < room ? ahead : room);
	}
	do_cancel(z, s, e);
}

/* The split-heavy pattern: one long range, then every other page (or a
 * slot of it) taken back, each cancel splitting what is left. */
static void op_split_heavy(struct fz *z)
{
	size_t first = rnd(z->src, NP / 2), npg = 8 + rnd(z->src, NP / 2 - 8);

	do_enqueue(z, fz_pa(z, first), fz_pa(z, first + npg));
	m_check(z);
	for (size_t i = first + 1; i + 1 < first + npg; i += 2) {
		uintptr_t s = fz_pa(z, i) + (rnd(z->src, 2) ? 0 : ragged(z));
		do_cancel(z, s, s + (rnd(z->src, 2) && !z->o->thp ? z->page / NQ : z->page));
		m_check(z);
	}
}

/* purge_flush_due, as an event loop calls it; the deadline is checked
 * against the model's, or (PURGE_HUGE) once the model has observed what
 * it settled. */
static int flush_due(struct fz *z)
{
	uint64_t age = rnd(z->src, 4) ? rnd(z->src, 40) * 1000000ull : 0, want = 0, next = 0;

	m_flush_due(z, age, &want);
	m_before(z, FZ_DUE, age);
	int ret = purge_flush_due(z->q, age, rnd(z->src, 8) ? &next : NULL);
	z->last.next = next;
	CHECK(z, (z->cfg.flags & PURGE_HUGE) || !next || next == want,
	      "purge_flush_due's deadline %llu, model %llu", (unsigned long long)next,
	      (unsigned long long)want);
	if (!next) /* no deadline asked for: nothing to check */
		z->last.kind = FZ_OTHER;
	return ret;
}

static void op_flush(struct fz *z)
{
	int ret;

	switch (rnd(z->src, 4)) {
	case 0:
		m_flush_all(z);
		ret = purge_flush(z->q);
		break;
	case 1: {
		uint64_t age = rnd(z->src, 4) ? rnd(z->src, 40) * 1000000ull : 0;
		m_flush_older(z, age);
		ret = purge_flush_older(z->q, age);
		break;
	}
	case 2: {
		uint64_t keep = rnd(z->src, 2) ? rnd(z->src, 24) * z->page : rnd(z->src, 4096);
		m_flush_to(z, keep);
		m_before(z, FZ_TO, keep);
		ret = purge_flush_to(z->q, keep);
		break;
	}
	default:
		ret = flush_due(z);
		break;
	}
	CHECK(z, ret == (int)z->nf, "flush returned %d, %zu reported", ret, z->nf);
}

static void op_tick(struct fz *z)
{
	z->now += rnd(z->src, 4) ? rnd(z->src, 3000000) : rnd(z->src, 60) * 1000000ull;
	z->fk.now = z->now;
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

	if (!z->o->real_kernel) {
		z->fk.fail[i] = z->fk.fail[i] ? 0 : errs[rnd(z->src, 5)];
		return;
	}
	z->locked[i] = !z->locked[i];
	/* raw syscalls: sanitizers make mlock() a no-op */
	long r = syscall(z->locked[i] ? SYS_mlock : SYS_munlock, fz_pa(z, i), z->page);
	CHECK(z, r == 0, "mlock");
}

static void op_refuse(struct fz *z)
{
	static const int errs[] = {-ENOSYS, -EPERM, -EBADF, -ESRCH, -EINVAL};

	if (z->o->real_kernel || z->fk.refuse)
		return;
	z->fk.refuse = errs[rnd(z->src, 5)];
	z->fk.refuse_after = z->fk.pmadv_calls + rnd(z->src, 3);
}

static void op_invalid(struct fz *z)
{
	static const uintptr_t bad[][2] = {
	    {0, 4096}, {UINTPTR_MAX & ~(uintptr_t)4095, 8192}, {4096, SIZE_MAX & ~(uintptr_t)4095}};
	size_t k = rnd(z->src, 3);

	CHECK(z, purge_enqueue(z->q, (void *)bad[k][0], bad[k][1]) == -EINVAL, "bad range %zu", k);
	CHECK(z, purge_enqueue(z->q, (void *)fz_pa(z, rnd(z->src, NP)), 0) == 0, "zero length");
	CHECK(z, purge_cancel(z->q, (void *)(UINTPTR_MAX - 8), 4) == -EINVAL, "bad cancel");
}

/* ---- queue life ---------------------------------------------------------- */

static void random_config(struct fz *z)
{
	struct fuzz_src *r = z->src;
	static const unsigned caps[] = {1, 2, 3, 8, 64};
	bool vec = !z->o->real_kernel || purge_backend(MADV_DONTNEED) == PURGE_BACKEND_VECTORED;

	bool thp = z->o->thp; /* there, mostly PURGE_HUGE queues that can hold whole frames */

	z->cfg = (struct purge_config){
	    .capacity = thp && rnd(r, 2) ? 64 : caps[rnd(r, 5)],
	    .batch = rnd(r, 2) ? 1 + rnd(r, 4) : PURGE_BATCH_MAX,
	    .flags = rnd(r, 16) | (rnd(r, 4) ? 0 : PURGE_AGES),
	    .mode = (int)rnd(r, 3),
	    .max_pending_bytes = rnd(r, 2) ? 0 : (1 + rnd(r, 16)) * z->page,
	    .max_delay_ns = rnd(r, 2) ? 0 : (1 + rnd(r, 50)) * 1000000ull,
	    .max_call_bytes = rnd(r, 2) ? 0 : (1 + rnd(r, 4)) * z->page + rnd(r, 7),
	    .on_failure = on_failure,
	    .arg = z,
	};
	if (z->cfg.mode == PURGE_MODE_VECTORED && !vec)
		z->cfg.mode = PURGE_MODE_AUTO;
	/* huge-page frames (8 pages on the fake kernel), some huge-backed */
	if (!(z->cfg.flags & PURGE_NO_COALESCE) && (thp ? rnd(r, 3) : !rnd(r, 3)))
		z->cfg.flags |= PURGE_HUGE;
	for (size_t f = 0; f < fake_nframes(&z->fk); f++)
		z->fk.huge[f] = !rnd(r, 3) ? 0 : 1;
	z->fk.spans_err = rnd(r, 8) ? 0 : -ENOTTY;
}

static void open_queue(struct fz *z)
{
	size_t bytes = purge_queue_bytes(z->cfg.capacity);

	z->qmem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	CHECK(z, purge__queue_init_backend(&z->q, z->qmem, bytes, &z->cfg, &z->be) == 0, "init");
	m_reset(z);
}

static void close_queue(struct fz *z)
{
	m_flush_all(z);
	int ret = purge_queue_destroy(z->q);
	CHECK(z, ret == (int)z->nf, "destroy returned %d, %zu reported", ret, z->nf);
	z->nf = 0;
	z->ndone = 0;
	free(z->qmem);
}

/* New thresholds, batch, flags and mode; the fake kernel forgets refusals. */
static void op_reconfigure(struct fz *z)
{
	m_flush_all(z);
	int ret = purge_flush(z->q);
	CHECK(z, ret == (int)z->nf, "flush returned %d, %zu reported", ret, z->nf);
	m_check(z);
	close_queue(z);
	if (!z->o->real_kernel) {
		z->fk.refuse = 0;
		z->fk.path = PURGE_BACKEND_VECTORED;
	}
	random_config(z);
	if (z->o->thp) { /* split frames become huge again (Linux 6.1+; else left as they are) */
		for (size_t i = 0; i < NP; i++)
			if (z->locked[i] && syscall(SYS_munlock, fz_pa(z, i), z->page) == 0)
				z->locked[i] = 0;
		madvise(z->r, NP * z->page, 25 /* MADV_COLLAPSE */);
	}
	open_queue(z);
}

static void one_op(struct fz *z)
{
	uint32_t k = rnd(z->src, 100);

	if (z->o->verbose)
		fprintf(stderr, "op %llu: kind %u, %zu pending, now %llu\n",
		        (unsigned long long)z->op, k, z->n, (unsigned long long)z->now);

	if (k < 36)
		op_enqueue(z);
	else if (k < 58)
		op_cancel(z);
	else if (k < 70)
		op_flush(z);
	else if (k < 78)
		op_tick(z);
	else if (k < 82)
		op_batch(z);
	else if (k < 85)
		op_reconfigure(z);
	else if (k < 92)
		op_inject(z);
	else if (k < 93)
		op_split_heavy(z);
	else if (k < 95)
		op_refuse(z);
	else
		op_invalid(z);
	m_check(z);
}

/* The region: NP pages fenced by guard pages, `off` pages after a
 * boundary of the fake kernel's frames (8 pages), so that a run does not
 * depend on where mmap puts it.  With --thp, NP model pages of 64 KiB (16
 * real pages, when frames are 2 MiB) that make two whole frames, aligned
 * and advised MADV_HUGEPAGE, with the guard pages in the frames around. */
static void map_region(struct fz *z, size_t off)
{
	size_t real = (size_t)sysconf(_SC_PAGESIZE);
	size_t frame = z->o->thp ? purge__sys_backend.frame_size(NULL) : 8 * real;

	z->page = z->o->thp ? 2 * frame / NP : real;
	z->map_len = NP * z->page + 3 * frame;
	char *m =
	    mmap(NULL, z->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(z, m != MAP_FAILED, "mmap");
	z->map = m;
	z->r = (char *)(((uintptr_t)m + frame + frame - 1) & ~(frame - 1));
	if (!z->o->thp)
		z->r += off * real;
	mprotect(z->r - real, real, PROT_NONE);
	mprotect(z->r + NP * z->page, real, PROT_NONE);
	if (z->o->thp)
		madvise(z->r, NP * z->page, MADV_HUGEPAGE);
}

/* The frames that lie inside the region, in model pages. */
static void find_frames(struct fz *z)
{
	size_t fsize = z->o->real_kernel ? purge__sys_backend.frame_size(NULL) : z->fk.frame;

	z->fpages = fsize % z->page == 0 && fsize / z->page <= NP ? fsize / z->page : 0;
	z->nframes = z->frame0 = 0;
	if (!z->fpages)
		return;
	uintptr_t first = ((uintptr_t)z->r + fsize - 1) & ~(fsize - 1);
	z->frame0 = fz_pidx(z, first);
	z->nframes = (NP - z->frame0) / z->fpages;
	z->nframes = z->nframes > FZ_FRAMES ? FZ_FRAMES : z->nframes;
}

static void setup(struct fz *z)
{
	map_region(z, z->src->p ? 3 : z->src->state % 8);
	z->now = 1000000000;
	fake_init(&z->fk, (uintptr_t)z->r, NP * (z->page / (size_t)sysconf(_SC_PAGESIZE)));
	fake_set_frame(&z->fk, 8 * z->page);
	z->fk.zero_memory = true;
	z->fk.now = z->now;
	z->inner = z->fk.be;
	if (z->o->real_kernel) {
		z->inner = purge__sys_backend;
		z->inner.now = model_now;
		z->inner.ctx = z;
	}
	z->be = wrap_backend;
	z->be.ctx = z;
	find_frames(z);
	for (size_t i = 0; i < NP; i++)
		fz_write_page(z, i);
	bool huge[FZ_FRAMES] = {false}, any = false;
	if (z->o->thp && fz_huge_frames(z, huge))
		for (size_t f = 0; f < z->nframes; f++)
			any |= huge[f];
	if (z->o->thp && !any) {
		fprintf(stderr,
		        "fuzz: no transparent huge page backs the region (THP never, memory "
		        "too fragmented, or no PAGEMAP_SCAN before Linux 6.7): skipped\n");
		exit(77);
	}
	random_config(z);
	open_queue(z);
}

static void teardown(struct fz *z)
{
	close_queue(z);
	for (size_t i = 0; i < NP; i++)
		if (z->locked[i] && z->o->real_kernel)
			syscall(SYS_munlock, fz_pa(z, i), z->page);
	munmap(z->map, z->map_len);
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
	src->zclaims += z->zclaims;
	teardown(z);
	free(z);
	return ops;
}
