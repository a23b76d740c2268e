// SPDX-License-Identifier: MIT
/* Unit test of purge-bench's own parsing and statistics (no timing). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "bench-opts.h"
#include "bench-stats.h"

#define PAGE 4096

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
	int ret = bench_parse_args(argc, argv, PAGE, o, err, sizeof(err));
	cr_expect(ret >= 0 || err[0], "an error comes with a reason");
	return ret;
}

#define PARSE(o, ...) parse((o), (const char *[]){__VA_ARGS__, NULL})

Test(args, defaults)
{
	struct bench_opts o;
	cr_assert_eq(parse(&o, (const char *[]){NULL}), 0);
	cr_expect_eq(o.size, (size_t)256 << 20);
	cr_expect_eq(o.piece, 4096);
	cr_expect_eq(o.layout, LAYOUT_ADJACENT);
	cr_expect_eq(o.advice, MADV_DONTNEED);
	cr_expect_eq(o.nvlens, 11);
	cr_expect(o.vlens[0] == 1 && o.vlens[10] == 1024);
	cr_expect_geq(o.repeat, 5);
	cr_expect_eq(o.threads, 1);
	cr_expect_eq(o.format, FORMAT_TABLE);
	cr_expect(!o.refault && !o.suggest && !o.out && !o.plot);
}

Test(args, everything)
{
	struct bench_opts o;
	cr_assert_eq(PARSE(&o, "--size", "64M", "--piece", "8K", "--layout", "scattered",
	                   "--advice", "free", "--batch", "1,16,1024", "--repeat", "3", "--threads",
	                   "2", "--refault", "--suggest", "--csv", "--out", "r.csv", "--plot",
	                   "r.svg", "--thp", "never", "--seed", "9"),
	             0);
	cr_expect_eq(o.size, (size_t)64 << 20);
	cr_expect_eq(o.piece, 8192);
	cr_expect_eq(o.layout, LAYOUT_SCATTERED);
	cr_expect_eq(o.advice, MADV_FREE);
	cr_expect(o.nvlens == 3 && o.vlens[2] == 1024);
	cr_expect(o.repeat == 3 && o.threads == 2 && o.seed == 9);
	cr_expect(o.refault && o.suggest);
	cr_expect_eq(o.format, FORMAT_CSV);
	cr_expect_str_eq(o.out, "r.csv");
	cr_expect_str_eq(o.plot, "r.svg");
	cr_expect_eq(o.thp, THP_NEVER);
	cr_assert_eq(PARSE(&o, "--layout=random", "--json"), 0, "a second call starts afresh");
	cr_expect(o.layout == LAYOUT_RANDOM && o.format == FORMAT_JSON && o.nvlens == 11);
}

Test(args, errors)
{
	struct bench_opts o;
	cr_expect_eq(PARSE(&o, "--layout", "diagonal"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--advice", "cold"), -EINVAL);
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
	cr_expect_eq(PARSE(&o, "--plot", "x.pdf"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--thp", "sometimes"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--bogus"), -EINVAL);
	cr_expect_eq(PARSE(&o, "--size"), -EINVAL, "missing argument");
	cr_expect_eq(PARSE(&o, "stray"), -EINVAL);
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
