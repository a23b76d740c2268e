// SPDX-License-Identifier: MIT
/*
 * purge-bench: how long purging a region in small pieces takes through a
 * madvise() loop, raw process_madvise(PIDFD_SELF) at each vlen, libpurge
 * with and without coalescing, against one madvise() over the whole region.
 * See --help; the pieces live in bench-*.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench-opts.h"
#include "bench-output.h"
#include "bench-plot.h"
#include "bench-stats.h"
#include "bench-sweep.h"
#include "bench-sysinfo.h"
#include "bench-threads.h"
#include "bench-work.h"

/* The vlen --suggest picks from the purge-default medians, 0 if none. */
static unsigned pick_suggest(const struct bench_results *res)
{
	double med[BENCH_MAX_VLENS];
	unsigned vlen[BENCH_MAX_VLENS];
	size_t n = 0;
	for (size_t i = 0; i < res->nrows && n < BENCH_MAX_VLENS; i++)
		if (res->rows[i].kind == ROW_DEFAULT) {
			med[n] = res->rows[i].time.median;
			vlen[n++] = res->rows[i].vlen;
		}
	int best = bench_suggest(med, n);
	return best < 0 ? 0 : vlen[best];
}

/* CSV/JSON go to --out when given (the table then still goes to stdout,
 * so one run feeds both a reader and a file), else to stdout alone. */
static int emit(const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	FILE *f = stdout;
	if (o->format == FORMAT_TABLE || o->out)
		bench_print_table(stdout, r);
	if (o->format == FORMAT_TABLE)
		return 0;
	if (o->out && !(f = fopen(o->out, "w"))) {
		fprintf(stderr, "purge-bench: %s: %s\n", o->out, strerror(errno));
		return -errno;
	}
	if (o->format == FORMAT_CSV)
		bench_print_csv(f, r);
	else
		bench_print_json(f, r);
	if (f != stdout && fclose(f)) {
		fprintf(stderr, "purge-bench: writing %s failed\n", o->out);
		return -EIO;
	}
	return 0;
}

static int report(const struct bench_opts *o, const struct bench_machine *m,
                  const struct bench_work *w, const struct bench_results *res, const char *pinning)
{
	struct bench_report r = {
	    .o = o,
	    .m = m,
	    .res = res,
	    .pinning = pinning,
	    .npieces = w->npieces,
	};
	if (o->suggest)
		r.suggest = pick_suggest(res);
	int ret = emit(&r);
	fflush(stdout);
	if (o->plot) {
		char msg[512];
		int pret = bench_plot(o->plot, &r, msg, sizeof(msg));
		fprintf(stderr, "purge-bench: %s\n", msg);
		if (pret && pret != -ENOENT)
			ret = pret; /* a missing gnuplot is not the benchmark's failure */
	}
	return ret;
}

static int run(const struct bench_opts *o, size_t page)
{
	struct bench_machine m;
	struct bench_work w;
	struct bench_results res = {0};
	struct bench_helpers *hs = NULL;
	char err[256], pinning[256];
	bench_machine_read(&m, o->advice);
	int ret = bench_work_init(&w, o, page, err, sizeof(err));
	if (!ret && !w.have_raw)
		fprintf(stderr,
		        "purge-bench: process_madvise(PIDFD_SELF) refused: raw rows skipped\n");
	if (!ret && (ret = bench_helpers_start(o->threads - 1, &hs, pinning, sizeof(pinning))))
		snprintf(err, sizeof(err), "starting helper threads: %s", strerror(-ret));
	if (!ret)
		ret = bench_sweep(&w, o, &res, err, sizeof(err));
	bench_loadavg(m.load_end, sizeof(m.load_end));
	bench_helpers_stop(hs);
	if (ret)
		fprintf(stderr, "purge-bench: %s\n", err);
	else
		ret = report(o, &m, &w, &res, pinning);
	bench_results_free(&res);
	bench_work_fini(&w);
	return ret;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	char err[256];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int ret = bench_parse_args(argc, argv, page, &o, err, sizeof(err));
	if (ret > 0)
		return 0; /* --help or --version */
	if (ret < 0) {
		fprintf(stderr, "purge-bench: %s\n", err);
		return 2;
	}
	return run(&o, page) ? 1 : 0;
}
