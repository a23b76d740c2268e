/* SPDX-License-Identifier: MIT */
/*
 * The real kernel behind the backend table: process_madvise on PIDFD_SELF,
 * madvise, the page size, and the one-time, process-wide probe that picks
 * process_madvise or the loop.  (The clock is read inline by purge__now()
 * when a backend has none; setup.c maps and unmaps queue storage.)
 */
#include "compat.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "advice.h"
#include "internal.h"
#include "syscall.h"

/* Process-wide probe result per advice, one slot a row of the advice table
 * (the library's only mutable global state): 0 = not known yet, else
 * PURGE_BACKEND_*. */
static _Atomic int sys_probe_state[PURGE_ADVICE_COUNT];

/* What a probe call's answer says about the call, as opposed to its page
 * (docs/kernel-notes.md §9.2, §10): ENOSYS (no syscall, or a seccomp
 * rule), EBADF (no PIDFD_SELF: Linux < 6.15) and ESRCH are about the call.
 * EPERM (seccomp, or a sealed page) and EINVAL (advice not allowed for
 * self, or a locked page) are about the call only when madvise() does the
 * same page fine.  Anything else tells nothing: -1, ask again later. */
static int sys_verdict(ssize_t ret, void *page, size_t len, int advice)
{
	if (ret == (ssize_t)len)
		return PURGE_BACKEND_VECTORED;
	if (ret == -ENOSYS || ret == -EBADF || ret == -ESRCH || ret >= 0)
		return PURGE_BACKEND_LOOP;
	if (ret == -EPERM || ret == -EINVAL)
		return purge__sys_madvise(page, len, advice) == 0 ? PURGE_BACKEND_LOOP : -1;
	return -1;
}

/* A real one-page call on a scratch page of our own: a zero-length call
 * proves nothing (6.18 returns 0 even for an invalid advice,
 * docs/kernel-notes.md §8.7).  The page is unlocked first, for processes
 * that called mlockall(MCL_FUTURE). */
static int sys_probe_once(int advice)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	munlock(p, page);
	*(volatile char *)p = 1;
	struct iovec iov = {.iov_base = p, .iov_len = page};
	int got = sys_verdict(purge__sys_process_madvise(&iov, 1, advice), p, page, advice);
	munmap(p, page);
	return got;
}

static _Atomic int *sys_slot(int advice)
{
	const struct purge__advice *a = purge__advice_find(advice);

	return a ? &sys_probe_state[purge__advice_slot(a)] : NULL;
}

int purge__probe_peek(int advice)
{
	_Atomic int *slot = sys_slot(advice);

	return slot ? atomic_load_explicit(slot, memory_order_relaxed) : -EINVAL;
}

int purge__probe(int advice)
{
	int st = purge__probe_peek(advice);

	if (st != 0)
		return st;
	if (st < 0)
		return st;
	int got = sys_probe_once(advice), expect = 0;
	if (got < 0)
		return PURGE_BACKEND_LOOP; /* inconclusive: the loop for now */
	/* a concurrent demotion wins over our older view */
	if (!atomic_compare_exchange_strong(sys_slot(advice), &expect, got))
		got = expect;
	return got;
}

static int sys_path(void *ctx, int advice, bool probe)
{
	(void)ctx;
	return probe ? purge__probe(advice) : purge__probe_peek(advice);
}

static void sys_demote(void *ctx, int advice)
{
	_Atomic int *slot = sys_slot(advice);

	(void)ctx;
	if (slot)
		atomic_store(slot, PURGE_BACKEND_LOOP);
}

static ssize_t sys_pmadv(void *ctx, const struct iovec *iov, size_t n, int advice)
{
	(void)ctx;
	return purge__sys_process_madvise(iov, n, advice);
}

static int sys_madv(void *ctx, void *addr, size_t len, int advice)
{
	(void)ctx;
	return purge__sys_madvise(addr, len, advice);
}

static size_t sys_page_size(void *ctx)
{
	(void)ctx;
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* What a PMD maps: the kernel says (mm/huge_memory.c, hpage_pmd_size);
 * else one page table's pages of pointer-sized entries (2 MiB with 4 KiB
 * pages). */
static size_t sys_frame_size(void *ctx)
{
	size_t page = sys_page_size(ctx), frame = page * (page / sizeof(void *));
	char buf[32];
	int fd = open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return frame;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		unsigned long long v = strtoull(buf, NULL, 10);
		if (v >= page && (v & (v - 1)) == 0)
			frame = (size_t)v;
	}
	return frame;
}

/* The pagemap of this process, opened for one flush round: an fd kept
 * open would name the parent after fork().  errno is left alone. */
static int sys_scan_open(void *ctx)
{
	int saved = errno, fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int ret = fd < 0 ? -errno : fd;

	(void)ctx;
	errno = saved;
	return ret;
}

static void sys_scan_close(void *ctx, int fd)
{
	int saved = errno;

	(void)ctx;
	close(fd);
	errno = saved;
}

/* One PAGEMAP_SCAN ioctl: the kernel walks [lo, hi) entry by entry. */
static ssize_t sys_huge_spans(void *ctx, int fd, uintptr_t lo, uintptr_t hi, struct iovec *out,
                              size_t max, uintptr_t *done)
{
	struct page_region v[32];
	struct pm_scan_arg a = {.size = sizeof(a),
	                        .start = lo,
	                        .end = hi,
	                        .vec = (uintptr_t)v,
	                        .vec_len = max < 32 ? max : 32,
	                        .category_anyof_mask = PAGE_IS_HUGE,
	                        .return_mask = PAGE_IS_HUGE};
	int saved = errno, n = ioctl(fd, PAGEMAP_SCAN, &a);
	int err = n < 0 ? -errno : 0;

	(void)ctx;
	errno = saved;
	if (n < 0)
		return err;
	for (int i = 0; i < n; i++)
		out[i] = (struct iovec){(void *)(uintptr_t)v[i].start, v[i].end - v[i].start};
	*done = a.walk_end ? (uintptr_t)a.walk_end : hi;
	return n;
}

const struct purge__backend purge__sys_backend = {
    .pmadv = sys_pmadv,
    .madv = sys_madv,
    .path = sys_path,
    .demote = sys_demote,
    .now = NULL, /* purge__now() reads the system clocks without a call */
    .page_size = sys_page_size,
    .frame_size = sys_frame_size,
    .scan_open = sys_scan_open,
    .huge_spans = sys_huge_spans,
    .scan_close = sys_scan_close,
    .ctx = NULL,
};
