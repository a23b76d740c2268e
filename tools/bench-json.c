// SPDX-License-Identifier: MIT
/* purge-bench JSON output: one object with machine, params, rows, suggest. */
#include <string.h>

#include "bench-output.h"
#include "bench-stats.h"

/* A JSON string: quotes, backslashes and control characters escaped (the
 * CPU model and pinning note come from outside and may contain anything). */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_machine(FILE *f, const struct bench_machine *m)
{
	fprintf(f, "  \"machine\": {\"cpu\": ");
	json_str(f, m->cpu);
	fprintf(f, ", \"cores\": %ld, \"kernel\": ", m->cores);
	json_str(f, m->kernel);
	fprintf(f, ", \"arch\": ");
	json_str(f, m->arch);
	fprintf(f, ", \"thp\": ");
	json_str(f, m->thp);
	fprintf(f, ", \"page_size\": %ld, \"backend\": ", m->page);
	json_str(f, m->backend);
	fprintf(f, ", \"loadavg_start\": ");
	json_str(f, m->load_start);
	fprintf(f, ", \"loadavg_end\": ");
	json_str(f, m->load_end);
	fprintf(f, "},\n");
}

static void json_params(FILE *f, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	fprintf(f,
	        "  \"params\": {\"size\": %zu, \"piece\": %zu, \"layout\": \"%s\", "
	        "\"advice\": \"%s\", \"batch\": [",
	        o->size, o->piece, bench_layout_name(o->layout), bench_advice_name(o->advice));
	for (unsigned i = 0; i < o->nvlens; i++)
		fprintf(f, "%s%u", i ? ", " : "", o->vlens[i]);
	fprintf(f,
	        "], \"repeat\": %u, \"threads\": %u, \"thp\": \"%s\", \"seed\": %u, "
	        "\"refault\": %s, \"pinning\": ",
	        o->repeat, o->threads, bench_thp_name(o->thp), o->seed,
	        o->refault ? "true" : "false");
	json_str(f, r->pinning);
	fprintf(f, "},\n");
}

static void json_row(FILE *f, const struct bench_report *r, size_t i)
{
	const struct bench_result *x = &r->res->rows[i];
	fprintf(f, "    {\"row\": \"%s\", \"vlen\": ", bench_row_name(x->kind));
	if (x->vlen)
		fprintf(f, "%u", x->vlen);
	else
		fprintf(f, "null");
	if (x->skipped) {
		fprintf(f, ", \"skipped\": true}");
		return;
	}
	struct bench_metrics m = bench_metrics(r, i);
	fprintf(f,
	        ", \"median_ns\": %.0f, \"p10_ns\": %.0f, \"p90_ns\": %.0f, "
	        "\"ns_per_page\": %.2f, \"vs_loop\": %.4f, \"vs_floor\": %.4f, \"syscalls\": %llu",
	        m.median_ns, m.p10_ns, m.p90_ns, m.ns_per_page, m.vs_loop, m.vs_floor,
	        (unsigned long long)x->syscalls);
	if (r->o->refault)
		fprintf(f, ", \"refault_median_ns\": %.0f", m.refault_ns);
	fputc('}', f);
}

void bench_print_json(FILE *f, const struct bench_report *r)
{
	fprintf(f, "{\n  \"tool\": \"purge-bench\", \"libpurge\": \"%d.%d\",\n",
	        PURGE_VERSION_MAJOR, PURGE_VERSION_MINOR);
	json_machine(f, r->m);
	json_params(f, r);
	fprintf(f, "  \"pieces\": %zu, \"pages\": %zu, \"wall_s\": %.2f,\n", r->npieces,
	        r->res->pages, r->res->wall_s);
	fprintf(f, "  \"rows\": [\n");
	for (size_t i = 0; i < r->res->nrows; i++) {
		json_row(f, r, i);
		fprintf(f, "%s\n", i + 1 < r->res->nrows ? "," : "");
	}
	fprintf(f, "  ],\n  \"suggest\": ");
	if (r->o->suggest && r->suggest)
		fprintf(f, "{\"PURGE_BATCH\": %u, \"tolerance\": %.2f}\n}\n", r->suggest,
		        BENCH_SUGGEST_TOLERANCE);
	else
		fprintf(f, "null\n}\n");
}
