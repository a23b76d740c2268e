/* SPDX-License-Identifier: MIT */
/*
 * reuse: memory whose purge is pending, reused, under a preloaded mimalloc
 * v3 (run it with MIMALLOC_PURGE_DELAY=0, where the patched library lets
 * freed ranges wait for a batch, and at the default delay).
 *
 *   reuse zero   threads fill and free blocks of 64 KiB..4 MiB and exit
 *                (their pages are abandoned with purges pending); the main
 *                thread callocs the same sizes and checks every byte is
 *                zero;
 *   reuse live   the same, then the main thread writes a canary into every
 *                block it holds, frees others (more purges pending), asks
 *                mimalloc to collect (every pending purge is done) and
 *                checks that no canary byte was purged;
 *                (and pages them out: a reset, MADV_FREE, that came after
 *                the write would let the kernel drop the page then);
 *   reuse fork   threads allocate and free while the main thread forks;
 *                each child reuses freed memory, collects, checks its
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

/* fill blocks with non-zero bytes and free them: their pages are freed and,
 * with a purge delay of 0, scheduled for purge at once */
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
			    (void *)(uintptr_t)2); /* more pending purges, next to live blocks */
			run_dirtiers(2, 1);
			mi_collect_fn(true); /* every pending purge done */
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
			alarm(60); /* a lock left taken by the fork would hang here */
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
		        "usage: reuse zero|live|fork (under LD_PRELOAD=libmimalloc.so.3)\n");
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
	else if (strcmp(argv[1], "fork") == 0)
		bad = forks();
	else
		return 2;
	printf("reuse %s: %s\n", argv[1], bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
