// SPDX-License-Identifier: MIT
/* Unit test of purge-bench's parsing, statistics, noise checks, output and
 * memory readers (on fake files; no timing). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "bench.h"
#include "purge.h"

#define PAGE  4096
#define FRAME (2u << 20) /* hpage_pmd_size on x86_64 */

static size_t size_of(const char *s)
{
	size_t v = 0;
	cr_assert_eq(bench_parse_size(s, &v), 0, "'%s' should parse", s);
	return v;
}

Test(size, units)
{
	cr_expect_eq(size_of("256M"), (size_t)256 << 20);
	cr_expect_eq(size_of("4K"), 4096);
	cr_expect_eq(size_of("1G"), (size_t)1 << 30);
	cr_expect_eq(size_of("4096"), 4096);
	cr_expect_eq(size_of("4k"), 4096);
	cr_expect_eq(size_of("2KiB"), 2048);
	cr_expect_eq(size_of("1mb"), (size_t)1 << 20);
	cr_expect_eq(size_of("1T"), (size_t)1 << 40);
}

Test(size, invalid)
{
	static const char *const bad[] = {"",     "M",   "abc", "-4K", " 4K",  "+4K", "4X",
	                                  "4KB2", "4 K", "0",   "0K",  "1.5M", "4Kx", "0x10"};
	size_t v = 7;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(bench_parse_size(bad[i], &v), -EINVAL, "'%s' accepted", bad[i]);
	cr_expect_eq(v, 7, "output written on error");
	cr_expect_eq(bench_parse_size(NULL, &v), -EINVAL);
}

Test(size, overflow)
{
	size_t v;
	cr_expect_eq(bench_parse_size("99999999999999999999999", &v), -ERANGE);
	cr_expect_eq(bench_parse_size("17179869184G", &v), -ERANGE); /* 2^34 * 2^30 */
	cr_expect_eq(bench_parse_size("16777215T", &v), 0);          /* 2^64 - 2^40 fits */
}

Test(vlens, list_sorted_unique)
{
	unsigned v[BENCH_MAX_VLENS];
	cr_assert_eq(bench_parse_vlens("1,16,1024", v, BENCH_MAX_VLENS), 3);
	cr_expect(v[0] == 1 && v[1] == 16 && v[2] == 1024);
	cr_assert_eq(bench_parse_vlens("64,2,64,8", v, BENCH_MAX_VLENS), 3);
	cr_expect(v[0] == 2 && v[1] == 8 && v[2] == 64);
	cr_assert_eq(bench_parse_vlens("7", v, BENCH_MAX_VLENS), 1);
	cr_expect_eq(v[0], 7);
}

Test(vlens, invalid)
{
	static const char *const bad[] = {"",  "0",   "1025", "1,,2", "1,", ",1",
	                                  "a", "1;2", "-1",   "1, 2", "2x"};
	unsigned v[BENCH_MAX_VLENS];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(bench_parse_vlens(bad[i], v, BENCH_MAX_VLENS), -EINVAL,
		             "'%s' accepted", bad[i]);
	cr_expect_eq(bench_parse_vlens("1,2,3", v, 2), -E2BIG);
}

/* Parse a NULL-terminated argument list. */
static int parse(struct bench_opts *o, const char **args)
{
	char *argv[32] = {"purge-bench"};
	char err[256] = "";
	int argc = 1;
	while (*args && argc < 31)
		argv[argc++] = (char *)*args++;
	int ret = bench_parse_args(argc, argv, PAGE, FRAME, o, err, sizeof(err));
	cr_expect(ret >= 0 || err[0], "an error comes with a reason");
	return ret;
}

#define PARSE(o, ...) parse((o), (const char *[]){__VA_ARGS__, NULL})

Test(args, defaults)
{
	struct bench_opts o;
	cr_assert_eq(parse(&o, (const char *[]){NULL}), 0);
	cr_expect_eq(o.size, (size_t)64 << 20);
	cr_expect_eq(o.piece, 4096);
	cr_expect_eq(o.layout, LAYOUT_SCATTERED, "the default must show the vlen effect");
	cr_expect_eq(o.advice, MADV_DONTNEED);
	cr_expect_eq(o.mode, PURGE_MODE_AUTO);
	cr_expect_eq(o.nvlens, 11);
	cr_expect(o.vlens[0] == 1 && o.vlens[10] == 1024);
	cr_expect_geq(o.repeat, 5);
	cr_expect_eq(o.threads, 1);
	cr_expect(!o.csv && !o.json && !o.refault && !o.suggest && !o.out && !o.plot);
}

Test(args, everything)
{
	struct bench_opts o;
	cr_assert_eq(PARSE(&o, "--size", "64M", "--piece", "8K", "--layout", "adjacent", "--advice",
	                   "free", "--mode", "loop", "--batch", "1,16,1024", "--repeat", "3",
	                   "--threads", "2", "--refault", "--suggest", "--csv", "--out", "r.csv",
	                   "--plot", "r.svg", "--thp", "never", "--seed", "9"),
	             0);
	cr_expect_eq(o.size, (size_t)64 << 20);
	cr_expect_eq(o.piece, 8192);
	cr_expect_eq(o.layout, LAYOUT_ADJACENT);
	cr_expect_eq(o.advice, MADV_FREE);
	cr_expect_eq(o.mode, PURGE_MODE_LOOP);
	cr_expect(o.nvlens == 3 && o.vlens[2] == 1024);
	cr_expect(o.repeat == 3 && o.threads == 2 && o.seed == 9);
	cr_expect(o.refault && o.suggest && o.csv && !o.json);
	cr_expect_str_eq(o.out, "r.csv");
	cr_expect_str_eq(o.plot, "r.svg");
	cr_expect_eq(o.thp, THP_NEVER);
	cr_assert_eq(PARSE(&o, "--layout=random", "--json"), 0, "a second call starts afresh");
	cr_expect(o.layout == LAYOUT_RANDOM && o.json && !o.csv && o.nvlens == 11);
	cr_expect_eq(PARSE(&o, "--csv", "--json", "--out", "r.csv"), 0, "both, to FILE and beside");
}

/* Every advice and mode the library takes, by name. */
Test(args, advice_and_mode)
{
	static const char *const advice[] = {"dontneed", "free", "dontneed-locked", "cold",
	                                     "pageout"};
	static const int madv[] = {MADV_DONTNEED, MADV_FREE, 24, MADV_COLD, MADV_PAGEOUT};
	static const char *const mode[] = {"auto", "vectored", "loop"};
	static const int pm[] = {PURGE_MODE_AUTO, PURGE_MODE_VECTORED, PURGE_MODE_LOOP};
	struct bench_opts o;
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(PARSE(&o, "--advice", advice[i]), 0, "--advice %s", advice[i]);
		cr_expect_eq(o.advice, madv[i], "--advice %s", advice[i]);
		cr_expect_str_eq(bench_advices[o.advice], advice[i]);
	}
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(PARSE(&o, "--mode", mode[i]), 0, "--mode %s", mode[i]);
		cr_expect_eq(o.mode, pm[i], "--mode %s", mode[i]);
		cr_expect_str_eq(bench_modes[o.mode], mode[i]);
	}
}

Test(args, errors)
{
	struct bench_opts o;
	cr_expect_eq(PARSE(&o, "--layout", "diagonal"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--advice", "willneed"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--mode", "fast"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--size", "lots"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--size", "6K"), -EINVAL, "not a multiple of the piece");
	cr_expect_eq(PARSE(&o, "--size", "4K"), -EINVAL, "only one piece");
	cr_expect_eq(PARSE(&o, "--piece", "1000", "--size", "1M"), -EINVAL, "not whole pages");
	cr_expect_eq(PARSE(&o, "--batch", "0"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--batch", "2048"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--repeat", "0"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--threads", "0"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--threads", "2x"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--out", "x.csv"), -EINVAL, "--out without --csv/--json");
	cr_expect_eq(PARSE(&o, "--csv", "--json"), -EINVAL, "both on stdout");
	cr_expect_eq(PARSE(&o, "--plot", "x.pdf"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--thp", "sometimes"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--bogus"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--size"), -EINVAL, "missing argument");
	cr_expect_eq(PARSE(&o, "stray"), -EINVAL);
}

/* --layout frames: pieces of 128K by default, 4 frames at a time, the
 * library's automatic flushes at an eighth of the region. */
Test(args, frames_defaults)
{
	struct bench_opts o;
	cr_assert_eq(PARSE(&o, "--layout", "frames"), 0);
	cr_expect_eq(o.layout, LAYOUT_FRAMES);
	cr_expect_eq(o.frame, FRAME, "the frame size is the caller's");
	cr_expect_eq(o.piece, 128 << 10);
	cr_expect_eq(o.frames_at_once, 4);
	cr_expect_eq(o.max_pending, (size_t)8 << 20, "an eighth of 64M");
	cr_assert_eq(PARSE(&o, "--layout", "frames", "--size", "32M"), 0);
	cr_expect_eq(o.max_pending, (size_t)4 << 20, "an eighth of the region asked for");
	cr_assert_eq(PARSE(&o, "--layout", "frames", "--piece", "64K", "--frames-at-once", "2",
	                   "--max-pending", "3M"),
	             0);
	cr_expect(o.piece == 64 << 10 && o.frames_at_once == 2 && o.max_pending == 3 << 20);
	cr_assert_eq(PARSE(&o, "--piece", "64K", "--layout", "frames"), 0, "any order");
	cr_expect_eq(o.piece, 64 << 10);
	cr_assert_eq(PARSE(&o, "--layout", "frames", "--frames-at-once", "1000"), 0,
	             "more than the region's frames: all of them");
	cr_assert_eq(parse(&o, (const char *[]){NULL}), 0);
	cr_expect_eq(o.piece, 4096, "other layouts keep 4K");
}

Test(args, frames_errors)
{
	struct bench_opts o;
	cr_expect_eq(PARSE(&o, "--frames-at-once", "2"), -EINVAL, "only with --layout frames");
	cr_expect_eq(PARSE(&o, "--max-pending", "8M"), -EINVAL, "only with --layout frames");
	cr_expect_eq(PARSE(&o, "--layout", "frames", "--size", "3M"), -EINVAL, "not whole frames");
	cr_expect_eq(PARSE(&o, "--layout", "frames", "--size", "1M", "--piece", "4K"), -EINVAL,
	             "less than a frame");
	cr_expect_eq(PARSE(&o, "--layout", "frames", "--size", "6M", "--piece", "192K"), -EINVAL,
	             "a piece across two frames (6M holds 32 pieces of 192K)");
	cr_expect_eq(PARSE(&o, "--layout", "frames", "--piece", "4M"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--layout", "frames", "--frames-at-once", "0"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--layout", "frames", "--max-pending", "lots"), -EINVAL);
}

/* --thp madvise and always both advise MADV_HUGEPAGE (bench-run.c). */
Test(args, thp_modes)
{
	struct bench_opts o;
	cr_assert_eq(PARSE(&o, "--thp", "madvise"), 0);
	cr_expect_eq(o.thp, THP_MADVISE);
	cr_expect_str_eq(bench_thps[o.thp], "madvise");
	cr_assert_eq(PARSE(&o, "--thp", "always"), 0);
	cr_expect_eq(o.thp, THP_ALWAYS);
	cr_assert_eq(parse(&o, (const char *[]){NULL}), 0);
	cr_expect_eq(o.thp, THP_SYSTEM);
}

Test(args, choices_listed)
{
	struct bench_opts o;
	char *argv[] = {"purge-bench", "--advice", "willneed", NULL};
	char err[256] = "";
	cr_assert_eq(bench_parse_args(3, argv, PAGE, FRAME, &o, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "dontneed|free|cold|pageout|dontneed-locked"), "got '%s'", err);
}

Test(args, sidecar)
{
	char p[64];
	bench_sidecar_path("results/sweep.csv", p, sizeof(p));
	cr_expect_str_eq(p, "results/sweep.json");
	bench_sidecar_path("R.CSV", p, sizeof(p));
	cr_expect_str_eq(p, "R.json");
	bench_sidecar_path("out", p, sizeof(p));
	cr_expect_str_eq(p, "out.json");
	bench_sidecar_path(".csv", p, sizeof(p));
	cr_expect_str_eq(p, ".csv.json", "a bare extension is a name");
}

Test(args, help, .init = cr_redirect_stdout)
{
	struct bench_opts o;
	cr_expect_eq(PARSE(&o, "--help"), 1);
	cr_expect_eq(PARSE(&o, "--version"), 1);
}

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

/* The memory readers, on fake /proc and /sys files in a fresh directory. */
static char fake_dir[64];

/* name under the fake directory, in one of 16 rotating buffers */
static const char *fake_path(const char *name)
{
	static char bufs[16][256];
	static unsigned next;
	char *b = bufs[next++ % 16];
	snprintf(b, sizeof(bufs[0]), "%s/%s", fake_dir, name);
	return b;
}

/* Write text to name under the fake directory, making its folders. */
static const char *fake_file(const char *name, const char *text)
{
	char dir[256];
	if (!fake_dir[0]) {
		strcpy(fake_dir, "/tmp/test-bench-XXXXXX");
		cr_assert(mkdtemp(fake_dir));
	}
	const char *path = fake_path(name);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = strchr(dir + strlen(fake_dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(dir, 0700);
		*s = '/';
	}
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
	return path;
}

static void fake_cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_dir);
	if (fake_dir[0] && system(cmd))
		fprintf(stderr, "could not remove %s\n", fake_dir);
}

TestSuite(mem, .fini = fake_cleanup);

Test(mem, vmstat_key)
{
	const char *vmstat = fake_file("vmstat", "thp_split_page 7\n"
	                                         "thp_split_page_failed 0\n"
	                                         "thp_split_pmd 12345\n"
	                                         "thp_split_pmd_x 1\n");
	uint64_t v = 99;
	cr_expect_eq(bench_read_key(vmstat, "thp_split_pmd", &v), 0);
	cr_expect_eq(v, 12345, "not thp_split_page nor a longer name: %" PRIu64, v);
	cr_expect_eq(bench_read_key(vmstat, "thp_split", &v), -ENOENT, "a prefix is no key");
	cr_expect_eq(bench_read_key(vmstat, "thp_split_pud", &v), -ENOENT);
	cr_expect_eq(bench_read_key(fake_path("none"), "thp_split_pmd", &v), -ENOENT,
	             "a missing file: its errno");
	cr_expect_eq(v, 12345, "output written on error");
	const char *bad = fake_file("bad", "thp_split_pmd lots\n");
	cr_expect_eq(bench_read_key(bad, "thp_split_pmd", &v), -EINVAL);
}

Test(mem, smaps_rollup_key)
{
	const char *smaps =
	    fake_file("smaps_rollup", "55d0c0000000-7ffd00000000 ---p 00000000 00:00 0   [rollup]\n"
	                              "Rss:               70000 kB\n"
	                              "AnonHugePages:     65536 kB\n"
	                              "ShmemPmdMapped:        0 kB\n");
	uint64_t v = 0;
	cr_expect_eq(bench_read_key(smaps, "AnonHugePages:", &v), 0);
	cr_expect_eq(v, 65536);
	cr_expect_eq(bench_read_key(smaps, "Rss:", &v), 0);
	cr_expect_eq(v, 70000);
}

Test(mem, number_and_statm)
{
	uint64_t v = 0;
	cr_expect_eq(bench_read_number(fake_file("hpage_pmd_size", "2097152\n"), &v), 0);
	cr_expect_eq(v, 2097152);
	cr_expect_eq(bench_read_number(fake_file("empty", ""), &v), -EINVAL);
	cr_expect_eq(bench_read_number(fake_file("word", "max\n"), &v), -EINVAL);
	cr_expect_eq(bench_read_statm(fake_file("statm", "5000 1200 300 10 0 900 0\n"), 4096, &v),
	             0);
	cr_expect_eq(v, 1200 * 4096, "the second field, in pages");
	cr_expect_eq(bench_read_statm(fake_file("statm1", "5000\n"), 4096, &v), -EINVAL);
}

Test(mem, cgroup_v1)
{
	const char *cg = fake_file("cgroup", "9:name=systemd:/\n"
	                                     "5:devices:/\n"
	                                     "4:cpu,memory:/jobs/42\n"
	                                     "0::/\n");
	fake_file("root/memory/jobs/42/memory.usage_in_bytes", "83410944\n");
	struct bench_memsrc s;
	uint64_t v = 0;
	bench_memsrc_find(&s, cg, fake_path("root"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V1, "%s", s.note);
	cr_expect(strstr(s.path, "/root/memory/jobs/42/memory.usage_in_bytes"), "%s", s.path);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 83410944);
}

Test(mem, cgroup_v2)
{
	const char *cg = fake_file("cgroup2", "0::/user.slice/job\n");
	fake_file("root2/user.slice/job/memory.current", "1048576\n");
	struct bench_memsrc s;
	uint64_t v = 0;
	bench_memsrc_find(&s, cg, fake_path("root2"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V2, "%s", s.note);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 1048576);
	/* a hybrid system mounts v2 under unified/ */
	fake_file("root3/unified/user.slice/job/memory.current", "2097152\n");
	bench_memsrc_find(&s, cg, fake_path("root3"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V2, "%s", s.note);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 2097152);
}

/* No readable cgroup file: RSS from statm, and the reason. */
Test(mem, cgroup_unreadable_falls_back_to_rss)
{
	const char *cg = fake_file("cgroup4", "4:memory:/gone\n0::/gone\n");
	const char *statm = fake_file("statm4", "100 25 0 0 0 0 0\n");
	struct bench_memsrc s;
	uint64_t v = 0;
	bench_memsrc_find(&s, cg, fake_path("root4"), statm);
	cr_expect_eq(s.kind, MEM_RSS);
	cr_expect(strstr(s.note, "memory.usage_in_bytes"), "names what it tried: %s", s.note);
	cr_expect_str_eq(s.path, statm);
	cr_expect_eq(bench_memsrc_read(&s, 4096, &v), 0);
	cr_expect_eq(v, 25 * 4096);
	bench_memsrc_find(&s, fake_path("no-such-cgroup"), fake_path("root4"), statm);
	cr_expect_eq(s.kind, MEM_RSS);
	cr_expect(strstr(s.note, "no-such-cgroup"), "%s", s.note);
}

/* v1's root cgroup counts the whole machine: kept, with a caveat. */
Test(mem, cgroup_v1_root)
{
	const char *cg = fake_file("cgroup5", "4:memory:/\n");
	fake_file("root5/memory/memory.usage_in_bytes", "625348608\n");
	struct bench_memsrc s;
	bench_memsrc_find(&s, cg, fake_path("root5"), fake_path("statm"));
	cr_expect_eq(s.kind, MEM_CGROUP_V1);
	cr_expect(strstr(s.path, "root5/memory/memory.usage_in_bytes"), "%s", s.path);
	cr_expect(strstr(s.note, "root cgroup"), "%s", s.note);
}

/* --layout frames: every piece once, whole pieces inside the region, and
 * never more than --frames-at-once frames partly freed at a time. */
static void check_window(const struct iovec *v, size_t n, const struct bench_opts *o, char *base)
{
	unsigned seen[64] = {0}, taken[16] = {0}, open = 0, open_max = 0;
	size_t per = o->frame / o->piece;
	for (size_t i = 0; i < n; i++) {
		size_t off = (size_t)((char *)v[i].iov_base - base), f = off / o->frame;
		cr_assert(off < o->size && off % o->piece == 0 && v[i].iov_len == o->piece,
		          "piece %zu: offset %zu, %zu bytes", i, off, v[i].iov_len);
		cr_expect_eq(seen[off / o->piece]++, 0, "piece at %zu twice", off);
		open += taken[f] == 0;
		open -= ++taken[f] == per;
		open_max = open > open_max ? open : open_max;
	}
	cr_expect_eq(open_max, o->frames_at_once, "frames partly freed at once");
}

Test(order, frames_window)
{
	struct bench_opts o;
	struct iovec a[32], b[32];
	char *base = (char *)(uintptr_t)(64u << 20);
	uint64_t rs = bench_rand_seed(1);
	cr_assert_eq(PARSE(&o, "--layout", "frames", "--size", "16M", "--piece", "512K",
	                   "--frames-at-once", "3"),
	             0);
	cr_assert_eq(bench_order_frames(a, base, &o, &rs), 0);
	check_window(a, 32, &o, base);
	bool sorted = true;
	for (size_t i = 1; i < 32; i++)
		sorted &= a[i].iov_base > a[i - 1].iov_base;
	cr_expect(!sorted, "in random order");
	rs = bench_rand_seed(1);
	cr_assert_eq(bench_order_frames(b, base, &o, &rs), 0);
	cr_expect_eq(memcmp(a, b, sizeof(a)), 0, "the same seed, the same order");
	rs = bench_rand_seed(2);
	cr_assert_eq(bench_order_frames(b, base, &o, &rs), 0);
	cr_expect_neq(memcmp(a, b, sizeof(a)), 0, "another seed, another order");
	o.frames_at_once = 1; /* one frame at a time: each frame whole before the next */
	cr_assert_eq(bench_order_frames(a, base, &o, &rs), 0);
	check_window(a, 32, &o, base);
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
