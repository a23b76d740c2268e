/* SPDX-License-Identifier: MIT */
/*
 * A program that knows libpurge only through its public header and what a
 * build system hands it: .ci/check-install.sh builds it through pkg-config
 * against a staged install, .ci/check-cmake.sh through find_package(purge),
 * .ci/check-subproject.sh with libpurge as a meson subproject; shared and
 * static each time.  It calls every exported function (src/purge.map), so a
 * symbol missing from what it links fails the link, and it prints the
 * version it was compiled against and the one it runs with.
 */
#include <purge.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if PURGE_VERSION_MAJOR != 2
#error "consumer.c was written for libpurge 2.x"
#endif

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "consumer: %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

/* Purge one dirty page, keep its neighbour, and check both. */
static int exercise(purge_queue *q, size_t pg)
{
	unsigned char *p =
	    mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct purge_stats st;
	char text[2048];

	CHECK(p != MAP_FAILED);
	memset(p, 0x5a, 4 * pg);
	CHECK(purge_enqueue(q, p, 2 * pg) == 0);
	CHECK(purge_oldest_ns(q) > 0);
	CHECK(purge_cancel(q, p + pg, pg) == 1); /* it was pending: never purged */
	CHECK(purge_cancel(q, p + pg, pg) == 0); /* nothing left to cancel */
	CHECK(purge_flush(q) == 0);
	CHECK(purge_oldest_ns(q) == 0);
	/* The partial flushes, on a page each. */
	CHECK(purge_enqueue(q, p + 2 * pg, pg) == 0);
	CHECK(purge_flush_older(q, 0) == 0);
	CHECK(purge_enqueue(q, p + 3 * pg, pg) == 0);
	CHECK(purge_flush_to(q, 0) == 0);

	purge_get_stats(q, &st);
	CHECK(st.purged_bytes == 3 * pg && st.cancelled_bytes == pg);
	CHECK(st.pending_bytes == 0 && st.failed_ranges == 0);
	/* Default advice is MADV_DONTNEED: purged anonymous pages read zero. */
	CHECK(st.zeroed == 1 && p[0] == 0 && p[pg - 1] == 0);
	CHECK(p[2 * pg] == 0 && p[4 * pg - 1] == 0);
	CHECK(p[pg] == 0x5a && p[2 * pg - 1] == 0x5a);
	CHECK(purge_stats_format(&st, text, sizeof(text), 0) > 0);
	return munmap(p, 4 * pg) == 0 ? 0 : 1;
}

int main(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct purge_config cfg = {.capacity = 16, .flags = PURGE_LOCKED};
	size_t size = purge_queue_bytes(cfg.capacity);
	int backend = purge_backend(MADV_DONTNEED);
	purge_queue *q;
	void *mem;

	CHECK(backend == PURGE_BACKEND_VECTORED || backend == PURGE_BACKEND_LOOP);
	CHECK(purge_version() / 10000 == PURGE_VERSION_MAJOR);
	CHECK(purge_version() >= PURGE_VERSION);

	/* Caller memory (mmap is page-aligned, so 16-byte aligned too). */
	CHECK(size > 0);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED);
	CHECK(purge_queue_init(&q, mem, size - 1, &cfg) == -ENOSPC);
	CHECK(purge_queue_init(&q, mem, size, &cfg) == 0);
	/* What an atfork handler would do around fork(). */
	purge_fork_prepare(q);
	purge_fork_parent(q);
	purge_fork_prepare(q);
	purge_fork_child(q);
	CHECK(exercise(q, pg) == 0);
	CHECK(purge_queue_destroy(q) == 0);
	CHECK(munmap(mem, size) == 0);

	/* Library-mapped memory, defaults. */
	CHECK(purge_queue_create(&q, NULL) == 0);
	CHECK(purge_set_batch(q, 8) == 0 && purge_get_batch(q) == 8);
	CHECK(purge_set_batch(q, PURGE_BATCH_MAX + 1) == -EINVAL);
	CHECK(exercise(q, pg) == 0);
	CHECK(purge_queue_destroy(q) == 0);

	printf("consumer: ok (built with %d, runs %d, %s)\n", PURGE_VERSION, purge_version(),
	       backend == PURGE_BACKEND_VECTORED ? "vectored" : "loop");
	return 0;
}
