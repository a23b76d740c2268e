/* SPDX-License-Identifier: MIT */
/*
 * purge-bench command line: what a run measures, parsed and validated in
 * one place so the unit test can drive it without running a benchmark.
 */
#ifndef BENCH_OPTS_H
#define BENCH_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#define BENCH_MAX_VLENS 64

enum bench_layout {
	LAYOUT_ADJACENT,  /* every piece, in address order */
	LAYOUT_SCATTERED, /* every other piece: no two pieces can coalesce */
	LAYOUT_RANDOM,    /* every piece, in a shuffled order */
};

enum bench_format { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

enum bench_thp {
	THP_SYSTEM, /* leave the region to the system-wide THP mode */
	THP_NEVER,  /* MADV_NOHUGEPAGE on the region */
	THP_ALWAYS, /* MADV_HUGEPAGE on the region */
};

struct bench_opts {
	size_t size;  /* region bytes */
	size_t piece; /* bytes per purged range */
	enum bench_layout layout;
	int advice;                      /* MADV_DONTNEED or MADV_FREE */
	unsigned vlens[BENCH_MAX_VLENS]; /* ascending, no duplicates */
	unsigned nvlens;
	unsigned repeat;  /* timed passes per row */
	unsigned threads; /* 1 + helper threads */
	unsigned seed;    /* shuffle seed for LAYOUT_RANDOM */
	enum bench_thp thp;
	bool refault;
	bool suggest;
	enum bench_format format;
	const char *out;  /* CSV/JSON destination; NULL = stdout */
	const char *plot; /* .svg or .png; NULL = no plot */
};

/* "256M", "4K", "1G", "4096" (binary units, case-insensitive, optional
 * trailing "B" or "iB").  Returns 0 and sets *out, or -EINVAL (empty,
 * junk, zero) or -ERANGE (does not fit in size_t). */
int bench_parse_size(const char *s, size_t *out);

/* "1,2,16,1024": each 1..PURGE_BATCH_MAX; sorted, duplicates dropped.
 * Returns the count (> 0) or -EINVAL / -E2BIG (more than max values). */
int bench_parse_vlens(const char *s, unsigned *out, unsigned max);

/* Fill *o from argv (getopt_long; resets optind so it can be called more
 * than once).  page is the page size the sizes must be multiples of.
 * Returns 0, 1 when --help or --version was printed to stdout, or -EINVAL
 * with a one-line reason in err. */
int bench_parse_args(int argc, char **argv, size_t page, struct bench_opts *o, char *err,
                     size_t errlen);

void bench_usage(const char *prog);

const char *bench_layout_name(enum bench_layout l);
const char *bench_advice_name(int advice);
const char *bench_thp_name(enum bench_thp t);

#endif
