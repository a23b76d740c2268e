/* SPDX-License-Identifier: MIT */
/*
 * thp-neighbour [SECONDS]: a process that splits transparent huge pages
 * in a loop, for SECONDS (default 10, at most 3600), to run beside the
 * test suites: they must decide from their own process's state, never
 * from a machine-wide counter such as thp_split_pmd (issue 30).  Each
 * turn maps a 2 MiB aligned region advised MADV_HUGEPAGE, writes it, and
 * purges part of it: MADV_DONTNEED of its first 64 KiB, or munmap of its
 * last 64 KiB, turn about; either splits the huge page that backs it.
 * Then it unmaps the rest.  Prints how many turns found a huge page to
 * split, at the end or when SIGTERM or SIGINT stops it early.  Built with
 * the tests, not run as one (.ci/check-no-global-counters.sh runs the
 * kernel suite beside it).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "pagemap.h"

#define FRAME ((size_t)2 << 20)
#define PART  ((size_t)64 << 10)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One turn: true when a huge page backed the region before the cut. */
static bool turn(unsigned long i)
{
	struct pm_bytes t = {0};
	char *m = mmap(NULL, 2 * FRAME, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		perror("thp-neighbour: mmap");
		exit(1);
	}
	char *r = (char *)(((uintptr_t)m + FRAME - 1) & ~(FRAME - 1));
	madvise(r, FRAME, MADV_HUGEPAGE);
	memset(r, (int)(i & 0xff), FRAME);
	bool huge = pm_scan(r, FRAME, &t) == 0 && t.huge == FRAME;
	if (i & 1)
		munmap(r + FRAME - PART, PART);
	else
		madvise(r, PART, MADV_DONTNEED);
	munmap(m, 2 * FRAME);
	return huge;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;

	if (argc > 2 || !(secs > 0 && secs <= 3600)) {
		fprintf(stderr, "usage: thp-neighbour [SECONDS]   (0 < SECONDS <= 3600)\n");
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	double t0 = now_s(), end = t0 + secs;
	unsigned long turns = 0, split = 0;
	while (!stop && now_s() < end)
		split += turn(turns++);
	printf("thp-neighbour: %lu turns in %.1f s, %lu of them split a huge page\n", turns,
	       now_s() - t0, split);
	return 0;
}
