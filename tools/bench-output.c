// SPDX-License-Identifier: MIT
/* purge-bench output: header, aligned table and CSV (JSON: bench-json.c). */
#include "bench-output.h"

#include <string.h>

#include "bench-stats.h"

void bench_format_size(char *buf, size_t len, size_t bytes)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%zu", bytes);
	else
		snprintf(buf, len, "%zu%c", bytes, units[u]);
}

struct bench_metrics bench_metrics(const struct bench_report *r, size_t row)
{
	const struct bench_result *x = &r->res->rows[row];
	double loop = r->res->rows[BENCH_REF_LOOP].time.median;
	double floor = r->res->rows[BENCH_REF_FLOOR].time.median;
	struct bench_metrics m = {0};
	m.median_ns = x->time.median;
	m.p10_ns = x->time.p10;
	m.p90_ns = x->time.p90;
	m.ns_per_page = m.median_ns / (double)r->res->pages;
	m.vs_loop = loop > 0 ? m.median_ns / loop : 0;
	m.vs_floor = floor > 0 ? m.median_ns / floor : 0;
	m.refault_ns = x->refault.median;
	return m;
}

static void vlen_list(char *buf, size_t len, const struct bench_opts *o)
{
	size_t used = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < o->nvlens && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? "," : "", o->vlens[i]);
}

/* The same "# " lines head the table and the CSV, so a number copied from
 * either can be reproduced: machine, kernel, modes, every parameter. */
static void print_header(FILE *f, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	const struct bench_machine *m = r->m;
	char size[32], piece[32], vl[BENCH_MAX_VLENS * 6];
	bench_format_size(size, sizeof(size), o->size);
	bench_format_size(piece, sizeof(piece), o->piece);
	vlen_list(vl, sizeof(vl), o);
	fprintf(f, "# purge-bench, libpurge %d.%d\n", PURGE_VERSION_MAJOR, PURGE_VERSION_MINOR);
	fprintf(f, "# cpu: %s, %ld online CPUs\n", m->cpu, m->cores);
	fprintf(f, "# kernel: Linux %s %s, page %ld B, THP enabled=%s\n", m->kernel, m->arch,
	        m->page, m->thp);
	fprintf(f, "# load average: %s before, %s after the sweep\n", m->load_start, m->load_end);
	fprintf(f, "# libpurge backend for %s: %s\n", bench_advice_name(o->advice), m->backend);
	fprintf(f,
	        "# params: --size %s --piece %s --layout %s --advice %s --batch %s --repeat %u "
	        "--threads %u --thp %s --seed %u%s\n",
	        size, piece, bench_layout_name(o->layout), bench_advice_name(o->advice), vl,
	        o->repeat, o->threads, bench_thp_name(o->thp), o->seed,
	        o->refault ? " --refault" : "");
	fprintf(f, "# threads: %s\n", r->pinning);
	fprintf(f, "# pieces per pass: %zu (%zu pages); sweep took %.1f s\n", r->npieces,
	        r->res->pages, r->res->wall_s);
	fprintf(f,
	        "# rows interleaved pass by pass (odd passes in reverse order); madvise-loop and "
	        "floor once per pass (no vlen)\n");
	fprintf(f, "# floor: one madvise() over the whole region%s\n",
	        o->layout == LAYOUT_SCATTERED ? " (gaps included: twice the pieces' bytes)" : "");
	if (o->refault)
		fprintf(f, "# refault = one write per page of the pieces right after the purge, "
		           "timed apart\n");
	fprintf(f, "# time = purge only (region touched untimed before each pass); "
	           "ns/page = median / pages in the pieces; vs-* = median / that row's median\n");
}

/* True when purge-default made the same number of calls at every vlen,
 * i.e. coalescing merged the pieces and the batch knob never came into play. */
static bool default_is_flat(const struct bench_results *res)
{
	uint64_t calls = UINT64_MAX;
	unsigned n = 0;
	for (size_t i = 0; i < res->nrows; i++) {
		const struct bench_result *x = &res->rows[i];
		if (x->kind != ROW_DEFAULT)
			continue;
		if (n++ && x->syscalls != calls)
			return false;
		calls = x->syscalls;
	}
	return n > 1;
}

static void print_suggest(FILE *f, const struct bench_report *r, const char *prefix)
{
	if (!r->o->suggest)
		return;
	if (!r->suggest) {
		fprintf(f, "%ssuggest: none (no purge-default row measured)\n", prefix);
		return;
	}
	fprintf(f, "%ssuggest: PURGE_BATCH=%u\n", prefix, r->suggest);
	fprintf(f, "%s  (smallest vlen whose purge-default median is within %.0f%% of the best)\n",
	        prefix, BENCH_SUGGEST_TOLERANCE * 100);
	if (default_is_flat(r->res))
		fprintf(f,
		        "%s  (coalescing left the same few calls at every vlen: this layout "
		        "cannot tell batch sizes apart; use --layout scattered)\n",
		        prefix);
}

static void table_row(FILE *f, const struct bench_report *r, size_t i)
{
	const struct bench_result *x = &r->res->rows[i];
	char vlen[16] = "-";
	if (x->vlen)
		snprintf(vlen, sizeof(vlen), "%u", x->vlen);
	fprintf(f, "%-14s %5s", bench_row_name(x->kind), vlen);
	if (x->skipped) {
		fprintf(f, "  n/a: process_madvise(PIDFD_SELF) refused on this kernel\n");
		return;
	}
	struct bench_metrics m = bench_metrics(r, i);
	fprintf(f, " %10.3f %10.3f %10.3f %9.1f %8.3f %8.3f %9llu", m.median_ns / 1e6,
	        m.p10_ns / 1e6, m.p90_ns / 1e6, m.ns_per_page, m.vs_loop, m.vs_floor,
	        (unsigned long long)x->syscalls);
	if (r->o->refault)
		fprintf(f, " %10.3f", m.refault_ns / 1e6);
	fputc('\n', f);
}

void bench_print_table(FILE *f, const struct bench_report *r)
{
	print_header(f, r);
	fprintf(f, "\n%-14s %5s %10s %10s %10s %9s %8s %8s %9s%s\n", "row", "vlen", "median_ms",
	        "p10_ms", "p90_ms", "ns/page", "vs-loop", "vs-floor", "syscalls",
	        r->o->refault ? " refault_ms" : "");
	for (size_t i = 0; i < r->res->nrows; i++) {
		/* a blank line before each vlen group keeps the rows to compare together */
		if (i >= 2 && (i - 2) % 3 == 0)
			fputc('\n', f);
		table_row(f, r, i);
	}
	if (r->o->suggest)
		fputc('\n', f);
	print_suggest(f, r, "");
}

/* CSV: ns throughout, empty fields for "no vlen" and skipped rows. */
static void csv_row(FILE *f, const struct bench_report *r, size_t i)
{
	const struct bench_result *x = &r->res->rows[i];
	fprintf(f, "%s,", bench_row_name(x->kind));
	if (x->vlen)
		fprintf(f, "%u", x->vlen);
	if (x->skipped) {
		fprintf(f, ",,,,,,,%s\n", r->o->refault ? "," : "");
		return;
	}
	struct bench_metrics m = bench_metrics(r, i);
	fprintf(f, ",%.0f,%.0f,%.0f,%.2f,%.4f,%.4f,%llu", m.median_ns, m.p10_ns, m.p90_ns,
	        m.ns_per_page, m.vs_loop, m.vs_floor, (unsigned long long)x->syscalls);
	if (r->o->refault)
		fprintf(f, ",%.0f", m.refault_ns);
	fputc('\n', f);
}

void bench_print_csv(FILE *f, const struct bench_report *r)
{
	print_header(f, r);
	print_suggest(f, r, "# ");
	fprintf(f, "row,vlen,median_ns,p10_ns,p90_ns,ns_per_page,vs_loop,vs_floor,syscalls%s\n",
	        r->o->refault ? ",refault_median_ns" : "");
	for (size_t i = 0; i < r->res->nrows; i++)
		csv_row(f, r, i);
}
