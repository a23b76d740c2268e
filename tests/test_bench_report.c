// SPDX-License-Identifier: MIT
/* Unit test of purge-bench's report: statistics, --suggest, the noise
 * checks and the printers (table, CSV, JSON), on a fake sweep; no timing. */
#include "bench_test.h"

static double pct(const double *in, size_t n, double q)
{
	double v[16];
	memcpy(v, in, n * sizeof(*v));
	return bench_percentile(v, n, q);
}

Test(stats, percentiles)
{
	const double four[] = {4, 1, 3, 2};
	const double five[] = {50, 10, 40, 20, 30};
	const double one[] = {7};
	cr_expect_float_eq(pct(four, 4, 50), 2.5, 1e-12);
	cr_expect_float_eq(pct(five, 5, 50), 30, 1e-12);
	cr_expect_float_eq(pct(five, 5, 10), 14, 1e-12);
	cr_expect_float_eq(pct(five, 5, 90), 46, 1e-12);
	cr_expect_float_eq(pct(five, 5, 0), 10, 1e-12);
	cr_expect_float_eq(pct(five, 5, 100), 50, 1e-12);
	cr_expect_float_eq(pct(one, 1, 10), 7, 1e-12);
	cr_expect_float_eq(pct(one, 1, 90), 7, 1e-12);
}

Test(stats, summary)
{
	double v[] = {9, 1, 5, 3, 7, 2, 8, 4, 6, 10, 11};
	struct bench_summary s = bench_summarize(v, 11);
	cr_expect_float_eq(s.median, 6, 1e-12);
	cr_expect_float_eq(s.p10, 2, 1e-12);
	cr_expect_float_eq(s.p90, 10, 1e-12);
}

Test(stats, suggest_rule)
{
	const double falling[] = {100, 60, 52, 50, 51};
	cr_expect_eq(bench_suggest(falling, 5), 2, "52 is within 5%% of 50");
	const double edge[] = {105.1, 104.9, 100};
	cr_expect_eq(bench_suggest(edge, 3), 1);
	const double flat[] = {10, 10, 10};
	cr_expect_eq(bench_suggest(flat, 3), 0, "ties go to the smallest vlen");
	const double best_first[] = {1, 2, 3};
	cr_expect_eq(bench_suggest(best_first, 3), 0);
	const double best_last[] = {30, 20, 10};
	cr_expect_eq(bench_suggest(best_last, 3), 2);
	cr_expect_eq(bench_suggest(falling, 0), -1);
}

Test(stats, summary_keeps_pass_order)
{
	const double v[] = {30, 10, 20};
	struct bench_summary s = bench_summarize(v, 3);
	cr_expect_float_eq(s.median, 20, 1e-12);
	cr_expect(v[0] == 30 && v[1] == 10 && v[2] == 20, "the samples must stay in pass order");
}

Test(stats, spread)
{
	cr_expect_float_eq(bench_spread((struct bench_summary){3, 2, 5}), 2.5, 1e-12);
	cr_expect_float_eq(bench_spread((struct bench_summary){0, 0, 0}), 1, 1e-12);
}

Test(stats, settle)
{
	cr_expect_eq(bench_settle((const unsigned[]){256}, 1), 0, "one run cannot agree");
	cr_expect_eq(bench_settle((const unsigned[]){512, 512}, 2), 512);
	cr_expect_eq(bench_settle((const unsigned[]){256, 512, 256}, 3), 256);
	cr_expect_eq(bench_settle((const unsigned[]){64, 256, 512, 256}, 4), 256);
	cr_expect_eq(bench_settle((const unsigned[]){256, 512, 64, 1024}, 4), 0, "no two agree");
	cr_expect_eq(bench_settle((const unsigned[]){0, 0, 64, 64}, 4), 64, "0 is no pick");
}

/* A report as a sweep at vlens 1 and 64 leaves it: 8 rows of 5 passes
 * within 2% of their median, which is base[i]. */
struct fake {
	struct bench_opts o;
	struct bench_result rows[8];
	double ns[8][5], refault_ns[5];
	/* --suggest's reruns: purge-default rows only, as bench_sweep leaves them */
	struct bench_result later_rows[BENCH_SUGGEST_RUNS - 1][2];
	struct bench_results later[BENCH_SUGGEST_RUNS - 1];
	struct bench_report r;
};

/* Rerun i measured purge-default at one vlen only (none of the sweep's). */
static void fake_rerun_one(struct fake *f, unsigned i, unsigned vlen, double median)
{
	f->later_rows[i][0] = (struct bench_result){.kind = ROW_DEFAULT, .vlen = vlen};
	f->later_rows[i][0].time.median = median;
	f->later[i] = (struct bench_results){.rows = f->later_rows[i], .nrows = 1, .repeat = 5};
}

/* Rerun i measured purge-default medians m1 at vlen 1 and m64 at vlen 64. */
static void fake_rerun(struct fake *f, unsigned i, double m1, double m64)
{
	fake_rerun_one(f, i, 1, m1);
	f->later_rows[i][1] = (struct bench_result){.kind = ROW_DEFAULT, .vlen = 64};
	f->later_rows[i][1].time.median = m64;
	f->later[i].nrows = 2;
}

static const double base[8] = {1e6, 1e5, 1e6, 1e6, 1e6, 2e5, 2.02e5, 2.01e5};

static void fake_init(struct fake *f)
{
	static const double jitter[5] = {1.0, 1.01, 0.99, 1.02, 0.98};
	memset(f, 0, sizeof(*f));
	cr_assert_eq(PARSE(&f->o, "--batch", "1,64", "--suggest"), 0);
	for (int i = 0; i < 8; i++) {
		struct bench_result *x = &f->rows[i];
		x->kind = i < 2 ? (enum bench_row)i : (enum bench_row)(ROW_RAW + (i - 2) % 3);
		x->vlen = i < 2 ? 0 : i < 5 ? 1 : 64;
		x->syscalls = i < 2 ? 100u * (1 - i) + 1 : x->vlen == 1 ? 100 : 2;
		for (int j = 0; j < 5; j++)
			f->ns[i][j] = base[i] * jitter[j];
		x->ns = f->ns[i];
		x->refault_ns = f->refault_ns;
	}
	f->r.o = &f->o;
	f->r.res = (struct bench_results){
	    .rows = f->rows, .nrows = 8, .repeat = 5, .pages = 100, .wall_s = 1.5};
	f->r.m = (struct bench_machine){
	    .cpu = "Xeon \"Gold\" \\\t", .cpus = 2, .page = 4096, .backend = "vectored"};
	for (int i = 0; i < 3; i++)
		f->r.m.load_start[i] = f->r.m.load_end[i] = 0.1;
	f->r.npieces = 100;
	for (unsigned i = 0; i < BENCH_SUGGEST_RUNS - 1; i++) /* 2, 8, 32: none agrees with 64 */
		fake_rerun_one(f, i, 2u << (2 * i), 1e5);
}

/* Summaries, --suggest's picks and the warnings, as purge-bench makes them. */
static struct bench_report *fake_done(struct fake *f, unsigned npicks)
{
	for (int i = 0; i < 8; i++)
		bench_summarize_row(&f->rows[i], 5);
	f->r.npicks = f->r.nwarn = 0;
	bench_add_run(&f->r, &f->r.res);
	for (unsigned i = 1; i < npicks; i++)
		bench_add_run(&f->r, &f->later[i - 1]);
	bench_check_noise(&f->r);
	return &f->r;
}

Test(stats, pick)
{
	struct fake f;
	fake_init(&f);
	cr_expect_eq(bench_pick(&(struct bench_results){
	                 .rows = f.rows, .nrows = 8, .repeat = 5, .pages = 100, .wall_s = 1}),
	             1, "every median 0 (not summarised): a tie, the smallest vlen wins");
	fake_done(&f, 1);
	cr_expect_eq(f.r.picks[0], 64, "default at 64 is 5x faster than at 1");
	for (int j = 0; j < 5; j++)
		f.ns[4][j] = 2.1e5;
	cr_expect_eq(bench_pick(&fake_done(&f, 1)->res), 1, "within 5%%: the smaller vlen");
}

static unsigned count_warnings(const struct bench_report *r, const char *needle)
{
	unsigned n = 0;
	for (unsigned i = 0; i < r->nwarn; i++)
		n += strstr(r->warn[i], needle) != NULL;
	return n;
}

Test(noise, quiet_machine_no_warning)
{
	struct fake f;
	fake_init(&f);
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0, "first: %s", f.r.warn[0]);
}

Test(noise, load_average)
{
	struct fake f;
	fake_init(&f);
	f.r.m.load_start[0] = 1.0; /* exactly half a task per CPU: not above */
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0);
	fake_init(&f);
	f.r.m.load_start[0] = 1.01;
	cr_expect_eq(count_warnings(fake_done(&f, 1), "load average 1.01"), 1);
	fake_init(&f);
	f.o.threads = 2;
	f.r.m.load_end[0] = 2.9; /* 0.9 once the run's own 2 threads are taken off */
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0);
	fake_init(&f);
	f.o.threads = 2;
	f.r.m.load_end[0] = 3.2;
	cr_expect_eq(count_warnings(fake_done(&f, 1), "load average"), 1, "loaded during the run");
	fake_init(&f);
	f.r.m.load_start[0] = f.r.m.load_end[0] = -1;
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0, "unknown load is not a warning");
}

Test(noise, wide_spread)
{
	struct fake f;
	fake_init(&f);
	for (int j = 0; j < 5; j++) /* p10 1e5, p90 2e5: at the limit, not above */
		f.ns[7][j] = j % 2 ? 2e5 : 1e5;
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0, "spread %.3f", bench_spread(f.rows[7].time));
	fake_init(&f);
	for (int j = 0; j < 5; j++) {
		f.ns[2][j] = j % 2 ? 2.5e6 : 1e6;
		f.ns[7][j] = j % 2 ? 3e5 : 1e5;
	}
	fake_done(&f, 1);
	cr_expect_eq(count_warnings(&f.r, "2 of 8 rows have p90/p10 above 2.0"), 1);
	cr_expect_eq(count_warnings(&f.r, "purge-default at vlen 64, 3.00"), 1, "names the worst");
}

Test(noise, unstable_suggest)
{
	struct fake f;
	fake_init(&f);
	cr_expect_eq(fake_done(&f, 4)->suggest, 0);
	cr_expect_eq(count_warnings(&f.r, "no two of 4 runs"), 1);
	fake_init(&f);
	fake_rerun(&f, 0, 1e6, 2e5);
	cr_expect_eq(fake_done(&f, 2)->suggest, 64);
	cr_expect_eq(f.r.nwarn, 0, "two runs agreed: %s", f.r.warn[0]);
	fake_init(&f);
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0, "--suggest not asked: one pick, no warning");
}

/* What a printer writes, as one string (free it). */
static char *print(bench_printer *p, const struct bench_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert(f);
	p(f, r);
	fclose(f);
	return buf;
}

static unsigned count_char(const char *s, char c)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

/* The CSV line of a skipped row: its row and vlen, 20 empty fields, why. */
static const char *skipped_line(const char *row_vlen, const char *why)
{
	static char buf[256];
	snprintf(buf, sizeof(buf), "\n%s%.21s%s\n", row_vlen, ",,,,,,,,,,,,,,,,,,,,,,,,", why);
	return buf;
}

Test(output, csv_header_first_then_rows)
{
	struct fake f;
	fake_init(&f);
	f.rows[5].skipped = "refused"; /* raw-pmadv at 64, as when process_madvise is refused */
	char *csv = print(bench_print_csv, fake_done(&f, 1));
	const char *header = "row,vlen,median_ns,p10_ns,p90_ns,spread,ns_per_page,vs_loop,"
	                     "vs_floor,syscalls,refault_ns,thp_split_half,thp_split_end,"
	                     "purged_half,mem_drop_half,left_half,mem_drop_end,anon_huge_before,"
	                     "anon_huge_after,frames_whole,frames_split,held_half,skipped\n";
	cr_expect_eq(strncmp(csv, header, strlen(header)), 0, "first line: %.60s", csv);
	cr_expect_eq(count_char(csv, '\n'), 9, "header + 8 rows");
	cr_expect_eq(count_char(csv, ','), 9 * 22, "23 fields on every line");
	cr_expect(strstr(csv, "\nmadvise-loop,,1000000,"), "loop has no vlen:\n%s", csv);
	cr_expect(strstr(csv, skipped_line("raw-pmadv,64", "refused")),
	          "a skipped row is empty but for why:\n%s", csv);
	cr_expect(strstr(csv, "\npurge-default,64,201000,"), "%s", csv);
	cr_expect(!strchr(csv, '#'), "no comment lines");
	free(csv);
}

Test(output, json_versioned_with_samples)
{
	struct fake f;
	fake_init(&f);
	for (int j = 0; j < 5; j++)
		f.ns[7][j] = j % 2 ? 3e5 : 1e5;
	char *js = print(bench_print_json, fake_done(&f, 4));
	cr_expect(strstr(js, "\"schema_version\": 3,"), "%s", js);
	cr_expect(strstr(js, "\"cpu\": \"Xeon \\\"Gold\\\" \\\\\\u0009\""), "escaped:\n%s", js);
	cr_expect(strstr(js, "\"samples_ns\": [1000000, 1010000, 990000, 1020000, 980000]"),
	          "samples in pass order:\n%s", js);
	cr_expect(strstr(js, "\"noisy\": true"), "%s", js);
	cr_expect(strstr(js, "\"loadavg_start\": [0.10, 0.10, 0.10]"), "%s", js);
	cr_expect(strstr(js, "\"suggest\": {\"PURGE_BATCH\": null, \"tolerance\": 0.05, "
	                     "\"runs\": [64, 2, 8, 32], \"agrees_with_table\": null,\n    "
	                     "\"medians_ns\": [[1000000, 100000], [null, null], [null, null], "
	                     "[null, null]]}"),
	          "%s", js);
	cr_expect(strstr(js, "\"warnings\": [\n    \"1 of 8 rows"), "%s", js);
	cr_expect(strstr(js, "\",\n    \"--suggest: no two of 4 runs"), "%s", js);
	cr_expect_eq(count_char(js, '{'), count_char(js, '}'));
	cr_expect_eq(count_char(js, '['), count_char(js, ']'));
	free(js);
}

Test(output, table_flags_noise)
{
	struct fake f;
	fake_init(&f);
	for (int j = 0; j < 5; j++)
		f.ns[7][j] = j % 2 ? 3e5 : 1e5;
	f.r.m.load_start[0] = 1.5;
	char *t = print(bench_print_table, fake_done(&f, 2));
	cr_expect(strstr(t, "  3.00!"), "the noisy row is marked:\n%s", t);
	cr_expect_eq(count_char(t, '!'), 2, "one row and the legend:\n%s", t);
	cr_expect(strstr(t, "\nsuggest: none stable"), "%s", t);
	cr_expect(strstr(t, "\nwarning: load average 1.50"), "%s", t);
	cr_expect(strstr(t, "\nwarning: 1 of 8 rows"), "%s", t);
	free(t);
}

/* purge-huge at vlen 64, in place of purge-nocoal, skipped as it is until
 * the library has PURGE_HUGE: every output says why, none has numbers. */
Test(output, skipped_huge_row_says_why)
{
	struct fake f;
	fake_init(&f);
	f.rows[6].kind = ROW_HUGE;
	f.rows[6].skipped = "the library lacks PURGE_HUGE";
	struct bench_report *r = fake_done(&f, 1);
	char *t = print(bench_print_table, r), *csv = print(bench_print_csv, r);
	char *js = print(bench_print_json, r);
	cr_expect(strstr(t, "\npurge-huge        64  n/a: the library lacks PURGE_HUGE\n"), "%s",
	          t);
	cr_expect(strstr(csv, skipped_line("purge-huge,64", "the library lacks PURGE_HUGE")), "%s",
	          csv);
	cr_expect(strstr(js, "{\"row\": \"purge-huge\", \"vlen\": 64, \"skipped\": true, "
	                     "\"skip_reason\": \"the library lacks PURGE_HUGE\"}"),
	          "%s", js);
	cr_expect(strstr(js, "{\"row\": \"purge-default\", \"vlen\": 64, \"skipped\": false, "
	                     "\"median_ns\""),
	          "%s", js);
	free(t);
	free(csv);
	free(js);
}

/* Each run's purge-default medians, by the sweep's vlens, and its pick. */
Test(suggest, runs_recorded)
{
	struct fake f;
	fake_init(&f);
	fake_rerun(&f, 0, 1.5e5, 2.2e5); /* picks 1 */
	fake_rerun(&f, 1, 3e5, 2.1e5);   /* picks 64: agrees with the table's run */
	fake_done(&f, 3);
	cr_expect_eq(f.r.npicks, 3);
	cr_expect(f.r.picks[0] == 64 && f.r.picks[1] == 1 && f.r.picks[2] == 64);
	cr_expect_eq(f.r.suggest, 64);
	cr_expect_float_eq(f.r.medians[0][0], 1e6, 1e-6, "run 1 is the table's sweep");
	cr_expect_float_eq(f.r.medians[0][1], 2.01e5, 1e-6);
	cr_expect_float_eq(f.r.medians[1][0], 1.5e5, 1e-6);
	cr_expect_float_eq(f.r.medians[2][1], 2.1e5, 1e-6);
	fake_init(&f);
	fake_done(&f, 2);
	cr_expect(f.r.medians[1][0] < 0 && f.r.medians[1][1] < 0, "vlens a rerun lacks: unknown");
	fake_init(&f);
	for (unsigned i = 0; i < BENCH_SUGGEST_RUNS - 1; i++)
		fake_rerun(&f, i, 1e5, 2e5);
	fake_done(&f, BENCH_SUGGEST_RUNS);
	bench_add_run(&f.r, &f.later[0]);
	cr_expect_eq(f.r.npicks, BENCH_SUGGEST_RUNS, "no room past the last run");
}

/* The agreement rule: a suggestion agrees with the table when, in the run
 * the table shows, its median is within the tolerance of that run's best. */
Test(suggest, agrees_with_table)
{
	struct fake f;
	fake_init(&f);
	fake_rerun(&f, 0, 2e5, 2.05e5); /* both within 5%: picks 1 */
	cr_expect_eq(fake_done(&f, 2)->suggest, 0, "64 then 1: no two agree yet");
	cr_expect(bench_table_agrees(&f.r), "no suggestion: nothing to disagree with");

	/* The report's case: the table's run picks 64, the reruns agree on 1,
	 * which took 5x the best in the table. */
	fake_init(&f);
	fake_rerun(&f, 0, 1.9e5, 2e5);
	fake_rerun(&f, 1, 1.8e5, 2e5);
	cr_expect_eq(bench_settle(f.r.picks, fake_done(&f, 3)->npicks), 1, "the reruns agree");
	cr_expect_eq(f.r.suggest, 0, "the table disagrees: nothing suggested");
	cr_expect_eq(f.r.disputed, 1);
	cr_expect(bench_table_agrees(&f.r), "withdrawn: nothing left to disagree with");
	cr_expect_eq(count_warnings(&f.r, "--suggest: the reruns picked vlen 1, but"), 1,
	             "first: %s", f.r.warn[0]);
	cr_expect_eq(count_warnings(&f.r, "it took 1.000 ms against the best, 0.201 ms at vlen 64"),
	             1, "%s", f.r.warn[0]);

	/* Within the tolerance in the table's run: agrees, no warning. */
	fake_init(&f);
	for (int j = 0; j < 5; j++)
		f.ns[4][j] = 2.1e5; /* vlen 1 within 5% of 2.01e5 at 64 */
	fake_rerun(&f, 0, 1e5, 2e5);
	cr_expect_eq(fake_done(&f, 2)->suggest, 1);
	cr_expect(bench_table_agrees(&f.r));
	cr_expect_eq(f.r.nwarn, 0, "first: %s", f.r.warn[0]);
}

/* The suggestion says how weak two agreeing runs are, and shows the
 * medians it came from, run by run, beside the table's. */
Test(output, table_shows_suggest_medians)
{
	struct fake f;
	fake_init(&f);
	fake_rerun(&f, 0, 1.9e5, 2e5);
	fake_rerun(&f, 1, 1.8e5, 2e5);
	char *t = print(bench_print_table, fake_done(&f, 3));
	cr_expect(strstr(t, "\nsuggest: none stable (runs picked 64, 1, 1: no two agree)\n"),
	          "the table disagrees with the reruns' pick: no suggestion\n%s", t);
	cr_expect(strstr(t, "weak evidence"), "the caveat:\n%s", t);
	cr_expect(strstr(t, "purge-default median_ms by run"), "%s", t);
	cr_expect(strstr(t, "\n      1     1.000      0.190*     0.180*\n"), "%s", t);
	cr_expect(strstr(t, "\n     64     0.201*     0.200      0.200 \n"), "%s", t);
	cr_expect(strstr(t, "\nwarning: --suggest: the reruns picked vlen 1, but"), "%s", t);
	cr_expect(!strstr(t, "PURGE_BATCH=1 "), "never a batch the table disagrees with\n%s", t);
	free(t);
}

/* The closing line: the batch to use, its gain over the loop and why,
 * from the table's rows (loop 1e6 ns; purge-default 1e6 at 1, 2.01e5 at
 * 64), and the last line of the table. */
Test(output, conclusion)
{
	struct fake f;
	char line[512];

	fake_init(&f);
	fake_rerun(&f, 0, 1e6, 2e5);
	bench_conclude(fake_done(&f, 2), line, sizeof(line));
	cr_expect(strstr(line, "conclusion: use batch 64 (PURGE_BATCH=64, purge_config.batch): "
	                       "the smallest batch within 5% of the fastest, in the table's run "
	                       "and in two runs that agree"),
	          "%s", line);
	cr_expect(strstr(line, "took 0.201 ms against 1.000 ms for one madvise() per range, 5.0x"),
	          "%s", line);
	char *t = print(bench_print_table, &f.r);
	cr_expect(strstr(t, line) && !strcmp(strstr(t, line) + strlen(line), "\n"),
	          "the table ends with it:\n%s", t);
	free(t);

	fake_init(&f); /* no two agree: the largest batch of the sweep (1024 when swept) */
	bench_conclude(fake_done(&f, 4), line, sizeof(line));
	cr_expect(strstr(line, "use batch 64 (PURGE_BATCH=64, purge_config.batch): no two runs "
	                       "agreed on a smaller batch"),
	          "%s", line);

	fake_init(&f); /* the table against the reruns: not their pick */
	fake_rerun(&f, 0, 1.9e5, 2e5);
	fake_rerun(&f, 1, 1.8e5, 2e5);
	bench_conclude(fake_done(&f, 3), line, sizeof(line));
	cr_expect(strstr(line, "use batch 64") && strstr(line, "disagreed"), "%s", line);

	fake_init(&f); /* one run, no --suggest */
	f.o.suggest = false;
	bench_conclude(fake_done(&f, 1), line, sizeof(line));
	cr_expect(strstr(line, "use batch 64") && strstr(line, "in this one run"), "%s", line);

	fake_init(&f); /* no loop row: nothing to compare */
	f.r.res.rows[0].kind = ROW_FLOOR;
	bench_conclude(fake_done(&f, 1), line, sizeof(line));
	cr_expect_str_eq(line, "");
}

Test(stats, median_known)
{
	const double v[] = {NAN, 3, 1, NAN, 2};
	cr_expect_float_eq(bench_median_known(v, 5), 2, 1e-12, "NANs are not values");
	cr_expect_float_eq(bench_median_known(v + 1, 2), 2, 1e-12);
	cr_expect(isnan(bench_median_known(v, 1)), "only NAN: unknown");
	cr_expect(isnan(bench_median_known(v, 0)));
}

/* --thp madvise: every row of the fake gets memory samples as a pass
 * leaves them: 12 splits by half-way, 25 by the end; 24 MiB purged by
 * half-way, of which 18 MiB left the cgroup (0.75); 64 MiB by the end. */
static double fake_mem_samples[8][MF_FIELDS][5];

static void fake_mem(struct fake *f)
{
	static const double per_pass[MF_FIELDS] = {12,       25, 24 << 20, 18 << 20, 0.75, 64 << 20,
	                                           64 << 20, 0,  NAN,      NAN,      NAN};
	f->o.thp = THP_MADVISE;
	f->r.m.mem = (struct bench_memsrc){.kind = MEM_CGROUP_V1, .path = "/cg/memory.usage"};
	for (int i = 0; i < 8; i++) {
		for (int k = 0; k < MF_FIELDS; k++)
			for (int j = 0; j < 5; j++)
				fake_mem_samples[i][k][j] = per_pass[k];
		fake_mem_samples[i][MF_DROP_HALF][0] = NAN; /* one pass could not read it */
		f->rows[i].mem = &fake_mem_samples[i][0][0];
	}
	for (int j = 0; j < 5; j++) { /* floor purges nothing by half-way: no share */
		fake_mem_samples[1][MF_PURGED_HALF][j] = 0;
		fake_mem_samples[1][MF_LEFT_HALF][j] = NAN;
	}
}

Test(output, memory_table)
{
	struct fake f;
	fake_init(&f);
	fake_mem(&f);
	char *t = print(bench_print_table, fake_done(&f, 1));
	cr_expect(strstr(t, "\n# memory: cgroup v1 /cg/memory.usage"), "%s", t);
	/* global-counter-ok: the label the table prints, nothing read */
	cr_expect(strstr(t, "thp_split_pmd from /proc/vmstat (machine-wide)"), "%s", t);
	cr_expect(strstr(t, "smaps_rollup (process-wide)"), "%s", t);
	cr_expect(strstr(t, "\nmemory per pass"), "%s", t);
	cr_expect(strstr(t, "\npurge-default     64      0.201         12        25        24.0"
	                    "      18.0      0.75     64.0       64.0      0.0"),
	          "%s", t);
	cr_expect(strstr(t, "\nfloor              -      0.100         12        25         0.0"
	                    "      18.0         -"),
	          "%s", t);
	free(t);
}

Test(output, memory_csv_and_json)
{
	struct fake f;
	fake_init(&f);
	fake_mem(&f);
	struct bench_report *r = fake_done(&f, 1);
	char *csv = print(bench_print_csv, r), *js = print(bench_print_json, r);
	cr_expect(strstr(csv,
	                 ",refault_ns,thp_split_half,thp_split_end,purged_half,mem_drop_half,"
	                 "left_half,mem_drop_end,anon_huge_before,anon_huge_after,frames_whole,"
	                 "frames_split,held_half,skipped\n"),
	          "%s", csv);
	cr_expect(strstr(csv, "\npurge-default,64,201000,"), "%s", csv);
	cr_expect(strstr(csv, ",12,25,25165824,18874368,0.750,67108864,67108864,0,,,,\n"), "%s",
	          csv);
	cr_expect_eq(count_char(csv, ','), 9 * 22, "23 fields on every line");
	cr_expect(strstr(js, "\"memory\": {\"measured\": true, \"usage\": \"cgroup-v1\", \"path\": "
	                     "\"/cg/memory.usage\""),
	          "%s", js);
	cr_expect(strstr(js, "\"thp_split_half\": 12, \"thp_split_end\": 25, \"purged_half\": "
	                     "25165824, \"mem_drop_half\": 18874368, \"left_half\": 0.750"),
	          "%s", js);
	cr_expect(strstr(js, "\"mem_samples\": {\"thp_split_half\": [12, 12, 12, 12, 12]"), "%s",
	          js);
	cr_expect(strstr(js, "\"mem_drop_half\": [null, 18874368,"), "%s", js);
	cr_expect(!strstr(js, "\"frames_whole\": null,"), "unknown medians are left out:\n%s", js);
	cr_expect_eq(count_char(js, '{'), count_char(js, '}'));
	free(csv);
	free(js);
}

/* Without THP advice nothing is measured: empty CSV fields, no JSON ones. */
Test(output, memory_not_measured)
{
	struct fake f;
	fake_init(&f);
	struct bench_report *r = fake_done(&f, 1);
	char *t = print(bench_print_table, r), *csv = print(bench_print_csv, r);
	char *js = print(bench_print_json, r);
	cr_expect(!strstr(t, "memory per pass") && !strstr(t, "# memory:"), "%s", t);
	cr_expect(strstr(csv, "\npurge-default,64,201000,") && strstr(csv, ",,,,,,,,,,,\n"), "%s",
	          csv);
	cr_expect(strstr(js, "\"memory\": {\"measured\": false}"), "%s", js);
	cr_expect(!strstr(js, "thp_split_half"), "%s", js);
	free(t);
	free(csv);
	free(js);
}

Test(noise, memory_caveats)
{
	struct fake f;
	fake_init(&f);
	fake_mem(&f);
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0, "first: %s", f.r.warn[0]);
	fake_init(&f);
	fake_mem(&f);
	for (int j = 0; j < 5; j++)
		fake_mem_samples[4][MF_HUGE_BEFORE][j] = 32 << 20; /* half of 64M */
	cr_expect_eq(count_warnings(fake_done(&f, 1), "32.0 of 64.0 MiB in huge pages"), 1,
	             "first: %s", f.r.warn[0]);
	fake_init(&f);
	fake_mem(&f);
	f.o.thp = THP_NEVER; /* the control: no huge pages expected */
	for (int j = 0; j < 5; j++)
		fake_mem_samples[4][MF_HUGE_BEFORE][j] = 0;
	cr_expect_eq(fake_done(&f, 1)->nwarn, 0, "first: %s", f.r.warn[0]);
	fake_init(&f);
	fake_mem(&f);
	f.r.m.mem = (struct bench_memsrc){.kind = MEM_RSS,
	                                  .path = "/proc/self/statm",
	                                  .note = "no cgroup memory usage (x: gone)"};
	cr_expect_eq(count_warnings(fake_done(&f, 1), "RSS drops when a huge page is split"), 1,
	             "first: %s", f.r.warn[0]);
}
