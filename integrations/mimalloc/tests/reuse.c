/* SPDX-License-Identifier: MIT */
/*
 * reuse: memory whose purge is still queued, reused, under a preloaded
 * mimalloc (run it with MIMALLOC_DECOMMIT_DELAY=0 and a long
 * MIMALLOC_PURGE_MAX_DELAY, so that what is freed stays queued).
 *
 *   reuse zero   threads fill and free blocks of 64 KiB..4 MiB and exit
 *                (their segments are abandoned with the purges queued);
 *                the main thread callocs the same sizes (it reclaims those
 *                segments) and checks every byte is zero;
 *   reuse live   the same, then the main thread writes a canary into every
 *                block it holds, frees others (more purges queued), asks
 *                mimalloc to collect (every queued purge is flushed) and
 *                checks that no canary byte was purged;
 *                (and pages them out: a reset, MADV_FREE, that came after
 *                the write would let the kernel drop the page then);
 *   reuse unmap  a huge block freed by another thread is decommitted
 *                (queued) and its segment unmapped; the range is mapped
 *                again with MAP_FIXED_NOREPLACE and filled, every queued
 *                purge is flushed: none may hit the new mapping;
 *   reuse fork   threads allocate and free while the main thread forks;
 *                each child reuses queued memory, collects, checks its
 *                canaries and exits; the parent checks every child.
 *
 * Only malloc/calloc/free, and mi_collect found with dlsym: no link to
 * mimalloc.  Exit 0 pass, 1 a check failed, 77 no mimalloc preloaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NBLOCKS 32

static void (*mi_collect_fn)(bool force);

static size_t block_size(unsigned i)
{
	/* 64 KiB .. 1 MiB: medium and large pages, spans of several slices */
	return (size_t)(64u << (i % 5)) * 1024u - 16u * (i % 3);
}

static uint8_t canary(uintptr_t p, size_t i)
{
	return (uint8_t)((p >> 12) * 31u + i * 7u + 1u) | 1u; /* never 0 */
}

static void fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 512)
		p[i] = canary((uintptr_t)p, i);
	p[len - 1] = canary((uintptr_t)p, len - 1);
}

static int check(const uint8_t *p, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i += 512)
		if (p[i] != canary((uintptr_t)p, i)) {
			fprintf(stderr, "reuse: %s: CANARY FAILED at %p+%zu of %zu: %#x\n", what,
			        (const void *)p, i, len, p[i]);
			return 1;
		}
	if (p[len - 1] != canary((uintptr_t)p, len - 1)) {
		fprintf(stderr, "reuse: %s: CANARY FAILED at the end of %p\n", what,
		        (const void *)p);
		return 1;
	}
	return 0;
}

static int check_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0) {
			fprintf(stderr, "reuse: calloc: NOT ZERO at %p+%zu of %zu: %#x\n",
			        (const void *)p, i, len, p[i]);
			return 1;
		}
	return 0;
}

/* fill blocks with non-zero bytes and free them: their spans are freed and,
 * with a decommit delay of 0, queued for purge at once */
static void *dirty_and_free(void *arg)
{
	unsigned rounds = (unsigned)(uintptr_t)arg;
	for (unsigned r = 0; r < rounds; r++) {
		void *b[NBLOCKS];
		for (unsigned i = 0; i < NBLOCKS; i++) {
			b[i] = malloc(block_size(i));
			if (b[i] == NULL)
				abort();
			memset(b[i], 0xa5, block_size(i));
		}
		for (unsigned i = 0; i < NBLOCKS; i++)
			free(b[i]);
	}
	return NULL;
}

static void run_dirtiers(unsigned nthreads, unsigned rounds)
{
	pthread_t t[8];
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, dirty_and_free, (void *)(uintptr_t)rounds) != 0)
			abort();
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
}

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
/* reclaim the block's whole pages now: a lazily freed (MADV_FREE) page is
 * dropped, a dirty one stays (no swap) or comes back from swap */
static void pageout(void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095,
	          e = ((uintptr_t)p + len) & ~(uintptr_t)4095;
	if (e > a)
		(void)madvise((void *)a, e - a, MADV_PAGEOUT);
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static int unmap_reuse(void)
{
	const size_t sz = 40u << 20, seg = 32u << 20; /* a huge block; MI_SEGMENT_SIZE */
	int bad = 0, tried = 0;
	for (unsigned round = 0; round < 10 && !bad; round++) {
		uint8_t *p = malloc(sz);
		if (p == NULL)
			abort();
		memset(p, 0x5a, sz);
		pthread_t t; /* freed by another thread: its pages are decommitted, queued */
		if (pthread_create(&t, NULL, free_it, p) != 0)
			abort();
		pthread_join(t, NULL);
		mi_collect_fn(false); /* the owner frees the segment: munmap */
		uintptr_t base = (uintptr_t)p & ~(uintptr_t)(seg - 1);
		size_t len = (uintptr_t)p + sz - base;
		uint8_t *q = mmap((void *)base, len, PROT_READ | PROT_WRITE,
		                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (q == MAP_FAILED || (uintptr_t)q != base) {
			if (q != MAP_FAILED)
				munmap(q, len);
			continue; /* not unmapped (yet): nothing to learn this round */
		}
		tried++;
		fill(q, len);
		mi_collect_fn(true); /* flush every queued purge */
		bad |= check(q, len, "remapped after munmap");
		munmap(q, len);
	}
	if (!bad && tried == 0)
		fprintf(stderr,
		        "reuse: unmap: no segment was unmapped where it could be mapped again\n");
	return bad || tried == 0;
}

static int zero_and_live(bool live, unsigned rounds)
{
	int bad = 0;
	for (unsigned round = 0; round < rounds && !bad; round++) {
		run_dirtiers(2, 2);
		dirty_and_free((void *)(uintptr_t)1); /* and in this thread */
		uint8_t *b[NBLOCKS];
		for (unsigned i = 0; i < NBLOCKS; i++) {
			b[i] = calloc(1, block_size(i));
			if (b[i] == NULL)
				abort();
			bad |= check_zero(b[i], block_size(i));
		}
		if (live) {
			for (unsigned i = 0; i < NBLOCKS; i++)
				fill(b[i], block_size(i));
			dirty_and_free(
			    (void *)(uintptr_t)2); /* more queued purges, next to live blocks */
			run_dirtiers(2, 1);
			mi_collect_fn(true); /* flush every queued purge */
			for (unsigned i = 0; i < NBLOCKS; i++)
				pageout(b[i], block_size(i));
			for (unsigned i = 0; i < NBLOCKS; i++)
				bad |= check(b[i], block_size(i), "after collect");
		}
		for (unsigned i = 0; i < NBLOCKS; i++)
			free(b[i]);
	}
	return bad;
}

static atomic_bool stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		dirty_and_free((void *)(uintptr_t)1);
	return NULL;
}

static int forks(void)
{
	pthread_t t[2];
	for (unsigned i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, churn, NULL) != 0)
			abort();
	int bad = 0;
	for (unsigned n = 0; n < 12 && !bad; n++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			bad = 1;
			break;
		}
		if (pid == 0) {
			alarm(60); /* a queue lock left taken by the fork would hang here */
			_exit(zero_and_live(true, 1));
		}
		int st = 0;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "reuse: fork %u: child %s %d\n", n,
			        WIFSIGNALED(st) ? "killed by signal" : "exit",
			        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			bad = 1;
		}
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr,
		        "usage: reuse zero|live|unmap|fork (under LD_PRELOAD=libmimalloc.so)\n");
		return 2;
	}
	*(void **)&mi_collect_fn = dlsym(RTLD_DEFAULT, "mi_collect");
	if (mi_collect_fn == NULL) {
		fprintf(stderr, "reuse: no mimalloc preloaded (no mi_collect)\n");
		return 77;
	}
	int bad;
	if (strcmp(argv[1], "zero") == 0)
		bad = zero_and_live(false, 6);
	else if (strcmp(argv[1], "live") == 0)
		bad = zero_and_live(true, 6);
	else if (strcmp(argv[1], "unmap") == 0)
		bad = unmap_reuse();
	else if (strcmp(argv[1], "fork") == 0)
		bad = forks();
	else
		return 2;
	printf("reuse %s: %s\n", argv[1], bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
