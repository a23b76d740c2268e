/* SPDX-License-Identifier: MIT */
/*
 * The advice table: every madvise advice the library takes, its name and
 * whether pages read back as zero after it.  advice.c has the rows; the
 * settings (config.c), the probe's slots (sys.c) and the printer (fmt.c)
 * read them.  Includes nothing of the library's.
 */
#ifndef PURGE_ADVICE_H
#define PURGE_ADVICE_H

#include <stdbool.h>
#include <sys/mman.h>

/* 5.18+; glibc 2.36 has it, older C libraries may not */
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#pragma GCC visibility push(hidden) /* internal, as in internal.h */

/* Every advice the library takes, one row each: adding one is one row. */
struct purge__advice {
	int value;        /* MADV_* */
	const char *name; /* for purge_stats_format */
	bool zeroes;      /* private anonymous pages read back as zero after it */
};

#define PURGE_ADVICE_COUNT 5 /* rows; the probe keeps one slot per row */

/* The row of an advice, or NULL when the library does not take it. */
const struct purge__advice *purge__advice_find(int advice);
/* Its row number: the probe's slot. */
unsigned purge__advice_slot(const struct purge__advice *a);

#pragma GCC visibility pop

#endif /* PURGE_ADVICE_H */
