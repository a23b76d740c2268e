/* SPDX-License-Identifier: MIT */
/*
 * The only file that makes memory system calls: the real kernel backend and
 * the one-time, process-wide probe that picks process_madvise or the loop.
 */
#include <stdatomic.h>
#include <time.h>

#include "internal.h"
#include "syscall.h"

/* Process-wide probe result per advice (the library's only mutable global
 * state).  0 = not probed; else PURGE_BACKEND_* | (-errno << 8) for LOOP. */
#define PROBE_SLOTS 32
static _Atomic int probe_state[PROBE_SLOTS];

static int state_pack(int backend, int why)
{
	return backend | ((-why) << 8);
}

/* A real one-page call on a scratch page we map ourselves: a zero-length call
 * proves nothing (6.18 returns 0 even for an invalid advice, kernel-notes §8.7). */
static int probe_once(int advice, int *why)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		*why = -errno;
		return -1; /* transient: answer LOOP now, probe again later */
	}
	*(volatile char *)p = 1;
	struct iovec iov = {.iov_base = p, .iov_len = page};
	ssize_t ret = purge__sys_process_madvise(&iov, 1, advice);
	munmap(p, page);
	if (ret == (ssize_t)page)
		return PURGE_BACKEND_VECTORED;
	*why = ret < 0 ? (int)ret : -EIO;
	/* kernel-notes §9.2: these mean "never here"; other errors may pass */
	if (ret >= 0 || ret == -ENOSYS || ret == -EPERM || ret == -EBADF || ret == -EINVAL)
		return PURGE_BACKEND_LOOP;
	return -1;
}

int purge__probe(int advice, int *why)
{
	if (advice < 0 || advice >= PROBE_SLOTS)
		return -EINVAL;
	int st = atomic_load_explicit(&probe_state[advice], memory_order_relaxed);
	if (st == 0) {
		int w = 0, got = probe_once(advice, &w);
		if (got < 0) {
			*why = w;
			return PURGE_BACKEND_LOOP;
		}
		int expect = 0;
		/* a concurrent demotion wins over our older view */
		if (!atomic_compare_exchange_strong(&probe_state[advice], &expect,
		                                    state_pack(got, w)))
			got = expect & 0xff, w = -(expect >> 8);
		*why = w;
		return got;
	}
	*why = -(st >> 8);
	return st & 0xff;
}

static void sys_demote(void *ctx, int advice, int why)
{
	(void)ctx;
	if (advice >= 0 && advice < PROBE_SLOTS)
		atomic_store(&probe_state[advice], state_pack(PURGE_BACKEND_LOOP, why));
}

static int sys_path(void *ctx, int advice, int *why)
{
	(void)ctx;
	return purge__probe(advice, why);
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
    .ctx = NULL,
};

uint64_t purge__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
