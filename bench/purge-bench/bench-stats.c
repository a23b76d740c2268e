// SPDX-License-Identifier: MIT
/* purge-bench statistics: percentiles, the --suggest rule, noise warnings. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_percentile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	double rank = (q <= 0 ? 0 : q >= 100 ? 1 : q / 100.0) * (double)(n - 1);
	size_t lo = (size_t)rank;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (rank - (double)lo) * (v[lo + 1] - v[lo]);
}

/* On a copy: the samples stay in pass order for the JSON. */
struct bench_summary bench_summarize(const double *v, size_t n)
{
	struct bench_summary s = {0, 0, 0};
	double *t = malloc(n * sizeof(*t));
	if (!t || !n) {
		free(t);
		return s;
	}
	memcpy(t, v, n * sizeof(*t));
	s.median = bench_percentile(t, n, 50);
	s.p10 = bench_percentile(t, n, 10);
	s.p90 = bench_percentile(t, n, 90);
	free(t);
	return s;
}

double bench_median_known(const double *v, size_t n)
{
	double *t = malloc((n ? n : 1) * sizeof(*t)), m = NAN;
	size_t k = 0;
	for (size_t i = 0; t && i < n; i++)
		if (!isnan(v[i]))
			t[k++] = v[i];
	if (k)
		m = bench_percentile(t, k, 50);
	free(t);
	return m;
}

void bench_summarize_row(struct bench_result *x, unsigned repeat)
{
	x->time = bench_summarize(x->ns, repeat);
	x->refault = bench_summarize(x->refault_ns, repeat);
	for (int k = 0; k < MF_FIELDS; k++)
		x->mem_median[k] = x->mem ? bench_median_known(x->mem + k * repeat, repeat) : NAN;
}

double bench_spread(struct bench_summary s)
{
	return s.p10 > 0 ? s.p90 / s.p10 : 1;
}

static bool within_tolerance(double median, double best)
{
	return median <= best * (1 + BENCH_TOLERANCE);
}

/* Smaller batches win ties: they bound the iovec array and how long one
 * call holds the address-space lock. */
int bench_suggest(const double *medians, size_t n)
{
	double best = n ? medians[0] : 0;
	for (size_t i = 1; i < n; i++)
		if (medians[i] < best)
			best = medians[i];
	for (size_t i = 0; i < n; i++)
		if (within_tolerance(medians[i], best))
			return (int)i;
	return -1;
}

unsigned bench_pick(const struct bench_results *res)
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

unsigned bench_settle(const unsigned *picks, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = 0; j < i; j++)
			if (picks[i] && picks[i] == picks[j])
				return picks[i];
	return 0;
}

/* The purge-default median of res at vlen; -1 when res has no such row. */
static double default_median(const struct bench_results *res, unsigned vlen)
{
	for (size_t i = 0; i < res->nrows; i++)
		if (res->rows[i].kind == ROW_DEFAULT && res->rows[i].vlen == vlen)
			return res->rows[i].time.median;
	return -1;
}

void bench_add_run(struct bench_report *r, const struct bench_results *res)
{
	if (r->npicks == BENCH_SUGGEST_RUNS)
		return;
	for (unsigned i = 0; i < r->o->nvlens; i++)
		r->medians[r->npicks][i] = default_median(res, r->o->vlens[i]);
	r->picks[r->npicks++] = bench_pick(res);
	r->suggest = bench_settle(r->picks, r->npicks);
}

/* Index in o->vlens of vlen, and of the table run's best median; -1: none. */
static int vlen_index(const struct bench_opts *o, unsigned vlen)
{
	for (unsigned i = 0; i < o->nvlens; i++)
		if (o->vlens[i] == vlen)
			return (int)i;
	return -1;
}

static int table_best(const struct bench_report *r)
{
	int best = -1;
	for (unsigned i = 0; r->npicks && i < r->o->nvlens; i++)
		if (r->medians[0][i] >= 0 && (best < 0 || r->medians[0][i] < r->medians[0][best]))
			best = (int)i;
	return best;
}

bool bench_table_agrees(const struct bench_report *r)
{
	int s = vlen_index(r->o, r->suggest), best = table_best(r);
	if (!r->suggest || s < 0 || best < 0 || r->medians[0][s] < 0)
		return true;
	return within_tolerance(r->medians[0][s], r->medians[0][best]);
}

static void warn(struct bench_report *r, const char *fmt, ...)
{
	if (r->nwarn == BENCH_MAX_WARN)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->warn[r->nwarn++], sizeof(r->warn[0]), fmt, ap);
	va_end(ap);
}

/* The load before the run, and after it less the run's own threads (an
 * upper bound on what they add), each against half a task per CPU. */
static void check_load(struct bench_report *r)
{
	const struct bench_machine *m = &r->m;
	double limit = BENCH_LOAD_MAX * (double)m->cpus;
	double after = m->load_end[0] - r->o->threads;
	if (m->load_start[0] > limit || after > limit)
		warn(r,
		     "load average %.2f before the run, %.2f after it, on %ld CPUs: above half a "
		     "task per CPU, other work competes for the CPUs and speed-ups come out low "
		     "and noisy",
		     m->load_start[0], m->load_end[0], m->cpus);
}

static void check_rows(struct bench_report *r)
{
	const struct bench_result *worst = NULL;
	unsigned noisy = 0;
	for (size_t i = 0; i < r->res.nrows; i++) {
		const struct bench_result *x = &r->res.rows[i];
		if (x->skipped || bench_spread(x->time) <= BENCH_SPREAD_MAX)
			continue;
		noisy++;
		if (!worst || bench_spread(x->time) > bench_spread(worst->time))
			worst = x;
	}
	char at[32] = "";
	if (worst && worst->vlen)
		snprintf(at, sizeof(at), " at vlen %u", worst->vlen);
	if (worst)
		warn(r,
		     "%u of %zu rows have p90/p10 above %.1f (worst: %s%s, %.2f): the passes "
		     "disagree; rerun on a quiet machine or with more --repeat",
		     noisy, r->res.nrows, BENCH_SPREAD_MAX, bench_rows[worst->kind], at,
		     bench_spread(worst->time));
}

/* The table shows the first run only; the reruns may agree with each other
 * and not with it.  Then nothing is suggested (a suggestion the table
 * contradicts helps nobody): say why, with the numbers. */
static void check_agreement(struct bench_report *r)
{
	if (bench_table_agrees(r))
		return;
	int s = vlen_index(r->o, r->suggest), best = table_best(r);
	warn(r,
	     "--suggest: the reruns picked vlen %u, but in the table's run it took %.3f ms "
	     "against the best, %.3f ms at vlen %u (more than %.0f%% slower): no suggestion; "
	     "rerun on a quiet machine or with more --repeat",
	     r->suggest, r->medians[0][s] / 1e6, r->medians[0][best] / 1e6, r->o->vlens[best],
	     BENCH_TOLERANCE * 100);
	r->disputed = r->suggest;
	r->suggest = 0;
}

/* The row that started with the least in huge pages, if below
 * BENCH_HUGE_MIN of the region (process-wide: other huge pages count). */
static const struct bench_result *least_huge(const struct bench_report *r)
{
	const struct bench_result *low = NULL;
	double min = BENCH_HUGE_MIN * (double)r->o->size;
	for (size_t i = 0; i < r->res.nrows; i++) {
		const struct bench_result *x = &r->res.rows[i];
		double h = x->mem_median[MF_HUGE_BEFORE];
		if (!x->skipped && x->mem && h < min &&
		    (!low || h < low->mem_median[MF_HUGE_BEFORE]))
			low = x;
	}
	return low;
}

/* Huge pages advised but missing: the row measured small pages.  Usage
 * from RSS: a split looks like memory freed (kernel-notes §13). */
static void check_memory(struct bench_report *r)
{
	const struct bench_result *low = bench_thp_advised(r->o) ? least_huge(r) : NULL;
	char at[32] = "";
	if (!bench_mem_measured(r->o))
		return;
	if (r->m.mem.kind == MEM_RSS)
		warn(r,
		     "memory usage read from RSS (%s): RSS drops when a huge page is split, the "
		     "memory does not, so mem_drop and left_half overstate what was freed",
		     r->m.mem.note);
	if (!low)
		return;
	if (low->vlen)
		snprintf(at, sizeof(at), " at vlen %u", low->vlen);
	warn(r,
	     "--thp %s, yet %s%s started with %.1f of %.1f MiB in huge pages (AnonHugePages): "
	     "the system setting (%s) or fragmentation; its split and drop numbers are about "
	     "small pages",
	     bench_thps[r->o->thp], bench_rows[low->kind], at,
	     low->mem_median[MF_HUGE_BEFORE] / 1048576, (double)r->o->size / 1048576, r->m.thp);
}

void bench_check_noise(struct bench_report *r)
{
	check_load(r);
	check_rows(r);
	r->disputed = 0;
	if (r->npicks > 1 && !r->suggest)
		warn(r, "--suggest: no two of %u runs picked the same vlen: the choice is noise",
		     r->npicks);
	check_agreement(r);
	check_memory(r);
}

/* ---- the closing line ---------------------------------------------------- */

/* The table's median of a row kind at vlen (0: the loop); -1 when none. */
static double table_median(const struct bench_report *r, enum bench_row kind, unsigned vlen)
{
	for (size_t i = 0; i < r->res.nrows; i++) {
		const struct bench_result *x = &r->res.rows[i];
		if (x->kind == kind && (kind == ROW_LOOP || x->vlen == vlen) && !x->skipped)
			return x->time.median;
	}
	return -1;
}

/* The batch the closing line names, and why, in a few words. */
static unsigned conclude_batch(const struct bench_report *r, const char **why)
{
	unsigned last = r->o->nvlens ? r->o->vlens[r->o->nvlens - 1] : 0;
	if (r->suggest) {
		*why = "the smallest batch within 5% of the fastest, in the table's run and in two "
		       "runs that agree";
		return r->suggest;
	}
	if (!r->o->suggest) {
		*why = "the smallest batch within 5% of the fastest in this one run (--suggest "
		       "reruns it until two runs agree)";
		return bench_pick(&r->res);
	}
	*why = r->disputed ? "the runs disagreed with the table's run on a smaller batch"
	                   : "no two runs agreed on a smaller batch";
	return vlen_index(r->o, PURGE_BATCH_MAX) >= 0 ? PURGE_BATCH_MAX : last;
}

void bench_conclude(const struct bench_report *r, char *buf, size_t len)
{
	const char *why = "";
	unsigned b = conclude_batch(r, &why);
	double loop = table_median(r, ROW_LOOP, 0), t = table_median(r, ROW_DEFAULT, b);

	buf[0] = '\0';
	if (!b || loop <= 0 || t <= 0)
		return;
	snprintf(buf, len,
	         "conclusion: use batch %u (PURGE_BATCH=%u, purge_config.batch): %s. At %u "
	         "the library took %.3f ms against %.3f ms for one madvise() per range, %.1fx as "
	         "fast (ties go to the smaller batch: it keeps each call, and every wait for it, "
	         "shorter)",
	         b, b, why, b, t / 1e6, loop / 1e6, loop / t);
}
