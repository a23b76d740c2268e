// SPDX-License-Identifier: MIT
/* purge-bench output: the table (for people), CSV and JSON (for programs). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "bench.h"
#include "purge.h"

/* The numbers of a row, in CSV column order after row and vlen; the JSON
 * row has the same names.  Negative: not measured. */
enum { MEDIAN, P10, P90, SPREAD, NS_PER_PAGE, VS_LOOP, VS_FLOOR, SYSCALLS, REFAULT, NFIELDS };
static const char *const field_names[NFIELDS] = {"median_ns", "p10_ns",      "p90_ns",
                                                 "spread",    "ns_per_page", "vs_loop",
                                                 "vs_floor",  "syscalls",    "refault_ns"};
static const int field_prec[NFIELDS] = {0, 0, 0, 3, 2, 4, 4, 0, 0};

/* The memory fields (bench.h), after them in the CSV and by these names in
 * the JSON; sizes in bytes. */
const char *const bench_mem_names[MF_FIELDS] = {
    "thp_split_half", "thp_split_end", "purged_half",      "mem_drop_half",
    "left_half",      "mem_drop_end",  "anon_huge_before", "anon_huge_after",
    "frames_whole",   "frames_split",  "held_half"};
static const char *const mem_usage_names[] = {
    [MEM_CGROUP_V1] = "cgroup-v1", [MEM_CGROUP_V2] = "cgroup-v2", [MEM_RSS] = "rss"};

/* The memory table's columns: heading, width, decimals, unit (MiB or 1). */
#define MIB 1048576.0
static const struct {
	const char *head;
	int width, prec;
	double unit;
} mem_cols[MF_FIELDS] = {
    [MF_SPLIT_HALF] = {"split@half", 10, 0, 1},     [MF_SPLIT_END] = {"split@end", 9, 0, 1},
    [MF_PURGED_HALF] = {"purged@half", 11, 1, MIB}, [MF_DROP_HALF] = {"drop@half", 9, 1, MIB},
    [MF_LEFT_HALF] = {"left@half", 9, 2, 1},        [MF_DROP_END] = {"drop@end", 8, 1, MIB},
    [MF_HUGE_BEFORE] = {"huge@start", 10, 1, MIB},  [MF_HUGE_AFTER] = {"huge@end", 8, 1, MIB},
    [MF_FRAMES_WHOLE] = {"fr_whole", 8, 0, 1},      [MF_FRAMES_SPLIT] = {"fr_split", 8, 0, 1},
    [MF_HELD_HALF] = {"held@half", 9, 1, MIB}};

/* Decimals of a memory field in the CSV and JSON: sizes and counts are whole. */
static int mem_prec(int k)
{
	return k == MF_LEFT_HALF ? 3 : 0;
}

static double median_of(const struct bench_results *res, enum bench_row kind)
{
	for (size_t i = 0; i < res->nrows; i++)
		if (res->rows[i].kind == kind && !res->rows[i].vlen)
			return res->rows[i].time.median;
	return 0;
}

/* vs-*: median / that row's median, below 1 is faster; ns/page: median / pages. */
static void fields(const struct bench_report *r, const struct bench_result *x, double *v)
{
	double loop = median_of(&r->res, ROW_LOOP), floor = median_of(&r->res, ROW_FLOOR);
	v[MEDIAN] = x->time.median;
	v[P10] = x->time.p10;
	v[P90] = x->time.p90;
	v[SPREAD] = bench_spread(x->time);
	v[NS_PER_PAGE] = r->res.pages ? x->time.median / (double)r->res.pages : 0;
	v[VS_LOOP] = loop > 0 ? x->time.median / loop : 0;
	v[VS_FLOOR] = floor > 0 ? x->time.median / floor : 0;
	v[SYSCALLS] = (double)x->syscalls;
	v[REFAULT] = r->o->refault ? x->refault.median : -1;
}

/* "64M", "4K", or plain bytes when no binary unit divides evenly. */
static const char *size_str(char *buf, size_t len, size_t bytes)
{
	const char *unit = "";
	for (const char *u = "KMGT"; *u && bytes >= 1024 && bytes % 1024 == 0; u++) {
		bytes /= 1024;
		unit = u;
	}
	snprintf(buf, len, "%zu%.1s", bytes, unit);
	return buf;
}

/* What the frames layout does, and how the rows differ in it. */
static void print_frames(FILE *f, const struct bench_opts *o)
{
	char frame[32], pending[32];
	size_t nframes = o->size / o->frame;
	fprintf(f,
	        "# frames: %zu of %s, %zu freed at a time; the library rows flush "
	        "automatically above %s pending, madvise-loop and raw-pmadv purge the "
	        "same pieces in the same order as they come (no thresholds), floor the "
	        "whole region\n",
	        nframes, size_str(frame, sizeof(frame), o->frame),
	        o->frames_at_once < nframes ? o->frames_at_once : nframes,
	        size_str(pending, sizeof(pending), o->max_pending));
}

/* Where the memory columns come from, and how far each source reaches. */
static void print_memsrc(FILE *f, const struct bench_memsrc *s)
{
	if (s->kind == MEM_RSS)
		fprintf(f, "# memory: RSS from %s, %s;", s->path, s->note);
	else
		fprintf(f, "# memory: cgroup %s %s%s%s;", s->kind == MEM_CGROUP_V1 ? "v1" : "v2",
		        s->path, s->note[0] ? ", " : "", s->note);
	fprintf(f, " thp_split_pmd from /proc/vmstat (machine-wide); AnonHugePages from "
	           "/proc/self/smaps_rollup (process-wide)\n");
}

static void print_facts(FILE *f, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	const struct bench_machine *m = &r->m;
	char size[32], piece[32];
	fprintf(f, "# purge-bench, libpurge %d.%d: %s, %ld CPUs, Linux %s %s, page %ld, THP %s\n",
	        PURGE_VERSION_MAJOR, PURGE_VERSION_MINOR, m->cpu, m->cpus, m->kernel, m->arch,
	        m->page, m->thp);
	fprintf(f, "# load average %.2f before, %.2f after; auto mode picks %s for %s\n",
	        m->load_start[0], m->load_end[0], m->backend, bench_advices[o->advice]);
	fprintf(f, "# params: --size %s --piece %s --layout %s --advice %s --mode %s --batch ",
	        size_str(size, sizeof(size), o->size), size_str(piece, sizeof(piece), o->piece),
	        bench_layouts[o->layout], bench_advices[o->advice], bench_modes[o->mode]);
	for (unsigned i = 0; i < o->nvlens; i++)
		fprintf(f, "%s%u", i ? "," : "", o->vlens[i]);
	fprintf(f, " --repeat %u --threads %u --thp %s --seed %u%s", o->repeat, o->threads,
	        bench_thps[o->thp], o->seed, o->refault ? " --refault" : "");
	if (o->layout == LAYOUT_FRAMES)
		fprintf(f, " --frames-at-once %u --max-pending %s", o->frames_at_once,
		        size_str(size, sizeof(size), o->max_pending));
	fputc('\n', f);
	fprintf(f, "# threads: %s; %zu pieces (%zu pages) per pass; sweep took %.1f s\n",
	        m->pinning, r->npieces, r->res.pages, r->res.wall_s);
	if (o->layout == LAYOUT_FRAMES)
		print_frames(f, o);
	if (bench_mem_measured(o))
		print_memsrc(f, &m->mem);
	fprintf(f,
	        "# time: purge only, rows interleaved pass by pass; ns/page = median / pages; "
	        "vs-* = median / that row's median; spread = p90/p10 (! above %.1f)\n",
	        BENCH_SPREAD_MAX);
}

static void table_row(FILE *f, const struct bench_report *r, const struct bench_result *x)
{
	char vlen[16] = "-";
	double v[NFIELDS];
	if (x->vlen)
		snprintf(vlen, sizeof(vlen), "%u", x->vlen);
	fprintf(f, "%-14s %5s", bench_rows[x->kind], vlen);
	if (x->skipped) {
		fprintf(f, "  n/a: %s\n", x->skipped);
		return;
	}
	fields(r, x, v);
	fprintf(f, " %10.3f %9.3f %9.3f %6.2f%c %9.1f %8.3f %8.3f %8.0f", v[MEDIAN] / 1e6,
	        v[P10] / 1e6, v[P90] / 1e6, v[SPREAD], v[SPREAD] > BENCH_SPREAD_MAX ? '!' : ' ',
	        v[NS_PER_PAGE], v[VS_LOOP], v[VS_FLOOR], v[SYSCALLS]);
	if (v[REFAULT] >= 0)
		fprintf(f, " %10.3f", v[REFAULT] / 1e6);
	fputc('\n', f);
}

/* One value of the memory table: its unit, or "-" when unknown. */
static void mem_cell(FILE *f, int k, double v)
{
	if (isnan(v))
		fprintf(f, " %*s", mem_cols[k].width, "-");
	else
		fprintf(f, " %*.*f", mem_cols[k].width, mem_cols[k].prec, v / mem_cols[k].unit);
}

/* The memory each row's purge freed, beside its time. */
static void print_memory(FILE *f, const struct bench_report *r)
{
	fprintf(f,
	        "\nmemory per pass, median of %u (sizes in MiB; @half: after the first half of "
	        "the pieces, with the\n automatic flushes they triggered; left@half = drop@half / "
	        "purged@half: of what was purged\n by then, the share that left the %s at once; "
	        "fr_whole, fr_split: frames purged whole or in\n part, held@half: parts held for "
	        "their frame, counted by purge-huge's queue):\n%-14s %5s %10s",
	        r->res.repeat, r->m.mem.kind == MEM_RSS ? "RSS" : "cgroup", "row", "vlen",
	        "median_ms");
	for (int k = 0; k < MF_FIELDS; k++)
		fprintf(f, " %*s", mem_cols[k].width, mem_cols[k].head);
	for (size_t i = 0; i < r->res.nrows; i++) {
		const struct bench_result *x = &r->res.rows[i];
		char vlen[16] = "-";
		if (x->vlen)
			snprintf(vlen, sizeof(vlen), "%u", x->vlen);
		fprintf(f, "\n%-14s %5s", bench_rows[x->kind], vlen);
		if (x->skipped) {
			fprintf(f, "  n/a: %s", x->skipped);
			continue;
		}
		fprintf(f, " %10.3f", x->time.median / 1e6);
		for (int k = 0; k < MF_FIELDS; k++)
			mem_cell(f, k, x->mem ? x->mem_median[k] : NAN);
	}
	fputc('\n', f);
}

/* What the suggestion came from: the table shows run 1 only. */
static void print_run_medians(FILE *f, const struct bench_report *r)
{
	fprintf(f,
	        "  purge-default median_ms by run (run 1 is the table above; * = the run's "
	        "pick):\n  %5s",
	        "vlen");
	for (unsigned k = 0; k < r->npicks; k++) {
		char run[16];
		snprintf(run, sizeof(run), "run %u", k + 1);
		fprintf(f, " %9s ", run);
	}
	for (unsigned i = 0; i < r->o->nvlens; i++) {
		fprintf(f, "\n  %5u", r->o->vlens[i]);
		for (unsigned k = 0; k < r->npicks; k++)
			if (r->medians[k][i] < 0)
				fprintf(f, " %9s ", "-");
			else
				fprintf(f, " %9.3f%c", r->medians[k][i] / 1e6,
				        r->picks[k] == r->o->vlens[i] ? '*' : ' ');
	}
	fputc('\n', f);
}

static void print_suggest(FILE *f, const struct bench_report *r)
{
	if (r->suggest)
		fprintf(f, "\nsuggest: PURGE_BATCH=%u (runs picked", r->suggest);
	else
		fprintf(f, "\nsuggest: none stable (runs picked");
	for (unsigned i = 0; i < r->npicks; i++)
		fprintf(f, "%s%u", i ? ", " : " ", r->picks[i]);
	if (r->suggest)
		fprintf(f, ": two of %u agree)\n", r->npicks);
	else
		fprintf(f, ": no two agree)\n");
	fprintf(f,
	        "  each run picks the smallest vlen whose purge-default median is within %.0f%%\n"
	        "  of its best; two runs that agree are weak evidence on a noisy machine, where\n"
	        "  vlens that close trade places from run to run: check the medians below\n",
	        BENCH_TOLERANCE * 100);
	print_run_medians(f, r);
}

/* Last, so that it is the line a reader acts on. */
static void print_conclusion(FILE *f, const struct bench_report *r)
{
	char line[512];
	bench_conclude(r, line, sizeof(line));
	if (line[0])
		fprintf(f, "\n%s\n", line);
}

void bench_print_table(FILE *f, const struct bench_report *r)
{
	print_facts(f, r);
	fprintf(f, "\n%-14s %5s %10s %9s %9s %7s %9s %8s %8s %8s%s", "row", "vlen", "median_ms",
	        "p10_ms", "p90_ms", "spread", "ns/page", "vs-loop", "vs-floor", "syscalls",
	        r->o->refault ? " refault_ms" : "");
	for (size_t i = 0; i < r->res.nrows; i++) {
		const struct bench_result *x = &r->res.rows[i];
		/* a blank line before each vlen group keeps the rows to compare together */
		if (!i || x->vlen != r->res.rows[i - 1].vlen)
			fputc('\n', f);
		table_row(f, r, x);
	}
	if (bench_mem_measured(r->o))
		print_memory(f, r);
	if (r->o->suggest)
		print_suggest(f, r);
	for (unsigned i = 0; i < r->nwarn; i++)
		fprintf(f, "%swarning: %s\n", i ? "" : "\n", r->warn[i]);
	print_conclusion(f, r);
}

/* Skipped rows and unmeasured fields are empty; the last column says why a
 * row was skipped (the reasons hold no commas). */
void bench_print_csv(FILE *f, const struct bench_report *r)
{
	double v[NFIELDS];
	fprintf(f, "row,vlen");
	for (int k = 0; k < NFIELDS; k++)
		fprintf(f, ",%s", field_names[k]);
	for (int k = 0; k < MF_FIELDS; k++)
		fprintf(f, ",%s", bench_mem_names[k]);
	fprintf(f, ",skipped");
	for (size_t i = 0; i < r->res.nrows; i++) {
		const struct bench_result *x = &r->res.rows[i];
		fprintf(f, "\n%s,", bench_rows[x->kind]);
		if (x->vlen)
			fprintf(f, "%u", x->vlen);
		fields(r, x, v);
		for (int k = 0; k < NFIELDS; k++)
			if (x->skipped || v[k] < 0)
				fputc(',', f);
			else
				fprintf(f, ",%.*f", field_prec[k], v[k]);
		for (int k = 0; k < MF_FIELDS; k++)
			if (x->skipped || !x->mem || isnan(x->mem_median[k]))
				fputc(',', f);
			else
				fprintf(f, ",%.*f", mem_prec(k), x->mem_median[k]);
		fprintf(f, ",%s", x->skipped ? x->skipped : "");
	}
	fputc('\n', f);
}

/* s quoted and escaped for JSON (the CPU model and warnings come from
 * outside), in one of 8 rotating buffers so a printf can take several. */
static const char *jstr(const char *s)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];
	size_t n = 0;
	b[n++] = '"';
	for (; *s && n < sizeof(bufs[0]) - 8; s++)
		if (*s == '"' || *s == '\\')
			n += (size_t)sprintf(b + n, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			n += (size_t)sprintf(b + n, "\\u%04x", *s);
		else
			b[n++] = *s;
	strcpy(b + n, "\"");
	return b;
}

/* [a, b, ...] with prec decimals; NAN, and negative values where they
 * mean unknown, as null. */
static void json_values(FILE *f, const double *v, size_t n, int prec, bool negative_unknown)
{
	for (size_t i = 0; i < n; i++)
		if (isnan(v[i]) || (negative_unknown && v[i] < 0))
			fprintf(f, "%snull", i ? ", " : "[");
		else
			fprintf(f, "%s%.*f", i ? ", " : "[", prec, v[i]);
	fputs(n ? "]" : "[]", f);
}

static void json_array(FILE *f, const double *v, size_t n, int prec)
{
	json_values(f, v, n, prec, true);
}

static void json_memsrc(FILE *f, const struct bench_report *r)
{
	const struct bench_memsrc *s = &r->m.mem;
	if (!bench_mem_measured(r->o) || !s->kind) {
		fprintf(f, "  \"memory\": {\"measured\": false},\n");
		return;
	}
	fprintf(
	    f,
	    "  \"memory\": {\"measured\": true, \"usage\": \"%s\", \"path\": %s, \"note\": %s,\n"
	    "    \"thp_split_pmd\": \"/proc/vmstat, machine-wide\", \"anon_huge\": "
	    "\"/proc/self/smaps_rollup, process-wide\"},\n",
	    mem_usage_names[s->kind], jstr(s->path), jstr(s->note));
}

/* A row's memory medians (the known ones), then its samples by field. */
static void json_mem(FILE *f, const struct bench_result *x, unsigned repeat, bool samples)
{
	if (!samples) {
		for (int k = 0; k < MF_FIELDS; k++)
			if (!isnan(x->mem_median[k]))
				fprintf(f, ", \"%s\": %.*f", bench_mem_names[k], mem_prec(k),
				        x->mem_median[k]);
		return;
	}
	fprintf(f, ",\n      \"mem_samples\": {");
	for (int k = 0; k < MF_FIELDS; k++) {
		fprintf(f, "%s\"%s\": ", k ? ", " : "", bench_mem_names[k]);
		json_values(f, x->mem + k * repeat, repeat, mem_prec(k), false);
	}
	fputc('}', f);
}

static void json_head(FILE *f, const struct bench_report *r)
{
	const struct bench_machine *m = &r->m;
	const struct bench_opts *o = r->o;
	fprintf(
	    f, "{\n  \"schema_version\": %d, \"tool\": \"purge-bench\", \"libpurge\": \"%d.%d\",\n",
	    BENCH_JSON_SCHEMA, PURGE_VERSION_MAJOR, PURGE_VERSION_MINOR);
	fprintf(f,
	        "  \"machine\": {\"cpu\": %s, \"cpus\": %ld, \"page_size\": %ld, \"kernel\": %s, "
	        "\"arch\": %s,\n    \"thp\": %s, \"backend\": %s, \"pinning\": %s,\n    "
	        "\"loadavg_start\": ",
	        jstr(m->cpu), m->cpus, m->page, jstr(m->kernel), jstr(m->arch), jstr(m->thp),
	        jstr(m->backend), jstr(m->pinning));
	json_array(f, m->load_start, 3, 2);
	fprintf(f, ", \"loadavg_end\": ");
	json_array(f, m->load_end, 3, 2);
	fprintf(f,
	        "},\n  \"params\": {\"size\": %zu, \"piece\": %zu, \"layout\": \"%s\", "
	        "\"advice\": \"%s\", \"mode\": \"%s\", \"batch\": [",
	        o->size, o->piece, bench_layouts[o->layout], bench_advices[o->advice],
	        bench_modes[o->mode]);
	for (unsigned i = 0; i < o->nvlens; i++)
		fprintf(f, "%s%u", i ? ", " : "", o->vlens[i]);
	fprintf(f,
	        "],\n    \"repeat\": %u, \"threads\": %u, \"thp\": \"%s\", \"seed\": %u, "
	        "\"refault\": %s, \"suggest\": %s,\n    \"frame\": %zu, ",
	        o->repeat, o->threads, bench_thps[o->thp], o->seed, o->refault ? "true" : "false",
	        o->suggest ? "true" : "false", o->frame);
	if (o->layout == LAYOUT_FRAMES)
		fprintf(f, "\"frames_at_once\": %u, \"max_pending\": %zu},\n", o->frames_at_once,
		        o->max_pending);
	else
		fprintf(f, "\"frames_at_once\": null, \"max_pending\": null},\n");
	json_memsrc(f, r);
	fprintf(f, "  \"pieces\": %zu, \"pages\": %zu, \"wall_s\": %.2f,\n", r->npieces,
	        r->res.pages, r->res.wall_s);
}

static void json_row(FILE *f, const struct bench_report *r, const struct bench_result *x)
{
	double v[NFIELDS];
	fprintf(f, "    {\"row\": \"%s\", \"vlen\": ", bench_rows[x->kind]);
	fprintf(f, x->vlen ? "%u" : "null%.0u", x->vlen);
	if (x->skipped) {
		fprintf(f, ", \"skipped\": true, \"skip_reason\": %s}", jstr(x->skipped));
		return;
	}
	fprintf(f, ", \"skipped\": false");
	fields(r, x, v);
	for (int k = 0; k < NFIELDS; k++)
		if (v[k] >= 0)
			fprintf(f, ", \"%s\": %.*f", field_names[k], field_prec[k], v[k]);
	if (x->mem)
		json_mem(f, x, r->res.repeat, false);
	fprintf(f, ", \"noisy\": %s,\n      \"samples_ns\": ",
	        v[SPREAD] > BENCH_SPREAD_MAX ? "true" : "false");
	json_array(f, x->ns, r->res.repeat, 0);
	if (r->o->refault) {
		fprintf(f, ", \"refault_samples_ns\": ");
		json_array(f, x->refault_ns, r->res.repeat, 0);
	}
	if (x->mem)
		json_mem(f, x, r->res.repeat, true);
	fputc('}', f);
}

void bench_print_json(FILE *f, const struct bench_report *r)
{
	json_head(f, r);
	fprintf(f, "  \"rows\": [\n");
	for (size_t i = 0; i < r->res.nrows; i++) {
		json_row(f, r, &r->res.rows[i]);
		fputs(i + 1 < r->res.nrows ? ",\n" : "\n", f);
	}
	fprintf(f, "  ],\n  \"warnings\": [");
	for (unsigned i = 0; i < r->nwarn; i++)
		fprintf(f, "%s%s", i ? ",\n    " : "\n    ", jstr(r->warn[i]));
	char line[512];
	bench_conclude(r, line, sizeof(line));
	fprintf(f, "],\n  \"conclusion\": %s", line[0] ? jstr(line) : "null");
	fprintf(f, ",\n  \"suggest\": ");
	if (!r->o->suggest) {
		fprintf(f, "null\n}\n");
		return;
	}
	fprintf(f, r->suggest ? "{\"PURGE_BATCH\": %u" : "{\"PURGE_BATCH\": null%.0u", r->suggest);
	fprintf(f, ", \"tolerance\": %.2f, \"runs\": [", BENCH_TOLERANCE);
	for (unsigned i = 0; i < r->npicks; i++)
		fprintf(f, "%s%u", i ? ", " : "", r->picks[i]);
	fprintf(f, "], \"agrees_with_table\": %s,\n    \"medians_ns\": [",
	        !r->suggest             ? "null"
	        : bench_table_agrees(r) ? "true"
	                                : "false");
	for (unsigned i = 0; i < r->npicks; i++) {
		fputs(i ? ", " : "", f);
		json_array(f, r->medians[i], r->o->nvlens, 0);
	}
	fprintf(f, "]}\n}\n");
}
