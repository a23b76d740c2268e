// SPDX-License-Identifier: MIT
/* purge-bench option parsing and validation (no measurement here). */
#include "bench-opts.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "purge.h"

#define DEFAULT_SIZE   ((size_t)256 << 20)
#define DEFAULT_PIECE  ((size_t)4 << 10)
#define DEFAULT_REPEAT 5
#define MAX_THREADS    1024

/* Shift for a unit letter, or -1 when the letter is not a unit. */
static int unit_shift(char c)
{
	switch (tolower((unsigned char)c)) {
	case 'k':
		return 10;
	case 'm':
		return 20;
	case 'g':
		return 30;
	case 't':
		return 40;
	default:
		return -1;
	}
}

/* The text after the unit letter may only be "", "b" or "ib". */
static bool unit_tail_ok(const char *t)
{
	return !*t || !strcasecmp(t, "b") || !strcasecmp(t, "ib");
}

int bench_parse_size(const char *s, size_t *out)
{
	/* strtoull would accept leading blanks and a minus sign: refuse both */
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	int shift = 0;
	if (*end) {
		shift = unit_shift(*end);
		if (shift < 0 || !unit_tail_ok(end + 1))
			return -EINVAL;
	}
	if (v == 0)
		return -EINVAL;
	if (v > (unsigned long long)SIZE_MAX >> shift)
		return -ERANGE;
	*out = (size_t)v << shift;
	return 0;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

/* Sort and drop duplicates in place; returns the new count. */
static unsigned sort_unique(unsigned *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_unsigned);
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

int bench_parse_vlens(const char *s, unsigned *out, unsigned max)
{
	unsigned n = 0;
	const char *p = s;
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		char *end;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (errno || v < 1 || v > PURGE_BATCH_MAX)
			return -EINVAL;
		if (n == max)
			return -E2BIG;
		out[n++] = (unsigned)v;
		if (!*end)
			break;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
	return (int)sort_unique(out, n);
}

/* Powers of two 1..PURGE_BATCH_MAX: the sweep users expect by default. */
static void default_vlens(struct bench_opts *o)
{
	o->nvlens = 0;
	for (unsigned v = 1; v <= PURGE_BATCH_MAX; v *= 2)
		o->vlens[o->nvlens++] = v;
}

static void set_defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = DEFAULT_SIZE;
	o->piece = DEFAULT_PIECE;
	o->layout = LAYOUT_ADJACENT;
	o->advice = MADV_DONTNEED;
	default_vlens(o);
	o->repeat = DEFAULT_REPEAT;
	o->threads = 1;
	o->seed = 1;
	o->thp = THP_SYSTEM;
	o->format = FORMAT_TABLE;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A whole decimal number in [lo, hi]. */
static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* Index of s in the NULL-terminated names, or -1. */
static int pick(const char *s, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static const char *const layout_names[] = {"adjacent", "scattered", "random", NULL};
static const char *const thp_names[] = {"system", "never", "always", NULL};
static const char *const advice_names[] = {"dontneed", "free", NULL};

const char *bench_layout_name(enum bench_layout l)
{
	return layout_names[l];
}

const char *bench_thp_name(enum bench_thp t)
{
	return thp_names[t];
}

const char *bench_advice_name(int advice)
{
	return advice == MADV_FREE ? "free" : "dontneed";
}

enum { OPT_CSV = 256, OPT_JSON, OPT_REFAULT, OPT_SUGGEST, OPT_THP, OPT_SEED, OPT_VERSION };

/* clang-format off: one option per line reads better than bin-packed */
static const struct option long_opts[] = {
    {"size", required_argument, NULL, 's'},      {"piece", required_argument, NULL, 'p'},
    {"layout", required_argument, NULL, 'l'},    {"advice", required_argument, NULL, 'a'},
    {"batch", required_argument, NULL, 'b'},     {"repeat", required_argument, NULL, 'r'},
    {"threads", required_argument, NULL, 't'},   {"out", required_argument, NULL, 'o'},
    {"plot", required_argument, NULL, 'P'},      {"thp", required_argument, NULL, OPT_THP},
    {"seed", required_argument, NULL, OPT_SEED}, {"csv", no_argument, NULL, OPT_CSV},
    {"json", no_argument, NULL, OPT_JSON},       {"refault", no_argument, NULL, OPT_REFAULT},
    {"suggest", no_argument, NULL, OPT_SUGGEST}, {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION}, {NULL, 0, NULL, 0},
};
/* clang-format on */

void bench_usage(const char *prog)
{
	printf("usage: %s [options]\n"
	       "Time purging a private anonymous region in --piece ranges: madvise loop,\n"
	       "raw process_madvise, libpurge (coalescing off and on) and one madvise floor.\n"
	       "  --size SIZE        region size (default 256M)\n"
	       "  --piece SIZE       bytes per purged range (default 4K)\n"
	       "  --layout L         adjacent | scattered | random (default adjacent)\n"
	       "  --advice A         dontneed | free (default dontneed)\n"
	       "  --batch LIST       vlens, e.g. 1,16,1024 (default 1,2,4,...,1024)\n"
	       "  --repeat N         timed passes per row (default 5)\n"
	       "  --threads T        T-1 helper threads touch memory on other CPUs (default 1)\n"
	       "  --thp MODE         system | never | always: THP advice on the region\n"
	       "  --seed N           shuffle seed for --layout random (default 1)\n"
	       "  --refault          also time touching the purged pages again\n"
	       "  --csv, --json      machine-readable output instead of the table\n"
	       "  --out FILE         write the CSV/JSON to FILE; the table goes to stdout\n"
	       "  --plot FILE        ns/page vs vlen with gnuplot (.svg or .png)\n"
	       "  --suggest          print the smallest vlen within 5%% of the best\n",
	       prog);
}

/* Options that pick one name from a fixed list. */
static int apply_choice(struct bench_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	int i;
	switch (c) {
	case 'l':
		if ((i = pick(arg, layout_names)) < 0)
			return fail(err, errlen, "--layout: '%s' is not adjacent|scattered|random",
			            arg);
		o->layout = (enum bench_layout)i;
		return 0;
	case 'a':
		if ((i = pick(arg, advice_names)) < 0)
			return fail(err, errlen, "--advice: '%s' is not dontneed|free", arg);
		o->advice = i ? MADV_FREE : MADV_DONTNEED;
		return 0;
	default:
		if ((i = pick(arg, thp_names)) < 0)
			return fail(err, errlen, "--thp: '%s' is not system|never|always", arg);
		o->thp = (enum bench_thp)i;
		return 0;
	}
}

/* Options that take a number or a size. */
static int apply_number(struct bench_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	int n;
	switch (c) {
	case 's':
		if (bench_parse_size(arg, &o->size))
			return fail(err, errlen, "--size: bad size '%s' (e.g. 256M)", arg);
		return 0;
	case 'p':
		if (bench_parse_size(arg, &o->piece))
			return fail(err, errlen, "--piece: bad size '%s' (e.g. 4K)", arg);
		return 0;
	case 'b':
		n = bench_parse_vlens(arg, o->vlens, BENCH_MAX_VLENS);
		if (n < 0)
			return fail(err, errlen, "--batch: '%s' is not a list of 1..%d", arg,
			            PURGE_BATCH_MAX);
		o->nvlens = (unsigned)n;
		return 0;
	case 'r':
		if (parse_uint(arg, 1, 100000, &o->repeat))
			return fail(err, errlen, "--repeat: '%s' is not 1..100000", arg);
		return 0;
	case 't':
		if (parse_uint(arg, 1, MAX_THREADS, &o->threads))
			return fail(err, errlen, "--threads: '%s' is not 1..%d", arg, MAX_THREADS);
		return 0;
	default:
		if (parse_uint(arg, 0, ~0u, &o->seed))
			return fail(err, errlen, "--seed: '%s' is not a number", arg);
		return 0;
	}
}

/* One option; 1 = help/version printed, 0 = applied, -EINVAL = error. */
static int apply_opt(struct bench_opts *o, int c, const char *prog, char *err, size_t errlen)
{
	switch (c) {
	case 'l':
	case 'a':
	case OPT_THP:
		return apply_choice(o, c, optarg, err, errlen);
	case 's':
	case 'p':
	case 'b':
	case 'r':
	case 't':
	case OPT_SEED:
		return apply_number(o, c, optarg, err, errlen);
	case 'o':
		o->out = optarg;
		return 0;
	case 'P':
		o->plot = optarg;
		return 0;
	case OPT_CSV:
		o->format = FORMAT_CSV;
		return 0;
	case OPT_JSON:
		o->format = FORMAT_JSON;
		return 0;
	case OPT_REFAULT:
		o->refault = true;
		return 0;
	case OPT_SUGGEST:
		o->suggest = true;
		return 0;
	case 'h':
		bench_usage(prog);
		return 1;
	case OPT_VERSION:
		printf("purge-bench (libpurge %d.%d)\n", PURGE_VERSION_MAJOR, PURGE_VERSION_MINOR);
		return 1;
	default:
		return fail(err, errlen, "unknown option (see --help)");
	}
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcasecmp(s + n - m, suf);
}

/* Cross-option rules, checked once everything is parsed. */
static int check_opts(const struct bench_opts *o, size_t page, char *err, size_t errlen)
{
	if (o->piece % page)
		return fail(err, errlen, "--piece must be a multiple of the page size (%zu)", page);
	if (o->size % o->piece)
		return fail(err, errlen, "--size must be a multiple of --piece");
	if (o->size / o->piece < 2)
		return fail(err, errlen, "--size must hold at least two pieces");
	if (o->size / o->piece > 0x7fffffffu)
		return fail(err, errlen, "too many pieces: raise --piece or lower --size");
	if (o->out && o->format == FORMAT_TABLE)
		return fail(err, errlen, "--out needs --csv or --json");
	if (o->plot && !has_suffix(o->plot, ".svg") && !has_suffix(o->plot, ".png"))
		return fail(err, errlen, "--plot: file name must end in .svg or .png");
	return 0;
}

int bench_parse_args(int argc, char **argv, size_t page, struct bench_opts *o, char *err,
                     size_t errlen)
{
	set_defaults(o);
	optind = 0; /* glibc: 0 re-initialises getopt fully, so tests can call again */
	opterr = 0; /* errors are reported through err, once */
	int c;
	while ((c = getopt_long(argc, argv, "s:p:l:a:b:r:t:o:P:h", long_opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return fail(err, errlen, "bad or incomplete option '%s' (see --help)",
			            argv[optind - 1]);
		int ret = apply_opt(o, c, argv[0], err, errlen);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s'", argv[optind]);
	return check_opts(o, page, err, errlen);
}
