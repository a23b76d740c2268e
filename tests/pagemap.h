/* SPDX-License-Identifier: MIT */
/*
 * What this process's own page tables say about a span of its memory,
 * from PAGEMAP_SCAN (Linux 6.7+) on /proc/self/pagemap: how many bytes are
 * resident, and how many a huge page maps at the PMD level.  The tests
 * that look for huge-page splits read this, never a machine-wide counter
 * such as thp_split_pmd in /proc/vmstat, which counts every process's
 * splits (issue 30).  A split shows as a frame that was PMD-mapped whose
 * resident pages no longer are.  Independent of src/: the library asks
 * the same ioctl its own questions, and a test must not trust them.
 */
#ifndef TESTS_PAGEMAP_H
#define TESTS_PAGEMAP_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <unistd.h>

/* include/uapi/linux/fs.h of Linux 6.7; Debian 12's headers predate it */
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif
#ifndef PAGE_IS_PRESENT
#define PAGE_IS_PRESENT (1 << 3)
#endif
#ifndef PAGE_IS_HUGE
#define PAGE_IS_HUGE (1 << 6) /* mapped by a PMD (THP) or hugetlb */
#endif

struct pm_bytes {
	size_t present; /* resident, however mapped */
	size_t huge;    /* mapped by a huge page */
};

static inline void pm_add(struct pm_bytes *t, const struct page_region *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = (size_t)(v[i].end - v[i].start);
		t->present += v[i].categories & PAGE_IS_PRESENT ? len : 0;
		t->huge += v[i].categories & PAGE_IS_HUGE ? len : 0;
	}
}

/* The bytes of [p, p + len) that are resident and that a huge page maps:
 * 0, or a negative errno (-ENOTTY, -EINVAL: a kernel without
 * PAGEMAP_SCAN). */
static inline int pm_scan(const void *p, size_t len, struct pm_bytes *t)
{
	struct page_region v[32];
	uint64_t at = (uintptr_t)p, end = at + len;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), ret = 0;

	*t = (struct pm_bytes){0};
	if (fd < 0)
		return -errno;
	while (at < end && !ret) {
		struct pm_scan_arg a = {.size = sizeof(a),
		                        .start = at,
		                        .end = end,
		                        .vec = (uintptr_t)v,
		                        .vec_len = 32,
		                        .category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_HUGE,
		                        .return_mask = PAGE_IS_PRESENT | PAGE_IS_HUGE};
		int n = ioctl(fd, PAGEMAP_SCAN, &a);
		if (n < 0 || a.walk_end <= at) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		pm_add(t, v, (size_t)n);
		at = a.walk_end;
	}
	close(fd);
	return ret;
}

#endif
