/* SPDX-License-Identifier: MIT */
/*
 * The only file that makes memory system calls: the real kernel backend,
 * its clock, and the one-time, process-wide probe that picks
 * process_madvise or the loop.
 */
#include "compat.h"

#include <stdatomic.h>
#include <time.h>

#include "internal.h"
#include "syscall.h"

/* Process-wide probe result per advice (the library's only mutable global
 * state): 0 = not known yet, else PURGE_BACKEND_*. */
#define PROBE_SLOTS 32
static _Atomic int probe_state[PROBE_SLOTS];

/* What a probe call's answer says about the call, as opposed to its page
 * (docs/kernel-notes.md §9.2, §10): ENOSYS (no syscall, or a seccomp
 * rule), EBADF (no PIDFD_SELF: Linux < 6.15) and ESRCH are about the call.
 * EPERM (seccomp, or a sealed page) and EINVAL (advice not allowed for
 * self, or a locked page) are about the call only when madvise() does the
 * same page fine.  Anything else tells nothing: -1, ask again later. */
static int verdict(ssize_t ret, void *page, size_t len, int advice)
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
static int probe_once(int advice)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	munlock(p, page);
	*(volatile char *)p = 1;
	struct iovec iov = {.iov_base = p, .iov_len = page};
	int got = verdict(purge__sys_process_madvise(&iov, 1, advice), p, page, advice);
	munmap(p, page);
	return got;
}

int purge__probe_peek(int advice)
{
	if (advice < 0 || advice >= PROBE_SLOTS)
		return -EINVAL;
	return atomic_load_explicit(&probe_state[advice], memory_order_relaxed);
}

int purge__probe(int advice)
{
	int st = purge__probe_peek(advice);

	if (st != 0)
		return st;
	int got = probe_once(advice), expect = 0;
	if (got < 0)
		return PURGE_BACKEND_LOOP; /* inconclusive: the loop for now */
	/* a concurrent demotion wins over our older view */
	if (!atomic_compare_exchange_strong(&probe_state[advice], &expect, got))
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
	(void)ctx;
	if (advice >= 0 && advice < PROBE_SLOTS)
		atomic_store(&probe_state[advice], PURGE_BACKEND_LOOP);
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

const struct purge__backend purge__sys_backend = {
    .pmadv = sys_pmadv,
    .madv = sys_madv,
    .path = sys_path,
    .demote = sys_demote,
    .now = NULL, /* purge__now() reads the system clocks without a call */
    .ctx = NULL,
};
