/* SPDX-License-Identifier: MIT */
/*
 * The fuzz driver's model of a queue, from the contract in purge.h: the
 * pending ranges with their ages, what each call settles, and the checks
 * made after every operation (expect.c).  The driver (model.c) decides the
 * operations.
 */
#ifndef FUZZ_EXPECT_H
#define FUZZ_EXPECT_H

#include <stdbool.h>
#include <stdint.h>

#include "../fake_kernel.h"
#include "model.h"

#define NP   64   /* pages in the region */
#define NQ   4    /* slots a page: sub-page objects are cancelled and written in slots */
#define MAXL 256  /* model ranges */
#define MAXF 4096 /* failure reports per operation */
#define OVLB 32   /* overlapping enqueues kept below purge_cancel's limit */

enum { E_PATTERN, E_ZERO, E_ANY };

/* A pending range as the contract sees it: its age, and its place in the
 * enqueue order (the seq of the enqueue it came from). */
struct mrange {
	uintptr_t s, e;
	uint64_t stamp, seq;
	bool flag; /* overlapped another pending range: counts toward OVLB */
};

/* What the operation just run was, for the contract checks made once
 * the model has observed it. */
enum { FZ_OTHER, FZ_ENQ, FZ_TO, FZ_DUE };
#define FZ_FRAMES 8 /* frames inside the region, at most */

struct fz {
	struct fuzz_src *src;
	const struct fuzz_opts *o;
	struct fake_kernel fk;
	struct purge__backend be;    /* the queue's: records what the kernel took, then inner */
	struct purge__backend inner; /* the fake kernel, or the real one */
	char *r, *map;               /* the region, and the mapping it lies in */
	size_t page, map_len;
	purge_queue *q;
	void *qmem;
	struct purge_config cfg;
	uint64_t now; /* the clock the queue reads, ns */
	/* the model */
	struct mrange l[MAXL];
	size_t n;
	uint64_t enq, canc, pend, flushes, seq;
	uint8_t expect[NP * NQ], pat[NP * NQ], locked[NP];
	/* The zero rule of purge.h, per page, from the allocator's side: the
	 * page was enqueued and, since then, nothing wrote to it, no cancel
	 * that answered 1 touched it and no report named it. */
	bool zclean[NP];
	/* PURGE_HUGE: a holding flush settles what its frame plan says; the
	 * model observes it: per page, the copies the kernel purged since
	 * watch() (applied) and those on_failure named */
	bool observe;
	unsigned applied[NP];
	size_t fpages;          /* pages of a huge-page frame, when frames fit the region; else 0 */
	size_t nframes, frame0; /* the frames inside the region: pages frame0, + fpages, ... */
	struct {
		int kind;
		uint64_t arg, next, auto_flushes;
		bool room;            /* the enqueue made room first */
		bool huge[FZ_FRAMES]; /* frames inside the region huge-backed, before */
	} last;
	bool wrote[NP * NQ]; /* written since its page was last enqueued */
	uint64_t zclaims;    /* zero claims read back */
	unsigned gen;
	/* what the current operation settled, and its reports */
	struct mrange done[2 * MAXL];
	size_t ndone, nexpect; /* settled; of those, with expectations set */
	struct {
		uintptr_t s, e;
		int err;
	} f[MAXF];
	size_t nf;
	uint64_t seen_purged, seen_failed; /* the library's, after the last check */
	uint64_t op;
};

_Noreturn void fz_fail(struct fz *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define CHECK(z, c, ...)                                                                           \
	do {                                                                                       \
		if (!(c))                                                                          \
			fz_fail(z, __VA_ARGS__);                                                   \
	} while (0)

uintptr_t fz_pa(const struct fz *z, size_t i);
size_t fz_pidx(const struct fz *z, uintptr_t a);
void fz_write_page(struct fz *z, size_t i);
/* The allocator writes the slots that [s, e) touches (an object it reuses). */
void fz_write_slots(struct fz *z, uintptr_t s, uintptr_t e);

/* The model's side of each call (expect.c). */
void m_enqueue(struct fz *z, uintptr_t s, uintptr_t e);
bool m_cancel(struct fz *z, uintptr_t s, uintptr_t e); /* the expected answer */
/* After a cancel of [s, e) answered `ret`, before the allocator writes:
 * where purge.h's zero rule says [s, e) reads as zero, read it back. */
void m_zero_claim(struct fz *z, uintptr_t s, uintptr_t e, int ret);
void m_flush_all(struct fz *z);
void m_flush_older(struct fz *z, uint64_t age);
void m_flush_to(struct fz *z, uint64_t keep);
/* purge_flush_due: what it settles, and (without PURGE_HUGE) the deadline */
void m_flush_due(struct fz *z, uint64_t age, uint64_t *next);
/* Whether each frame inside the region is huge-backed now (real kernel,
 * PAGEMAP_SCAN); false when the kernel cannot tell. */
bool fz_huge_frames(struct fz *z, bool *huge);
/* Before a call the contract checks look at afterwards. */
void m_before(struct fz *z, int kind, uint64_t arg);
/* With PURGE_HUGE, after a call the model could not predict: what the
 * library settled of the pending pages, taken into the model. */
void m_observe(struct fz *z);
/* After observing: what the contract says of the operation (m_before). */
void m_contract(struct fz *z);
bool m_overlap_ok(const struct fz *z, uintptr_t s, uintptr_t e);
bool m_cancel_ok(const struct fz *z, uintptr_t s, uintptr_t e);
uint64_t m_oldest(const struct fz *z);
/* Page expectations of what was settled so far: before the driver writes
 * pages the same operation touched. */
void m_expect_settled(struct fz *z);
/* After every operation. */
void m_check(struct fz *z);
void m_reset(struct fz *z);

#endif
