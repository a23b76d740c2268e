/* SPDX-License-Identifier: MIT */
/*
 * The library never allocates: this binary interposes the heap functions and
 * aborts if one is called while library code runs (armed), across every
 * public function, every path and a failure callback.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "mem.h"

/* Under a sanitizer its runtime owns malloc: the proof runs in the plain
 * build, and these tests say so instead of passing vacuously. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#ifdef UNDER_SANITIZER
#define NEED_PLAIN_BUILD() cr_skip_test("heap interposition needs a build without sanitizers")
static volatile int armed;
#else
#define NEED_PLAIN_BUILD()
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static volatile int armed;

static void caught(const char *what)
{
	if (!armed)
		return;
	static const char msg[] = "libpurge called the heap: ";
	(void)!write(2, msg, sizeof(msg) - 1);
	(void)!write(2, what, strlen(what));
	(void)!write(2, "\n", 1);
	abort();
}

void *malloc(size_t n)
{
	caught("malloc");
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	caught("calloc");
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	caught("realloc");
	return __libc_realloc(p, n);
}

void free(void *p)
{
	caught("free");
	__libc_free(p);
}

int posix_memalign(void **p, size_t a, size_t n)
{
	caught("posix_memalign");
	*p = __libc_memalign(a, n);
	return *p ? 0 : ENOMEM;
}

void *aligned_alloc(size_t a, size_t n)
{
	caught("aligned_alloc");
	return __libc_memalign(a, n);
}
#endif

static void count_failure(void *arg, void *addr, size_t len, int err)
{
	(void)addr, (void)len, (void)err;
	++*(int *)arg;
}

/* Every public function, with failures, splits, partial flushes and
 * threshold flushes, while the interposer is armed. */
static void workout(int mode, unsigned flags)
{
	int failures = 0;
	struct purge_config cfg = {.mode = mode,
	                           .flags = flags,
	                           .capacity = 16,
	                           .max_pending_bytes = 64 * PAGE,
	                           .max_delay_ns = 1000000,
	                           .on_failure = count_failure,
	                           .arg = &failures};
	static char mem[1 << 20] __attribute__((aligned(64)));
	static char text[4096];
	char *r = map_region(64);
	purge_queue *q, *q2;
	struct purge_stats st;

	NEED_PLAIN_BUILD();
	cr_assert_leq(purge_queue_bytes(16), sizeof(mem));
	fill_region(r, 64);
	armed = 1;
	cr_assert_eq(purge_queue_create(&q, &cfg), 0);
	cr_assert_eq(purge_queue_init(&q2, mem, sizeof(mem), &cfg), 0);
	for (size_t i = 0; i < 60; i += 2)
		cr_assert_eq(purge_enqueue(q, r + i * PAGE, PAGE), 0);
	cr_assert_eq(purge_enqueue(q, r + 30 * PAGE, 10 * PAGE), 0);
	cr_assert_eq(purge_cancel(q, r + 32 * PAGE, 3 * PAGE), 1);
	cr_assert_eq(purge_cancel(q, r + 32 * PAGE, 3 * PAGE), 0);
	cr_assert_eq(munmap(r + 62 * PAGE, PAGE), 0);
	cr_assert_eq(purge_enqueue(q, r + 61 * PAGE, 3 * PAGE), 0); /* a hole: fails */
	cr_assert_eq(purge_set_batch(q, 3), 0);
	cr_assert_geq(purge_flush_to(q, PAGE), 0);
	cr_assert_geq(purge_flush_older(q, 1), 0);
	cr_assert_geq(purge_flush(q), 0);
	purge_get_stats(q, &st);
	cr_assert_gt(purge_stats_format(&st, text, sizeof(text), 0), 0);
	cr_assert_gt(purge_stats_format(&st, text, sizeof(text), PURGE_FORMAT_JSON), 0);
	cr_assert_eq(purge_oldest_ns(q), 0);
	cr_assert_eq(purge_get_batch(q), 3);
	cr_assert_geq(purge_backend(MADV_FREE), 1);
	cr_assert_geq(purge_version(), 20000);
	cr_assert_null(purge_config_check(&cfg));
	cr_assert_not_null(purge_config_check(&(struct purge_config){.batch = 5000}));
	/* whatever the environment names (decoding included): no heap either way */
	int pfd = purge_pressure_open();
	if (pfd >= 0)
		close(pfd);
	purge_fork_prepare(q);
	purge_fork_parent(q);
	cr_assert_eq(purge_enqueue(q2, r, PAGE), 0);
	cr_assert_gt(purge_oldest_ns(q2), 0);
	cr_assert_eq(purge_queue_destroy(q2), 0);
	cr_assert_eq(purge_queue_destroy(q), 0);
	armed = 0;
	cr_assert_eq(failures, 1);
	cr_assert_eq(st.failed_ranges, 1);
}

Test(nomalloc, auto_path)
{
	workout(PURGE_MODE_AUTO, 0);
}

Test(nomalloc, loop_path_locked)
{
	workout(PURGE_MODE_LOOP, PURGE_LOCKED);
}

Test(nomalloc, vectored_path_no_coalesce)
{
	if (purge_backend(MADV_DONTNEED) != PURGE_BACKEND_VECTORED)
		cr_skip_test("process_madvise(PIDFD_SELF) not usable here");
	workout(PURGE_MODE_VECTORED, PURGE_NO_COALESCE | PURGE_TRIM);
}

/* The interposition itself works: otherwise the tests above prove nothing. */
#ifdef UNDER_SANITIZER
Test(nomalloc, interposer_catches_malloc)
{
	NEED_PLAIN_BUILD();
}
#else
Test(nomalloc, interposer_catches_malloc, .signal = SIGABRT)
{
	armed = 1;
	void *volatile p = malloc(16);
	(void)p;
}
#endif
