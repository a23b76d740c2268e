/* SPDX-License-Identifier: MIT */
/* purge-bench output: the header every format carries, then the rows as an
 * aligned table, CSV or JSON. */
#ifndef BENCH_OUTPUT_H
#define BENCH_OUTPUT_H

#include <stdio.h>

#include "bench-opts.h"
#include "bench-sweep.h"
#include "bench-sysinfo.h"

struct bench_report {
	const struct bench_opts *o;
	const struct bench_machine *m;
	const struct bench_results *res;
	const char *pinning; /* where the threads run (bench_helpers_start) */
	size_t npieces;
	unsigned suggest; /* vlen --suggest picked; 0 = not asked or none */
};

/* Numbers derived from one row, in the units the formats print. */
struct bench_metrics {
	double median_ns, p10_ns, p90_ns;
	double ns_per_page;       /* median / pages in the purged pieces */
	double vs_loop, vs_floor; /* median / that row's median: below 1 is faster */
	double refault_ns;        /* median; 0 without --refault */
};

struct bench_metrics bench_metrics(const struct bench_report *r, size_t row);

/* "256M", "4K", or plain bytes when no binary unit divides evenly. */
void bench_format_size(char *buf, size_t len, size_t bytes);

void bench_print_table(FILE *f, const struct bench_report *r);
void bench_print_csv(FILE *f, const struct bench_report *r);
void bench_print_json(FILE *f, const struct bench_report *r);

#endif
