/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_kernel.h"

static ssize_t page_index(const struct fake_kernel *fk, uintptr_t a)
{
	if (a < fk->base || a >= fk->base + fk->npages * fk->page)
		return -1;
	return (ssize_t)((a - fk->base) / fk->page);
}

static bool bad_iovec(struct fake_kernel *fk, const struct iovec *v)
{
	uintptr_t a = (uintptr_t)v->iov_base;

	if ((a | v->iov_len) % fk->page || v->iov_len == 0 || page_index(fk, a) < 0 ||
	    page_index(fk, a + v->iov_len - 1) < 0) {
		fk->violations++;
		return true;
	}
	return false;
}

/* ---- huge-page frames ---------------------------------------------------- */

static uintptr_t frame_base(const struct fake_kernel *fk)
{
	return fk->base & ~(fk->frame - 1);
}

size_t fake_nframes(const struct fake_kernel *fk)
{
	return (fk->base + fk->npages * fk->page - frame_base(fk) + fk->frame - 1) / fk->frame;
}

void fake_set_huge(struct fake_kernel *fk, uintptr_t addr, bool huge)
{
	fk->huge[(addr - frame_base(fk)) / fk->frame] = huge;
}

bool fake_is_huge(const struct fake_kernel *fk, uintptr_t addr)
{
	return fk->huge[(addr - frame_base(fk)) / fk->frame];
}

/* A purge of [a, a+len) in one go: a huge frame it covers is freed whole,
 * one it covers in part is split (mm/huge_memory.c: the PMD is split, the
 * huge page put on the deferred-split queue). */
static void apply_frames(struct fake_kernel *fk, uintptr_t a, size_t len)
{
	uintptr_t fb = frame_base(fk);

	for (uintptr_t f = (a - fb) / fk->frame * fk->frame + fb; f < a + len; f += fk->frame) {
		size_t i = (f - fb) / fk->frame;
		if (!fk->huge[i])
			continue;
		if (a <= f && f + fk->frame <= a + len)
			fk->whole_frees++;
		else
			fk->splits++;
		fk->huge[i] = 0;
	}
}

/* madvise semantics: apply every page that can be, report the first error */
static int apply(struct fake_kernel *fk, uintptr_t a, size_t len)
{
	int err = 0;

	if (len && page_index(fk, a) >= 0 && page_index(fk, a + len - 1) >= 0)
		apply_frames(fk, a, len);
	for (size_t off = 0; off < len; off += fk->page) {
		ssize_t i = page_index(fk, a + off);
		if (i < 0)
			return -ENOMEM;
		if (fk->fail[i]) {
			err = err ? err : fk->fail[i];
			continue;
		}
		fk->purged[i]++;
		if (fk->zero_memory)
			memset((void *)(a + off), 0, fk->page);
	}
	return err;
}

static ssize_t fake_pmadv(void *ctx, const struct iovec *iov, size_t n, int advice)
{
	struct fake_kernel *fk = ctx;
	size_t done = 0, cap = (size_t)INT_MAX & ~(fk->page - 1);

	(void)advice;
	if (fk->in_call)
		fk->in_call(fk->in_call_arg);
	fk->max_vlen = n > fk->max_vlen ? n : fk->max_vlen;
	fk->now += fk->call_ns;
	if (fk->pmadv_calls++ >= fk->refuse_after && fk->refuse)
		return fk->refuse;
	if (n > 1024)
		return -EINVAL;
	for (size_t k = 0; k < n; k++) {
		if (k > 0 &&
		    iov[k].iov_len == 0) { /* the kernel skips it; the library should not send it */
			fk->violations++;
			continue;
		}
		if (bad_iovec(fk, &iov[k]))
			return done ? (ssize_t)done : -EINVAL;
		size_t len = iov[k].iov_len;
		if (fk->truncate && done + len > cap)
			len = cap - done; /* silently, like __import_iovec */
		int err = apply(fk, (uintptr_t)iov[k].iov_base, len);
		if (err)
			return done ? (ssize_t)done : err;
		done += len;
		if (len < iov[k].iov_len)
			break;
	}
	fk->max_call_bytes = done > fk->max_call_bytes ? done : fk->max_call_bytes;
	return (ssize_t)done;
}

static int fake_madv(void *ctx, void *addr, size_t len, int advice)
{
	struct fake_kernel *fk = ctx;

	if (addr == NULL && len == 0)
		return (fk->unknown_advice_mask >> advice) & 1 ? -EINVAL : 0;
	if (fk->in_call)
		fk->in_call(fk->in_call_arg);
	fk->madv_calls++;
	fk->now += fk->call_ns;
	struct iovec v = {addr, len};
	if (bad_iovec(fk, &v))
		return -EINVAL;
	if (fk->madv_refuses_too && fk->refuse == -EPERM)
		return -EPERM;
	return apply(fk, (uintptr_t)addr, len);
}

static int fake_path(void *ctx, int advice, bool probe)
{
	struct fake_kernel *fk = ctx;

	(void)advice;
	fk->probed |= probe;
	return fk->probed ? fk->path : 0;
}

static void fake_demote(void *ctx, int advice)
{
	struct fake_kernel *fk = ctx;

	(void)advice;
	fk->demotions++;
	fk->path = PURGE_BACKEND_LOOP;
}

static uint64_t fake_now(void *ctx, bool coarse)
{
	struct fake_kernel *fk = ctx;

	(void)coarse;
	fk->now_calls++;
	return fk->now;
}

static size_t fake_page_size(void *ctx)
{
	return ((struct fake_kernel *)ctx)->page;
}

static size_t fake_frame_size(void *ctx)
{
	return ((struct fake_kernel *)ctx)->frame;
}

/* A scan handle: the open fails with spans_err when set (the kernel
 * cannot tell); scans through a handle that is not open are violations. */
static int fake_scan_open(void *ctx)
{
	struct fake_kernel *fk = ctx;

	fk->scan_opens++;
	if (fk->spans_err)
		return fk->spans_err;
	fk->open_scans++;
	return 7;
}

static void fake_scan_close(void *ctx, int h)
{
	struct fake_kernel *fk = ctx;

	if (h != 7 || fk->open_scans == 0)
		fk->violations++;
	else
		fk->open_scans--;
}

/* Like PAGEMAP_SCAN with PAGE_IS_HUGE: the huge frames of [lo, hi), merged.
 * `scanned` counts the bytes asked about (the kernel walks all of them). */
static ssize_t fake_huge_spans(void *ctx, int h, uintptr_t lo, uintptr_t hi, struct iovec *out,
                               size_t max, uintptr_t *done)
{
	struct fake_kernel *fk = ctx;
	uintptr_t fb = frame_base(fk), f = lo < fb ? fb : (lo - fb) / fk->frame * fk->frame + fb;
	size_t n = 0, nf = fake_nframes(fk);

	fk->scans++;
	if (h != 7 || fk->open_scans == 0 || hi <= lo)
		fk->violations++;
	fk->scanned += hi - lo;
	*done = hi;
	for (; f < hi && (f - fb) / fk->frame < nf; f += fk->frame) {
		if (!fk->huge[(f - fb) / fk->frame])
			continue;
		uintptr_t s = f > lo ? f : lo, e = f + fk->frame < hi ? f + fk->frame : hi;
		if (n && (uintptr_t)out[n - 1].iov_base + out[n - 1].iov_len == s) {
			out[n - 1].iov_len += e - s;
			continue;
		}
		if (n == max) {
			*done = s;
			break;
		}
		out[n++] = (struct iovec){(void *)s, e - s};
	}
	return (ssize_t)n;
}

void fake_init_page(struct fake_kernel *fk, uintptr_t base, size_t npages, size_t page)
{
	*fk = (struct fake_kernel){
	    .base = base,
	    .npages = npages,
	    .page = page,
	    .purged = calloc(npages, sizeof(uint16_t)),
	    .fail = calloc(npages, sizeof(int)),
	    .path = PURGE_BACKEND_VECTORED,
	    .truncate = true,
	    .now = 1000000000, /* 1 s: a stamp of 0 would read as "nothing pending" */
	    .frame = (size_t)2 << 20,
	};
	fk->huge = calloc(fake_nframes(fk), 1);
	fk->be = (struct purge__backend){
	    .pmadv = fake_pmadv,
	    .madv = fake_madv,
	    .path = fake_path,
	    .demote = fake_demote,
	    .now = fake_now,
	    .page_size = fake_page_size,
	    .frame_size = fake_frame_size,
	    .scan_open = fake_scan_open,
	    .huge_spans = fake_huge_spans,
	    .scan_close = fake_scan_close,
	    .ctx = fk,
	};
}

void fake_init(struct fake_kernel *fk, uintptr_t base, size_t npages)
{
	fake_init_page(fk, base, npages, (size_t)sysconf(_SC_PAGESIZE));
}

/* Frames of `frame` bytes (a power of two, a page multiple), none huge. */
void fake_set_frame(struct fake_kernel *fk, size_t frame)
{
	free(fk->huge);
	fk->frame = frame;
	fk->huge = calloc(fake_nframes(fk), 1);
}

void fake_free(struct fake_kernel *fk)
{
	free(fk->huge);
	free(fk->purged);
	free(fk->fail);
}

void fake_fail_page(struct fake_kernel *fk, uintptr_t addr, int err)
{
	fk->fail[page_index(fk, addr)] = err;
}

unsigned fake_purged(const struct fake_kernel *fk, uintptr_t addr)
{
	return fk->purged[page_index(fk, addr)];
}

bool fake_range_purged(const struct fake_kernel *fk, uintptr_t addr, size_t len, unsigned times)
{
	for (size_t off = 0; off < len; off += fk->page)
		if (fake_purged(fk, addr + off) != times)
			return false;
	return true;
}

size_t fake_total_purges(const struct fake_kernel *fk)
{
	size_t t = 0;

	for (size_t i = 0; i < fk->npages; i++)
		t += fk->purged[i];
	return t;
}
