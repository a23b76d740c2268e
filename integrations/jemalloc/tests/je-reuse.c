/* SPDX-License-Identifier: MIT */
/*
 * je-reuse: the reuse path of the patched jemalloc (integrations/jemalloc),
 * run with the patched libjemalloc.so.2 preloaded (test-jemalloc.sh).
 *
 *   je-reuse zeros      calloc after reuse of pending and of purged extents
 *                       returns zeros; malloc after reuse of a pending one
 *                       still has the old bytes (its purge never ran)
 *   je-reuse canaries   live blocks keep their bytes while others are freed,
 *                       reused and purged (2 threads, mallctl purges)
 *   je-reuse fork       a child allocates, frees and purges; the parent's
 *                       queue is what it was before the fork
 *   je-reuse forkflush  forks while another thread's arena.<i>.purge is
 *                       flushing (with process_madvise_max_batch:1, one
 *                       call a range):
 *                       neither deadlocks (alarms), the child's allocator
 *                       works and the flusher's live blocks keep their bytes
 *   je-reuse counters   the counters move and add up; malloc_stats_print
 *                       has them
 *   je-reuse background with background_thread:true the background thread
 *                       settles what application threads enqueued
 *   je-reuse calloc     calloc reusing pending extents clears them in place:
 *                       their pages stay resident (no MADV_DONTNEED, no
 *                       refault), and read as zero
 *   je-reuse stats      dirty_purged, dirty_nmadvise and resident (at the
 *                       epoch) count a purge when the queue settles it, not
 *                       when decay enqueues it
 *   je-reuse bound      4 threads on 4 automatic arenas each free 7 MiB: what
 *                       stays pending in all of them together is at most
 *                       purge_max_pending (the test's MALLOC_CONF sets it)
 *   je-reuse pressure   a byte written to the FIFO $MEMORY_PRESSURE_WATCH
 *                       names makes the background thread flush what is
 *                       pending (with purge_pressure:false, it does not)
 *   je-reuse idle       what is pending is flushed once nothing has been
 *                       enqueued for purge_idle_ms (with -1, it is not)
 *   je-reuse maxcall    a flush of 64 scattered 256 KiB extents (16 MiB)
 *                       makes at least 16 MiB / purge_max_call system calls
 *                       (the test's MALLOC_CONF sets the cap and holds the
 *                       extents pending until arena.<i>.purge)
 *
 * Exit status: 0 pass, 77 skip (not running under the patched jemalloc),
 * 1 fail.  It needs no jemalloc header: mallctl is found with dlsym.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef void (*stats_print_fn)(void (*)(void *, const char *), void *, const char *);
static mallctl_fn je_mallctl;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "je-reuse: FAIL %s:%d: ", __func__, __LINE__);                     \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

/* The stats as of a new epoch, as jemalloc's other counters are read. */
static void epoch(void)
{
	uint64_t e = 1;
	if (je_mallctl("epoch", NULL, NULL, &e, sizeof(e)) != 0)
		FAIL("mallctl epoch");
}

static uint64_t stat_u64(const char *name)
{
	uint64_t v = 0;
	size_t sz = sizeof(v);
	if (je_mallctl(name, &v, &sz, NULL, 0) != 0)
		FAIL("mallctl %s", name);
	return v;
}

static size_t stat_zu(const char *name)
{
	size_t v = 0;
	size_t sz = sizeof(v);
	if (je_mallctl(name, &v, &sz, NULL, 0) != 0)
		FAIL("mallctl %s", name);
	return v;
}

static uint64_t lp(const char *field)
{
	char name[128];
	uint64_t v = 0;
	size_t sz = sizeof(v);
	epoch();
	snprintf(name, sizeof name, "stats.arenas.4096.libpurge.%s", field);
	if (je_mallctl(name, &v, &sz, NULL, 0) != 0)
		FAIL("mallctl %s", name);
	return v;
}

static void ctl_void(const char *name)
{
	if (je_mallctl(name, NULL, NULL, NULL, 0) != 0)
		FAIL("mallctl %s", name);
}

static void purge_all(void)
{
	ctl_void("arena.4096.purge");
}

/* Large blocks: above the tcache limit, so a free reaches the arena. */
#define BIG   (256u << 10)
#define NBIG  32
#define SMALL 48

static void fill(unsigned char *p, size_t n, unsigned char v)
{
	memset(p, v, n);
}

static size_t count_not(const unsigned char *p, size_t n, unsigned char v)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != v;
	return bad;
}

static int cmd_zeros(void)
{
	void *p[NBIG];
	/* pending: freed, enqueued, never flushed (the test's MALLOC_CONF has
	 * no delay and no pending limit) */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < NBIG; i++) {
			p[i] = malloc(BIG);
			if (p[i] == NULL)
				FAIL("malloc");
			fill(p[i], BIG, 0xab);
		}
		for (int i = 0; i < NBIG; i++)
			free(p[i]);
		if (round == 1)
			purge_all(); /* purged: the queue flushed */
		uint64_t pending = lp("pending_bytes");
		if (round == 0 && pending == 0)
			FAIL("nothing pending after free (dirty_decay_ms:0, no delay limit?)");
		if (round == 1 && pending != 0)
			FAIL("%llu bytes pending after arena.4096.purge",
			     (unsigned long long)pending);
		uint64_t cancelled = lp("cancelled_bytes");
		for (int i = 0; i < NBIG; i++) {
			p[i] = calloc(1, BIG);
			if (p[i] == NULL)
				FAIL("calloc");
			size_t bad = count_not(p[i], BIG, 0);
			if (bad)
				FAIL("round %d (%s): calloc of a reused block has %zu non-zero "
				     "bytes",
				     round, round ? "purged" : "pending", bad);
		}
		if (round == 0 && lp("cancelled_bytes") == cancelled)
			FAIL("calloc reused no pending extent (cancelled_bytes did not move)");
		for (int i = 0; i < NBIG; i++)
			free(p[i]);
		purge_all();
	}
	/* malloc after reuse of a pending extent: its purge never ran, the
	 * old bytes are still there (no purge, no refault) */
	for (int i = 0; i < NBIG; i++) {
		p[i] = malloc(BIG);
		fill(p[i], BIG, 0x5a);
	}
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	size_t kept = 0;
	for (int i = 0; i < NBIG; i++) {
		p[i] = malloc(BIG);
		/* the middle pages: with cache_oblivious a block starts at a
		 * random offset into its extent's first page */
		kept += count_not((unsigned char *)p[i] + 4096, BIG - 8192, 0x5a) == 0;
		fill(p[i], BIG, 0x11); /* written after the cancel */
	}
	if (kept == 0)
		FAIL("no reused pending block kept its bytes: purged before reuse?");
	purge_all(); /* must not touch live blocks */
	for (int i = 0; i < NBIG; i++) {
		size_t bad = count_not(p[i], BIG, 0x11);
		if (bad)
			FAIL("a live block lost %zu bytes to a flush", bad);
		free(p[i]);
	}
	printf("zeros: ok (%zu/%d reused pending blocks kept their bytes)\n", kept, NBIG);
	return 0;
}

/* ---- canaries ---- */
struct blk {
	unsigned char *p;
	size_t n;
	unsigned char v;
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t pick_size(uint64_t *s)
{
	switch (rng(s) % 4) {
	case 0:
		return 16 + rng(s) % 4096;
	case 1:
		return 16384 + rng(s) % 65536;
	case 2:
		return (64u << 10) + rng(s) % (512u << 10);
	default:
		return (1u << 20) + rng(s) % (3u << 20);
	}
}

static void check_blk(const struct blk *b)
{
	/* first, last and a few bytes between: whole pages would be lost */
	size_t step = b->n / 61 + 1;
	for (size_t i = 0; i < b->n; i += step)
		if (b->p[i] != b->v)
			FAIL("canary lost at %p+%zu (size %zu): %#x, not %#x", (void *)b->p, i,
			     b->n, b->p[i], b->v);
	if (b->p[b->n - 1] != b->v)
		FAIL("canary lost at the end of %p (size %zu)", (void *)b->p, b->n);
}

static void *canary_thread(void *arg)
{
	uint64_t s = (uintptr_t)arg;
	enum { N = 96 };
	struct blk b[N] = {{0}};
	for (int it = 0; it < 6000; it++) {
		int i = (int)(rng(&s) % N);
		if (b[i].p) {
			check_blk(&b[i]);
			free(b[i].p);
			b[i].p = NULL;
		} else {
			b[i].n = pick_size(&s);
			b[i].v = (unsigned char)(rng(&s) | 1);
			b[i].p = (rng(&s) & 1) ? calloc(1, b[i].n) : malloc(b[i].n);
			if (b[i].p == NULL)
				FAIL("malloc %zu", b[i].n);
			fill(b[i].p, b[i].n, b[i].v);
		}
		if (it % 500 == 0)
			purge_all();
		else if (it % 250 == 0)
			ctl_void("arena.4096.decay");
	}
	for (int i = 0; i < N; i++)
		if (b[i].p) {
			check_blk(&b[i]);
			free(b[i].p);
		}
	return NULL;
}

static int cmd_canaries(void)
{
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, canary_thread,
		                   (void *)(i * 7919 + 88172645463325252ull)))
			FAIL("pthread_create");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("canaries: ok (enqueued %llu bytes, cancelled %llu, purged %llu)\n",
	       (unsigned long long)lp("enqueued_bytes"), (unsigned long long)lp("cancelled_bytes"),
	       (unsigned long long)lp("purged_bytes"));
	return 0;
}

/* ---- fork while a flush runs ---- */
#define FF_N 256 /* 256 KiB blocks: every other one freed, 128 ranges */
static void *ff_blk[FF_N];
static volatile int ff_stop;
static volatile int ff_in_flush;       /* the flusher is inside arena.<i>.purge */
static volatile unsigned long ff_done; /* purges it finished */

static void *ff_flusher(void *arg)
{
	(void)arg;
	for (unsigned long r = 0; !ff_stop; r++) {
		unsigned char v = (unsigned char)(r | 1);
		for (int i = 0; i < FF_N; i++)
			fill(ff_blk[i] = malloc(BIG), BIG, v);
		for (int i = 0; i < FF_N; i += 2)
			free(ff_blk[i]);
		__atomic_store_n(&ff_in_flush, 1, __ATOMIC_SEQ_CST);
		purge_all();
		__atomic_store_n(&ff_in_flush, 0, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&ff_done, 1, __ATOMIC_SEQ_CST);
		for (int i = 1; i < FF_N; i += 2) {
			if (count_not(ff_blk[i], BIG, v))
				FAIL("flusher's live block lost its bytes");
			free(ff_blk[i]);
		}
	}
	return NULL;
}

/* The child of a fork taken while the flusher may be mid-flush. */
static void ff_child(void)
{
	alarm(30); /* a hang ends as a failure */
	if (ff_in_flush) {
		/* forked after the flusher filled and freed: its live half is whole */
		unsigned char v = ((unsigned char *)ff_blk[1])[0];
		for (int i = 1; i < FF_N; i += 2)
			if (count_not(ff_blk[i], BIG, v))
				_exit(3);
	}
	void *q[NBIG];
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < NBIG; i++)
			fill(q[i] = malloc(BIG), BIG, (unsigned char)(r + 1));
		for (int i = 0; i < NBIG; i += 2)
			free(q[i]);
		purge_all();
		for (int i = 1; i < NBIG; i += 2) {
			if (count_not(q[i], BIG, (unsigned char)(r + 1)))
				_exit(4);
			free(q[i]);
		}
	}
	unsigned char *z = calloc(1, BIG);
	if (z == NULL || count_not(z, BIG, 0))
		_exit(5);
	free(z);
	purge_all();
	if (lp("pending_bytes") != 0)
		_exit(6);
	_exit(0);
}

static int cmd_forkflush(void)
{
	pthread_t t;
	int landed = 0, forks = 0;
	if (pthread_create(&t, NULL, ff_flusher, NULL))
		FAIL("pthread_create");
	while (forks < 400 && landed < 20) {
		/* fork as soon as the flusher is inside its purge */
		while (!__atomic_load_n(&ff_in_flush, __ATOMIC_SEQ_CST))
			sched_yield();
		unsigned long done = __atomic_load_n(&ff_done, __ATOMIC_SEQ_CST);
		pid_t pid = fork();
		if (pid < 0)
			FAIL("fork");
		if (pid == 0)
			ff_child();
		forks++;
		if (__atomic_load_n(&ff_in_flush, __ATOMIC_SEQ_CST) &&
		    __atomic_load_n(&ff_done, __ATOMIC_SEQ_CST) == done)
			landed++; /* the same purge ran before and after the fork */
		int st;
		alarm(60);
		if (waitpid(pid, &st, 0) != pid)
			FAIL("waitpid");
		alarm(0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("child %d: %s %d", forks, WIFEXITED(st) ? "exit" : "signal",
			     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	alarm(60);
	ff_stop = 1;
	pthread_join(t, NULL);
	alarm(0);
	if (landed == 0)
		FAIL("none of %d forks landed inside the flusher's purge", forks);
	printf("forkflush: ok (%d forks, %d inside a purge, %lu purges)\n", forks, landed,
	       (unsigned long)ff_done);
	return 0;
}

/* ---- fork ---- */
static volatile int churn_stop;
static void *churn(void *arg)
{
	(void)arg;
	uint64_t s = 12345;
	while (!churn_stop) {
		size_t n = pick_size(&s);
		unsigned char *p = malloc(n);
		if (p == NULL)
			FAIL("malloc");
		p[0] = p[n - 1] = 7;
		free(p);
	}
	return NULL;
}

static int cmd_fork(void)
{
	void *p[NBIG];
	pthread_t t;
	if (pthread_create(&t, NULL, churn, NULL))
		FAIL("pthread_create");
	for (int k = 0; k < 20; k++) {
		for (int i = 0; i < NBIG; i++)
			fill(p[i] = malloc(BIG), BIG, 0x33);
		for (int i = 0; i < NBIG / 2; i++)
			free(p[i]);
		pid_t pid = fork();
		if (pid < 0)
			FAIL("fork");
		if (pid == 0) {
			alarm(60); /* a hang ends as a failure */
			for (int i = NBIG / 2; i < NBIG; i++)
				if (count_not(p[i], BIG, 0x33))
					_exit(3);
			void *q[NBIG];
			for (int r = 0; r < 4; r++) {
				for (int i = 0; i < NBIG; i++)
					fill(q[i] = malloc(BIG), BIG, (unsigned char)r);
				for (int i = 0; i < NBIG; i++) {
					if (count_not(q[i], BIG, (unsigned char)r))
						_exit(4);
					free(q[i]);
				}
				purge_all();
			}
			void *z = calloc(1, BIG);
			if (count_not(z, BIG, 0))
				_exit(5);
			_exit(0);
		}
		int st;
		alarm(60);
		if (waitpid(pid, &st, 0) != pid)
			FAIL("waitpid");
		alarm(0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("child %d: %s %d", k, WIFEXITED(st) ? "exit" : "signal",
			     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		for (int i = NBIG / 2; i < NBIG; i++) {
			if (count_not(p[i], BIG, 0x33))
				FAIL("parent's live block changed across fork");
			free(p[i]);
		}
	}
	churn_stop = 1;
	pthread_join(t, NULL);
	/* the parent's queue survived: it still takes, flushes and counts */
	uint64_t e = lp("enqueued_bytes"), pu = lp("purged_bytes");
	for (int i = 0; i < NBIG; i++)
		fill(p[i] = malloc(BIG), BIG, 1);
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	purge_all();
	if (lp("enqueued_bytes") == e || lp("purged_bytes") == pu || lp("pending_bytes") != 0)
		FAIL("parent's queue after the forks: enqueued %llu->%llu purged %llu->%llu",
		     (unsigned long long)e, (unsigned long long)lp("enqueued_bytes"),
		     (unsigned long long)pu, (unsigned long long)lp("purged_bytes"));
	printf("fork: ok (20 children)\n");
	return 0;
}

/* ---- counters ---- */
static char statbuf[1 << 20];
static size_t statlen;
static void stat_cb(void *arg, const char *s)
{
	(void)arg;
	size_t n = strlen(s);
	if (statlen + n < sizeof statbuf) {
		memcpy(statbuf + statlen, s, n);
		statlen += n;
	}
}

static int cmd_counters(void)
{
	uint64_t e0 = lp("enqueued_bytes"), f0 = lp("flushes");
	uint64_t c0 = lp("pmadv_calls") + lp("madv_calls");
	void *p[NBIG];
	for (int i = 0; i < NBIG; i++)
		fill(p[i] = malloc(BIG), BIG, 1);
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	if (lp("enqueued_bytes") < e0 + (uint64_t)NBIG * BIG)
		FAIL("enqueued_bytes %llu -> %llu after freeing %u bytes", (unsigned long long)e0,
		     (unsigned long long)lp("enqueued_bytes"), NBIG * BIG);
	purge_all();
	if (lp("flushes") <= f0 || lp("pmadv_calls") + lp("madv_calls") <= c0)
		FAIL("no flush or no system call counted");
	uint64_t en = lp("enqueued_bytes"), pu = lp("purged_bytes"), ca = lp("cancelled_bytes"),
	         fa = lp("failed_bytes"), pe = lp("pending_bytes");
	if (en != pu + ca + fa + pe)
		FAIL("enqueued %llu != purged %llu + cancelled %llu + failed %llu + pending %llu",
		     (unsigned long long)en, (unsigned long long)pu, (unsigned long long)ca,
		     (unsigned long long)fa, (unsigned long long)pe);
	if (fa != 0)
		FAIL("%llu bytes failed", (unsigned long long)fa);
	/* per arena: arena 0 has them too */
	uint64_t a0 = 0;
	size_t sz = sizeof(a0);
	if (je_mallctl("stats.arenas.0.libpurge.enqueued_bytes", &a0, &sz, NULL, 0) || a0 == 0)
		FAIL("stats.arenas.0.libpurge.enqueued_bytes");
	stats_print_fn sp = (stats_print_fn)dlsym(RTLD_DEFAULT, "malloc_stats_print");
	if (sp == NULL)
		FAIL("no malloc_stats_print");
	sp(stat_cb, NULL, "");
	if (!strstr(statbuf, "libpurge:") || !strstr(statbuf, "process_madvise calls"))
		FAIL("malloc_stats_print has no libpurge block");
	statlen = 0;
	memset(statbuf, 0, sizeof statbuf);
	sp(stat_cb, NULL, "J");
	if (!strstr(statbuf, "\"libpurge\"") || !strstr(statbuf, "\"purged_bytes\""))
		FAIL("malloc_stats_print's JSON has no libpurge object");
	unsigned char on = 0;
	sz = sizeof(on);
	if (je_mallctl("opt.libpurge", &on, &sz, NULL, 0) || !on)
		FAIL("opt.libpurge");
	printf("counters: ok (enqueued %llu, purged %llu, %llu flushes, %llu calls)\n",
	       (unsigned long long)en, (unsigned long long)pu, (unsigned long long)lp("flushes"),
	       (unsigned long long)(lp("pmadv_calls") + lp("madv_calls")));
	return 0;
}

/* ---- background thread ---- */
static int cmd_background(void)
{
	void *p[NBIG];
	uint64_t e0 = lp("enqueued_bytes");
	for (int i = 0; i < NBIG; i++)
		fill(p[i] = malloc(BIG), BIG, 1);
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	/* No time is asserted: 60 s only tells a hang from a slow machine.
	 * With dirty_decay_ms > 0 the background thread's decay enqueues
	 * them first, then settles them. */
	for (int i = 0; i < 6000; i++) {
		if (lp("enqueued_bytes") > e0 && lp("pending_bytes") == 0)
			break;
		usleep(10000);
	}
	if (lp("enqueued_bytes") == e0)
		FAIL("nothing enqueued");
	if (lp("pending_bytes") != 0)
		FAIL("the background thread never settled the queue");
	printf("background: ok (purged %llu bytes)\n", (unsigned long long)lp("purged_bytes"));
	return 0;
}

/* ---- calloc over pending extents: cleared in place ---- */
/* Of the pages [p, p+n) touches, how many are resident; *total: how many. */
static size_t resident_pages(void *p, size_t n, size_t *total)
{
	unsigned char vec[(BIG >> 12) + 2];
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size_t len = ((uintptr_t)p + n - a + 4095) & ~(size_t)4095;
	if (len / 4096 > sizeof vec || mincore((void *)a, len, vec) != 0)
		FAIL("mincore");
	size_t r = 0;
	for (size_t i = 0; i < len / 4096; i++)
		r += vec[i] & 1;
	*total = len / 4096;
	return r;
}

static int cmd_calloc(void)
{
	void *p[NBIG];
	/* pending: freed, enqueued, never flushed (the test's MALLOC_CONF) */
	for (int i = 0; i < NBIG; i++) {
		p[i] = malloc(BIG);
		if (p[i] == NULL)
			FAIL("malloc");
		fill(p[i], BIG, 0xcd);
	}
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	if (lp("pending_bytes") == 0)
		FAIL("nothing pending after free (dirty_decay_ms:0, no delay limit?)");
	uint64_t cancelled = lp("cancelled_bytes");
	size_t gone = 0, pages = 0;
	for (int i = 0; i < NBIG; i++) {
		p[i] = calloc(1, BIG);
		if (p[i] == NULL)
			FAIL("calloc");
		/* before reading: a read maps the zero page */
		size_t total;
		size_t r = resident_pages((char *)p[i] + 4096, BIG - 8192, &total);
		pages += total;
		gone += total - r;
		size_t bad = count_not(p[i], BIG, 0);
		if (bad)
			FAIL("calloc of a reused pending block has %zu non-zero bytes", bad);
	}
	if (lp("cancelled_bytes") == cancelled)
		FAIL("calloc reused no pending extent (cancelled_bytes did not move)");
	/* a pending extent's pages are resident: purging them to zero them
	 * (MADV_DONTNEED) makes them go, and every one refaults */
	if (gone != 0)
		FAIL("calloc over pending extents: %zu of %zu pages not resident "
		     "(purged to be zeroed, then refaulted)",
		     gone, pages);
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	purge_all();
	printf("calloc: ok (%zu pages cleared in place)\n", pages);
	return 0;
}

/* ---- stats: a purge counts when it settles ---- */
#define OVERSIZE (16u << 20) /* above oversize_threshold: purged at once */
static int cmd_stats(void)
{
	void *p[NBIG];
	for (int i = 0; i < NBIG; i++)
		fill(p[i] = malloc(BIG), BIG, 3);
	void *big = malloc(OVERSIZE);
	if (big == NULL)
		FAIL("malloc");
	fill(big, OVERSIZE, 3);
	epoch();
	uint64_t purged0 = stat_u64("stats.arenas.4096.dirty_purged");
	uint64_t nmadv0 = stat_u64("stats.arenas.4096.dirty_nmadvise");
	size_t res0 = stat_zu("stats.resident");
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	free(big);
	/* pending (the test's MALLOC_CONF: no delay, no pending limit) */
	epoch();
	uint64_t pending = stat_u64("stats.arenas.4096.libpurge.pending_bytes");
	uint64_t purged1 = stat_u64("stats.arenas.4096.dirty_purged");
	uint64_t nmadv1 = stat_u64("stats.arenas.4096.dirty_nmadvise");
	size_t res1 = stat_zu("stats.resident");
	if (pending < (uint64_t)NBIG * BIG + OVERSIZE)
		FAIL("%llu bytes pending after freeing %u (dirty_decay_ms:0, no limits?)",
		     (unsigned long long)pending, NBIG * BIG);
	if (purged1 != purged0 || nmadv1 != nmadv0)
		FAIL("nothing purged yet, but dirty_purged %llu -> %llu pages, dirty_nmadvise "
		     "%llu -> %llu",
		     (unsigned long long)purged0, (unsigned long long)purged1,
		     (unsigned long long)nmadv0, (unsigned long long)nmadv1);
	/* pending pages are resident: resident may not drop by them */
	if (res1 + (size_t)NBIG * BIG / 2 < res0)
		FAIL("stats.resident %zu -> %zu while %llu bytes are pending (resident)", res0,
		     res1, (unsigned long long)pending);
	purge_all();
	epoch();
	uint64_t purged2 = stat_u64("stats.arenas.4096.dirty_purged");
	uint64_t nmadv2 = stat_u64("stats.arenas.4096.dirty_nmadvise");
	size_t res2 = stat_zu("stats.resident");
	if (purged2 < purged1 + (uint64_t)NBIG * BIG / 4096)
		FAIL("after arena.4096.purge dirty_purged %llu -> %llu pages (%u freed)",
		     (unsigned long long)purged1, (unsigned long long)purged2, NBIG * BIG / 4096);
	if (nmadv2 <= nmadv1)
		FAIL("after arena.4096.purge dirty_nmadvise did not move");
	/* each purged page counted once: what was pending, and no more */
	if (purged2 - purged1 != pending / 4096)
		FAIL("after arena.4096.purge dirty_purged +%llu pages, %llu were pending",
		     (unsigned long long)(purged2 - purged1), (unsigned long long)(pending / 4096));
	if (res2 + (size_t)NBIG * BIG / 2 > res1)
		FAIL("after arena.4096.purge stats.resident %zu -> %zu", res1, res2);
	if (stat_u64("stats.arenas.4096.libpurge.pending_bytes") != 0)
		FAIL("pending after arena.4096.purge");
	printf("stats: ok (dirty_purged +%llu pages in %llu calls at the flush; resident %zu "
	       "-> %zu -> %zu)\n",
	       (unsigned long long)(purged2 - purged1), (unsigned long long)(nmadv2 - nmadv1), res0,
	       res1, res2);
	return 0;
}

/* ---- bound: purge_max_pending is a total over the automatic arenas ---- */
#define BOUND_THREADS 4
#define BOUND_BLOCK   (1u << 20)
#define BOUND_BLOCKS  7
static void *bound_thread(void *arg)
{
	unsigned ind = (unsigned)(uintptr_t)arg;
	if (je_mallctl("thread.arena", NULL, NULL, &ind, sizeof(ind)) != 0)
		FAIL("thread.arena %u", ind);
	void *p[BOUND_BLOCKS];
	for (int i = 0; i < BOUND_BLOCKS; i++)
		fill(p[i] = malloc(BOUND_BLOCK), BOUND_BLOCK, 9);
	for (int i = 0; i < BOUND_BLOCKS; i++)
		free(p[i]);
	return NULL;
}

static int cmd_bound(void)
{
	size_t limit = stat_zu("opt.purge_max_pending");
	unsigned narenas = 0;
	size_t sz = sizeof(narenas);
	if (je_mallctl("opt.narenas", &narenas, &sz, NULL, 0) != 0)
		FAIL("opt.narenas");
	if (narenas < BOUND_THREADS)
		FAIL("opt.narenas %u: the test needs %d automatic arenas", narenas, BOUND_THREADS);
	if (limit == 0 || limit >= (size_t)BOUND_THREADS * BOUND_BLOCKS * BOUND_BLOCK)
		FAIL("purge_max_pending %zu: the test wants one below %u", limit,
		     BOUND_THREADS * BOUND_BLOCKS * BOUND_BLOCK);
	pthread_t t[BOUND_THREADS];
	for (uintptr_t i = 0; i < BOUND_THREADS; i++)
		if (pthread_create(&t[i], NULL, bound_thread, (void *)i))
			FAIL("pthread_create");
	for (int i = 0; i < BOUND_THREADS; i++)
		pthread_join(t[i], NULL);
	/* idle: nothing runs, nothing settles by age */
	uint64_t pending = lp("pending_bytes");
	uint64_t enq = lp("enqueued_bytes");
	if (enq < (uint64_t)BOUND_THREADS * BOUND_BLOCKS * BOUND_BLOCK)
		FAIL("only %llu bytes enqueued", (unsigned long long)enq);
	if (pending > limit)
		FAIL("%llu bytes pending in all arenas together, above purge_max_pending %zu",
		     (unsigned long long)pending, limit);
	printf("bound: ok (%llu bytes pending of %llu enqueued; limit %zu)\n",
	       (unsigned long long)pending, (unsigned long long)enq, limit);
	return 0;
}

/* ---- memory pressure and idle return (background thread) ---- */
static unsigned char opt_bool(const char *name)
{
	unsigned char v = 0;
	size_t sz = sizeof(v);
	if (je_mallctl(name, &v, &sz, NULL, 0) != 0)
		FAIL("mallctl %s (a build without that option?)", name);
	return v;
}

/* Frees NBIG large blocks and returns with their purges pending (the test's
 * MALLOC_CONF sets no age limit and dirty_decay_ms:0). */
static uint64_t make_pending(void)
{
	void *p[NBIG];
	unsigned char bg = opt_bool("background_thread");
	if (!bg)
		FAIL("the test wants background_thread:true");
	for (int i = 0; i < NBIG; i++)
		fill(p[i] = malloc(BIG), BIG, 3);
	for (int i = 0; i < NBIG; i++)
		free(p[i]);
	uint64_t pending = lp("pending_bytes");
	if (pending == 0)
		FAIL("nothing pending after freeing %d blocks of %u bytes", NBIG, BIG);
	return pending;
}

/* Waits up to `ms` for nothing to be pending; returns whether it came. */
static int settles_within(int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (lp("pending_bytes") == 0)
			return 1;
		usleep(10000);
	}
	return lp("pending_bytes") == 0;
}

static int cmd_pressure(void)
{
	const char *fifo = getenv("MEMORY_PRESSURE_WATCH");
	if (fifo == NULL)
		FAIL("the test sets MEMORY_PRESSURE_WATCH to a FIFO");
	unsigned char on = opt_bool("opt.purge_pressure");
	uint64_t pending = make_pending();
	/* nothing else settles it: no age limit, no idle return */
	usleep(300000);
	if (lp("pending_bytes") == 0)
		FAIL("settled without pressure (the test's MALLOC_CONF should prevent it)");
	/* The background thread holds the FIFO open for reading once it
	 * watches it; until then open() says ENXIO. */
	int fd = -1;
	for (int i = 0; i < 500 && fd < 0; i++) {
		fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno != ENXIO)
			FAIL("open %s: %s", fifo, strerror(errno));
		if (fd < 0)
			usleep(10000);
	}
	if (fd < 0 && on)
		FAIL("nobody reads %s after 5 s: the background thread does not watch it", fifo);
	if (fd >= 0) {
		if (!on)
			FAIL("purge_pressure:false, yet %s is open for reading", fifo);
		if (write(fd, "1", 1) != 1)
			FAIL("write %s: %s", fifo, strerror(errno));
		close(fd);
	}
	/* No time is asserted: 20 s only tells "never" from a slow machine. */
	int settled = settles_within(on ? 20000 : 1500);
	if (on && !settled)
		FAIL("a pressure event did not flush %llu pending bytes in 20 s",
		     (unsigned long long)lp("pending_bytes"));
	if (!on && settled)
		FAIL("purge_pressure:false, yet the queue was flushed");
	printf("pressure: ok (%s; %llu bytes were pending)\n",
	       on ? "flushed on the FIFO's byte" : "off: nothing watched, nothing flushed",
	       (unsigned long long)pending);
	return 0;
}

static int cmd_idle(void)
{
	ssize_t idle_ms = 0;
	size_t sz = sizeof(idle_ms);
	if (je_mallctl("opt.purge_idle_ms", &idle_ms, &sz, NULL, 0) != 0)
		FAIL("mallctl opt.purge_idle_ms (a build without that option?)");
	struct timespec t0, t1;
	uint64_t pending = make_pending();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int settled = settles_within(idle_ms >= 0 ? 20000 : 1500);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long took = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (idle_ms >= 0 && !settled)
		FAIL("%llu bytes still pending after 20 s idle (purge_idle_ms:%zd)",
		     (unsigned long long)lp("pending_bytes"), idle_ms);
	if (idle_ms < 0 && !settled) {
		printf("idle: ok (purge_idle_ms:-1: %llu bytes still pending after %ld ms)\n",
		       (unsigned long long)pending, took);
		return 0;
	}
	if (idle_ms < 0)
		FAIL("purge_idle_ms:-1, yet the queue was flushed");
	printf("idle: ok (%llu bytes flushed %ld ms after the frees; purge_idle_ms:%zd)\n",
	       (unsigned long long)pending, took, idle_ms);
	return 0;
}

/* ---- maxcall: purge_max_call bounds the bytes of one system call ---- */
#define MC_BLOCK (256u << 10)
#define MC_FREED 64
static int cmd_maxcall(void)
{
	size_t cap = stat_zu("opt.purge_max_call");
	void *p[2 * MC_FREED];
	/* every other block stays live, so that no two freed ones coalesce */
	for (int i = 0; i < 2 * MC_FREED; i++)
		fill(p[i] = malloc(MC_BLOCK), MC_BLOCK, 5);
	purge_all();
	uint64_t c0 = lp("pmadv_calls") + lp("madv_calls"), pu0 = lp("purged_bytes");
	for (int i = 0; i < 2 * MC_FREED; i += 2)
		free(p[i]);
	uint64_t pending = lp("pending_bytes");
	if (pending < (uint64_t)MC_FREED * MC_BLOCK)
		FAIL("%llu bytes pending after freeing %u (dirty_decay_ms:0, no limits?)",
		     (unsigned long long)pending, MC_FREED * MC_BLOCK);
	purge_all();
	uint64_t calls = lp("pmadv_calls") + lp("madv_calls") - c0;
	uint64_t purged = lp("purged_bytes") - pu0;
	if (purged < (uint64_t)MC_FREED * MC_BLOCK)
		FAIL("arena.4096.purge purged %llu bytes of %u", (unsigned long long)purged,
		     MC_FREED * MC_BLOCK);
	if (cap == 0) {
		/* no cap: one vector holds them all (libpurge's 1024 a call) */
		printf("maxcall: ok (no cap: %llu bytes in %llu calls)\n",
		       (unsigned long long)purged, (unsigned long long)calls);
	} else {
		uint64_t want = (purged + cap - 1) / cap;
		if (calls < want)
			FAIL("%llu bytes purged in %llu calls: purge_max_call %zu wants %llu or "
			     "more",
			     (unsigned long long)purged, (unsigned long long)calls, cap,
			     (unsigned long long)want);
		printf("maxcall: ok (%llu bytes in %llu calls, purge_max_call %zu)\n",
		       (unsigned long long)purged, (unsigned long long)calls, cap);
	}
	for (int i = 1; i < 2 * MC_FREED; i += 2)
		free(p[i]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: je-reuse "
		                "zeros|canaries|fork|forkflush|counters|background|calloc|stats|"
		                "bound|pressure|idle|maxcall\n");
		return 1;
	}
	je_mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	if (je_mallctl == NULL) {
		printf("SKIP: not running under jemalloc (no mallctl)\n");
		return 77;
	}
	unsigned char on = 0;
	size_t sz = sizeof(on);
	if (je_mallctl("opt.libpurge", &on, &sz, NULL, 0) != 0) {
		printf("SKIP: this jemalloc has no libpurge patches (no opt.libpurge)\n");
		return 77;
	}
	if (!strcmp(argv[1], "zeros"))
		return cmd_zeros();
	if (!strcmp(argv[1], "canaries"))
		return cmd_canaries();
	if (!strcmp(argv[1], "fork"))
		return cmd_fork();
	if (!strcmp(argv[1], "forkflush"))
		return cmd_forkflush();
	if (!strcmp(argv[1], "counters"))
		return cmd_counters();
	if (!strcmp(argv[1], "background"))
		return cmd_background();
	if (!strcmp(argv[1], "calloc"))
		return cmd_calloc();
	if (!strcmp(argv[1], "stats"))
		return cmd_stats();
	if (!strcmp(argv[1], "bound"))
		return cmd_bound();
	if (!strcmp(argv[1], "pressure"))
		return cmd_pressure();
	if (!strcmp(argv[1], "idle"))
		return cmd_idle();
	if (!strcmp(argv[1], "maxcall"))
		return cmd_maxcall();
	fprintf(stderr, "je-reuse: unknown test %s\n", argv[1]);
	return 1;
}
