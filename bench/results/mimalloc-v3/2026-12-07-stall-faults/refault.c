/* SPDX-License-Identifier: MIT */
/*
 * refault: what touching a purged 4 KiB page again costs on this machine.
 * Maps 32 MiB (2 MiB aligned), touches it, drops every other MiB with
 * MADV_DONTNEED and times touching those 16 MiB again; 5 times.  With an
 * argument, the range is advised MADV_HUGEPAGE first, as mimalloc v3
 * advises its arenas.  cc -O2 -o refault refault.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#define MIB (1ul << 20)

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	(void)argv;
	char *p = mmap(NULL, 34 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	char *q = (char *)(((unsigned long)p + 2 * MIB - 1) & ~(2 * MIB - 1));
	if (argc > 1 && madvise(q, 32 * MIB, MADV_HUGEPAGE) != 0)
		return 1;
	for (int r = 0; r < 5; r++) {
		for (size_t i = 0; i < 32 * MIB; i += 4096)
			q[i] = 1;
		for (size_t m = 0; m < 32; m += 2)
			madvise(q + m * MIB, MIB, MADV_DONTNEED);
		double t0 = now_ms();
		for (size_t m = 0; m < 32; m += 2)
			for (size_t i = 0; i < MIB; i += 4096)
				q[m * MIB + i] = 2;
		double t = now_ms() - t0;
		printf("%s: refault 16 MiB (4096 pages): %.2f ms, %.2f us a page\n",
		       argc > 1 ? "MADV_HUGEPAGE" : "plain", t, t * 1e3 / 4096);
		madvise(q, 32 * MIB, MADV_DONTNEED);
	}
	return 0;
}
