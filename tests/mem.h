/* SPDX-License-Identifier: MIT */
/* Real memory for the kernel suites: regions fenced by PROT_NONE guard
 * pages, a per-page pattern (the canary), and residency from mincore(). */
#ifndef TESTS_MEM_H
#define TESTS_MEM_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

/* mlock through the raw syscall: the sanitizers' interceptors turn mlock()
 * into a no-op, which would hide the EINVAL these tests look for. */
static inline int raw_mlock(const void *p, size_t len)
{
	return (int)syscall(SYS_mlock, p, len);
}

static inline int raw_munlock(const void *p, size_t len)
{
	return (int)syscall(SYS_munlock, p, len);
}

/* npages usable pages, with one guard page on each side */
static inline char *map_region(size_t npages)
{
	size_t page = PAGE;
	char *p = mmap(NULL, (npages + 2) * page, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	mprotect(p, page, PROT_NONE);
	mprotect(p + (npages + 1) * page, page, PROT_NONE);
	return p + page;
}

static inline unsigned char pattern_of(size_t i)
{
	return (unsigned char)(0x11 + i % 200);
}

static inline void fill_region(char *r, size_t npages)
{
	for (size_t i = 0; i < npages; i++)
		memset(r + i * PAGE, pattern_of(i), PAGE);
}

static inline bool page_all(const char *p, unsigned char b)
{
	for (size_t i = 0; i < PAGE; i++)
		if ((unsigned char)p[i] != b)
			return false;
	return true;
}

static inline bool resident(const void *p)
{
	unsigned char vec = 0;
	cr_assert_eq(mincore((void *)((uintptr_t)p & ~(PAGE - 1)), PAGE, &vec), 0);
	return vec & 1;
}

/* Page i of r must read zero (purged with DONTNEED) or keep its canary. */
static inline void expect_page(const char *r, size_t i, bool purged)
{
	const char *p = r + i * PAGE;
	if (purged) {
		cr_assert(!resident(p), "page %zu still resident", i);
		cr_assert(page_all(p, 0), "page %zu not zero", i);
	} else {
		cr_assert(page_all(p, pattern_of(i)), "canary page %zu damaged", i);
	}
}

#endif
