/* SPDX-License-Identifier: MIT */
/*
 * Raw system call wrappers: "call, then ret < 0 ? -errno : ret".  The only
 * place that knows syscall numbers and PIDFD_SELF.  In the library, sys.c
 * alone includes it; outside it, the seccomp test (tests/test_seccomp.c) and
 * the benchmarks that time the raw call beside the library's
 * (bench/purge-bench/bench-run.c, bench/queue-bench/queue-bench.c).
 */
#ifndef PURGE_SYSCALL_H
#define PURGE_SYSCALL_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* process_madvise is 440 in the unified syscall table; alpha and mips number
 * it apart (arch/alpha/kernel/syscalls/syscall.tbl, arch/mips/kernel/syscalls). */
#ifndef __NR_process_madvise
#if defined(__alpha__)
#define __NR_process_madvise 550
#elif defined(__mips__) && defined(_MIPS_SIM) && _MIPS_SIM == _MIPS_SIM_ABI32
#define __NR_process_madvise 4440
#elif defined(__mips__) && defined(_MIPS_SIM) && _MIPS_SIM == _MIPS_SIM_ABI64
#define __NR_process_madvise 5440
#elif defined(__mips__) && defined(_MIPS_SIM) && _MIPS_SIM == _MIPS_SIM_NABI32
#define __NR_process_madvise 6440
#else
#define __NR_process_madvise 440
#endif
#endif

/* PIDFD_SELF (= PIDFD_SELF_THREAD) names the calling thread's mm, Linux 6.15+
 * (include/uapi/linux/fcntl.h).  Its value never changed, unlike
 * PIDFD_SELF_PROCESS (-20000 in 6.15/6.16, -10001 since 6.17), which we never use. */
#ifndef PIDFD_SELF
#define PIDFD_SELF (-10000)
#endif

/* PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h): one ioctl on
 * /proc/PID/pagemap reports regions of pages by category; PAGE_IS_HUGE is
 * a page mapped by a huge page (a PMD-mapped THP, or hugetlb). */
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_HUGE (1 << 6)
#endif

static inline ssize_t purge__sys_process_madvise(const struct iovec *iov, size_t n, int advice)
{
	long ret = syscall(__NR_process_madvise, PIDFD_SELF, iov, n, advice, 0u);

	return ret < 0 ? -errno : ret;
}

static inline int purge__sys_madvise(void *addr, size_t len, int advice)
{
	return madvise(addr, len, advice) < 0 ? -errno : 0;
}

#endif /* PURGE_SYSCALL_H */
