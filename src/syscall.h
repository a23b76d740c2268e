/* SPDX-License-Identifier: MIT */
/*
 * Raw system call wrappers: "call, then ret < 0 ? -errno : ret".  The only
 * place that knows syscall numbers and PIDFD_SELF.  Included by sys.c alone.
 */
#ifndef PURGE_SYSCALL_H
#define PURGE_SYSCALL_H

#include <errno.h>
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
