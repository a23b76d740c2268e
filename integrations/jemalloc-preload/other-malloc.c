/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for "another allocator serves malloc": preloaded before
 * libjemalloc.so.2, it answers malloc and friends with glibc's own
 * allocator (the __libc_* entry points), so jemalloc is loaded, its
 * mallctl is found, and yet it serves nothing.  The shim must then stay
 * inactive (test-shim.sh).  For tests only.
 */
#include <errno.h>
#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n)
{
	return __libc_malloc(n);
}

EXPORT void *calloc(size_t n, size_t size)
{
	return __libc_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

EXPORT void free(void *p)
{
	__libc_free(p);
}

EXPORT void *memalign(size_t align, size_t n)
{
	return __libc_memalign(align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return __libc_memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
