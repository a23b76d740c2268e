// SPDX-License-Identifier: MIT
/* purge-bench sweep: interleaved passes, progress, summaries. */
#include "bench-sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_AFTER_S 1.0  /* quiet for short runs */
#define PROGRESS_EVERY_S 0.25 /* at most four updates a second on a tty */

const char *bench_row_name(enum bench_row kind)
{
	static const char *const names[ROW_KINDS] = {
	    [ROW_LOOP] = "madvise-loop",   [ROW_FLOOR] = "floor",           [ROW_RAW] = "raw-pmadv",
	    [ROW_NOCOAL] = "purge-nocoal", [ROW_DEFAULT] = "purge-default",
	};
	return names[kind];
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int alloc_rows(struct bench_results *res, const struct bench_opts *o, bool have_raw)
{
	res->nrows = 2 + 3 * (size_t)o->nvlens;
	res->repeat = o->repeat;
	res->rows = calloc(res->nrows, sizeof(*res->rows));
	if (!res->rows)
		return -ENOMEM;
	res->rows[BENCH_REF_LOOP].kind = ROW_LOOP;
	res->rows[BENCH_REF_FLOOR].kind = ROW_FLOOR;
	for (unsigned v = 0; v < o->nvlens; v++)
		for (int k = 0; k < 3; k++) {
			struct bench_result *r = &res->rows[2 + 3 * v + (unsigned)k];
			r->kind = (enum bench_row)(ROW_RAW + k);
			r->vlen = o->vlens[v];
			r->skipped = r->kind == ROW_RAW && !have_raw;
		}
	for (size_t i = 0; i < res->nrows; i++) {
		res->rows[i].ns = calloc(o->repeat, sizeof(double));
		res->rows[i].refault_ns = calloc(o->repeat, sizeof(double));
		if (!res->rows[i].ns || !res->rows[i].refault_ns)
			return -ENOMEM;
	}
	return 0;
}

void bench_results_free(struct bench_results *res)
{
	for (size_t i = 0; res->rows && i < res->nrows; i++) {
		free(res->rows[i].ns);
		free(res->rows[i].refault_ns);
	}
	free(res->rows);
	memset(res, 0, sizeof(*res));
}

/* Progress on stderr once the run has taken a second: rewritten in place on
 * a terminal, one line per pass otherwise (logs stay short). */
static void progress(double start, double *last, unsigned pass, unsigned passes, size_t done,
                     size_t total)
{
	double t = now_s();
	bool tty = isatty(2), pass_end = done % (total / passes) == 0;
	if (t - start < PROGRESS_AFTER_S || (tty ? t - *last < PROGRESS_EVERY_S : !pass_end))
		return;
	*last = t;
	fprintf(stderr, "%spurge-bench: pass %u/%u, %3.0f%%, %.1f s%s", tty ? "\r" : "", pass,
	        passes, 100.0 * (double)done / (double)total, t - start, tty ? "" : "\n");
}

/* Odd passes run the rows backwards (ABBA order): a row's time can depend
 * on what the row before it left behind (page allocator and TLB state), so
 * no row always follows the same neighbour or always runs first. */
static int one_pass(struct bench_work *w, struct bench_results *res, unsigned r, double start,
                    double *last, char *err, size_t errlen)
{
	for (size_t j = 0; j < res->nrows; j++) {
		size_t i = r % 2 ? res->nrows - 1 - j : j;
		struct bench_result *row = &res->rows[i];
		struct bench_sample s;
		if (row->skipped)
			continue;
		int ret = bench_work_pass(w, row->kind, row->vlen, &s);
		if (ret) {
			snprintf(err, errlen, "%s at vlen %u failed: %s", bench_row_name(row->kind),
			         row->vlen, strerror(-ret));
			return ret;
		}
		row->ns[r] = s.ns;
		row->refault_ns[r] = s.refault_ns;
		row->syscalls = s.syscalls;
		progress(start, last, r + 1, res->repeat, (size_t)r * res->nrows + j + 1,
		         (size_t)res->repeat * res->nrows);
	}
	return 0;
}

static void summarize(struct bench_results *res)
{
	for (size_t i = 0; i < res->nrows; i++) {
		struct bench_result *row = &res->rows[i];
		if (row->skipped)
			continue;
		row->time = bench_summarize(row->ns, res->repeat);
		row->refault = bench_summarize(row->refault_ns, res->repeat);
	}
}

int bench_sweep(struct bench_work *w, const struct bench_opts *o, struct bench_results *res,
                char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	if (alloc_rows(res, o, w->have_raw)) {
		snprintf(err, errlen, "out of memory for the results");
		return -ENOMEM;
	}
	res->pages = w->npieces * (w->piece / w->page);
	double start = now_s(), last = 0;
	for (unsigned r = 0; r < o->repeat; r++) {
		int ret = one_pass(w, res, r, start, &last, err, errlen);
		if (ret)
			return ret;
	}
	res->wall_s = now_s() - start;
	if (res->wall_s >= PROGRESS_AFTER_S && isatty(2))
		fputc('\n', stderr);
	summarize(res);
	return 0;
}
