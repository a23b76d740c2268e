// SPDX-License-Identifier: MIT
/* Unit test of purge-bench's options: sizes, vector lengths, every
 * argument and its errors, and the order --layout frames frees in. */
#include "bench_test.h"

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
