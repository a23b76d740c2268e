/* SPDX-License-Identifier: MIT */
/*
 * A fake kernel behind the library's backend table.  It counts, per page of
 * a pretend region, how often each page was purged, and fails, truncates or
 * refuses exactly as told.  It touches memory only when `zero_memory` is set
 * (the region is then real): a purged page is zeroed, like MADV_DONTNEED.  Modelled on the
 * kernel facts in docs/kernel-notes.md §4 (partial returns, MAX_RW_COUNT).  Its clock stands
 * still until the test moves it (`now`).
 */
#ifndef FAKE_KERNEL_H
#define FAKE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "internal.h"

struct fake_kernel {
	uintptr_t base; /* pretend region: [base, base + npages * page) */
	size_t npages;
	size_t page;
	uint16_t *purged; /* times each page was purged */
	int *fail;        /* negative errno for a page that cannot be advised */
	/* process_madvise behaviour */
	int path;         /* what the probe says: PURGE_BACKEND_* */
	bool probed;      /* path(probe = false) answers 0 until a probe ran */
	uint64_t now;     /* the clock, ns: coarse and fine alike */
	uint64_t call_ns; /* each system call moves the clock this much */
	int refuse;       /* negative errno for every call once calls >= refuse_after */
	unsigned refuse_after;
	bool madv_refuses_too;        /* EPERM on madvise as well (sealed) */
	unsigned unknown_advice_mask; /* bit n: madvise(NULL, 0, n) is EINVAL */
	bool truncate;                /* clamp a call at MAX_RW_COUNT like the kernel */
	bool zero_memory;             /* memset purged pages to 0 (region must be mapped) */
	/* huge-page frames: a purge of part of a huge frame splits it, of all
	 * of it frees it; opening a scan answers spans_err when nonzero */
	size_t frame;
	uint8_t *huge;
	int spans_err;
	unsigned splits, whole_frees, scans, scan_opens, open_scans;
	uint64_t scanned; /* bytes huge_spans was asked about */
	/* called at the start of every system call (the library holds no
	 * lock of a shared queue then): tests of other threads' calls */
	void (*in_call)(void *arg);
	void *in_call_arg;
	/* what the library did */
	unsigned pmadv_calls, madv_calls, demotions, now_calls;
	size_t max_vlen, max_call_bytes;
	unsigned violations; /* unaligned, empty or out-of-region iovecs */
	struct purge__backend be;
};

/* npages of pretend memory at `base` (need not be mapped), in the
 * system's pages, or in pages of `page` bytes (16 KiB, 64 KiB: the
 * library reads the page size through the backend). */
void fake_init(struct fake_kernel *fk, uintptr_t base, size_t npages);
void fake_init_page(struct fake_kernel *fk, uintptr_t base, size_t npages, size_t page);
void fake_free(struct fake_kernel *fk);
void fake_set_frame(struct fake_kernel *fk, size_t frame);
size_t fake_nframes(const struct fake_kernel *fk);
void fake_set_huge(struct fake_kernel *fk, uintptr_t addr, bool huge);
bool fake_is_huge(const struct fake_kernel *fk, uintptr_t addr);
void fake_fail_page(struct fake_kernel *fk, uintptr_t addr, int err);
/* How often the page at addr was purged. */
unsigned fake_purged(const struct fake_kernel *fk, uintptr_t addr);
/* Pages in [addr, addr+len) purged exactly `times` times each. */
bool fake_range_purged(const struct fake_kernel *fk, uintptr_t addr, size_t len, unsigned times);
/* Total purges over the whole region. */
size_t fake_total_purges(const struct fake_kernel *fk);

#endif
