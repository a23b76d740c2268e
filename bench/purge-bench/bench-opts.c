// SPDX-License-Identifier: MIT
/* purge-bench command line: parsed and validated here, measured elsewhere. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "bench.h"
#include "purge.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24 /* Linux 5.18; missing from glibc 2.36's headers */
#endif

/* clang-format off */
const char *const bench_layouts[BENCH_NAMES] = {"scattered", "adjacent", "random", "frames"};
const char *const bench_thps[BENCH_NAMES] = {"system", "never", "always", "madvise"};
const char *const bench_rows[BENCH_NAMES] = {"madvise-loop", "floor", "raw-pmadv", "purge-nocoal",
                                             "purge-default", "purge-huge"};
const char *const bench_modes[BENCH_NAMES] = {
	[PURGE_MODE_AUTO] = "auto", [PURGE_MODE_VECTORED] = "vectored", [PURGE_MODE_LOOP] = "loop"};
const char *const bench_advices[BENCH_NAMES] = {
	[MADV_DONTNEED] = "dontneed", [MADV_FREE] = "free", [MADV_COLD] = "cold",
	[MADV_PAGEOUT] = "pageout", [MADV_DONTNEED_LOCKED] = "dontneed-locked"};
/* clang-format on */

int bench_parse_size(const char *s, size_t *out)
{
	/* strtoull would accept leading blanks and a sign: refuse both */
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	const char *units = "kmgt", *u = *end ? strchr(units, tolower((unsigned char)*end)) : NULL;
	int shift = u ? 10 * (int)(u - units + 1) : 0;
	if (*end && !u)
		return -EINVAL;
	if (*end && end[1] && strcasecmp(end + 1, "b") && strcasecmp(end + 1, "ib"))
		return -EINVAL;
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

int bench_parse_vlens(const char *s, unsigned *out, unsigned max)
{
	unsigned n = 0;
	for (const char *p = s; p; n++) {
		char *end;
		errno = 0;
		unsigned long v = isdigit((unsigned char)*p) ? strtoul(p, &end, 10) : 0;
		if (errno || v < 1 || v > PURGE_BATCH_MAX || (*end && *end != ','))
			return -EINVAL;
		if (n == max)
			return -E2BIG;
		out[n] = (unsigned)v;
		p = *end ? end + 1 : NULL;
	}
	qsort(out, n, sizeof(*out), cmp_unsigned);
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		if (k == 0 || out[k - 1] != out[i])
			out[k++] = out[i];
	return (int)k;
}

void bench_sidecar_path(const char *out, char *buf, size_t len)
{
	size_t n = strlen(out);
	if (n > 4 && !strcasecmp(out + n - 4, ".csv"))
		n -= 4;
	snprintf(buf, len, "%.*s.json", (int)n, out);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void usage(const char *prog, size_t frame)
{
	printf("usage: %s [options]\n"
	       "Time purging a private anonymous region in --piece ranges, six ways (rows):\n"
	       "  madvise-loop   one madvise() per piece: the baseline\n"
	       "  floor          one madvise() over the whole region: the work itself\n"
	       "  raw-pmadv      process_madvise(PIDFD_SELF) with vlen pieces per call\n"
	       "  purge-nocoal   libpurge at batch = vlen, PURGE_NO_COALESCE\n"
	       "  purge-default  libpurge at batch = vlen, neighbours merged\n"
	       "  purge-huge     the same with PURGE_HUGE: whole huge page frames first,\n"
	       "                 parts of a frame held until it is whole (n/a until the\n"
	       "                 library has the flag)\n"
	       "Workload:\n"
	       "  --size SIZE      region size (default 64M)\n"
	       "  --piece SIZE     bytes per purged range, whole pages (default 4K; 128K\n"
	       "                   with --layout frames)\n"
	       "  --layout L       which pieces are purged, in which order:\n"
	       "    scattered      (default) every other piece: none touch, nothing merges,\n"
	       "                   so only batching helps; shows the vlen effect\n"
	       "    adjacent       every piece in address order: libpurge merges them all,\n"
	       "                   so purge-default is one call whatever the vlen\n"
	       "    random         every piece, shuffled (--seed): libpurge sorts and merges\n"
	       "    frames         whole huge page frames (%zu KiB here), freed a few at a\n"
	       "                   time in random order (--seed), as an allocator's free runs\n"
	       "                   arrive; the library rows' queues flush automatically at\n"
	       "                   --max-pending, the other rows purge each piece as it comes\n"
	       "  --frames-at-once K  frames layout: frames being freed at a time; each piece\n"
	       "                   comes from one of them, a finished frame makes room for\n"
	       "                   the next (default 4)\n"
	       "  --max-pending SIZE  frames layout: the library rows' max_pending_bytes\n"
	       "                   (default an eighth of --size)\n"
	       "  --advice A       dontneed|free|dontneed-locked|cold|pageout (default dontneed)\n"
	       "  --mode M         library rows: auto|vectored|loop (purge_config.mode;\n"
	       "                   default auto, which honours $PURGE_MODE)\n"
	       "  --batch LIST     vlens, e.g. 1,16,1024 (default 1,2,4,...,1024)\n"
	       "  --repeat N       timed passes per row (default 5)\n"
	       "  --threads T      T-1 helper threads write memory on other CPUs, so every\n"
	       "                   TLB flush needs an IPI (default 1)\n"
	       "  --thp MODE       THP advice on the region: system (default: none), never\n"
	       "                   (MADV_NOHUGEPAGE), madvise or always (both MADV_HUGEPAGE;\n"
	       "                   the system setting is left alone); with madvise or always\n"
	       "                   every pass maps the region afresh, so that huge pages\n"
	       "                   back it again (a purge splits them).  With any but\n"
	       "                   system, a memory table beside the times: huge pages split\n"
	       "                   (thp_split_pmd: machine-wide, other processes' count too),\n"
	       "                   bytes that left the memory cgroup (else RSS) half-way and\n"
	       "                   at the end, AnonHugePages before/after\n"
	       "  --seed N         shuffle seed for --layout random (default 1)\n"
	       "  --refault        also time writing the purged pages again\n"
	       "Output (the table goes to stdout, or to stderr when stdout gets CSV/JSON):\n"
	       "  --csv            CSV: one header line, then one line per row\n"
	       "  --json           JSON (schema_version %d): machine, params, raw samples\n"
	       "  --out FILE       write the CSV or JSON to FILE; with --csv the JSON also\n"
	       "                   goes beside it (sweep.csv -> sweep.json)\n"
	       "  --plot FILE      ns/page against vlen, p10-p90 bars (.svg/.png, gnuplot)\n"
	       "  --suggest        smallest vlen within %.0f%% of the best; reruns the\n"
	       "                   purge-default rows until two runs agree (at most %d runs);\n"
	       "                   a pick the table's run disagrees with is withdrawn\n"
	       "  --help, --version\n"
	       "Warnings, under the table and in the JSON: load average above %.1f per CPU;\n"
	       "a row's p90/p10 above %.1f (marked !); --suggest runs that never agree.\n"
	       "The table ends with a conclusion: the batch to use, why, and its gain over\n"
	       "the madvise loop (the JSON's \"conclusion\").\n"
	       "Exit status: 0; 1 when a purge or an output fails; 2 for bad options or\n"
	       "output paths (checked before the run).\n",
	       prog, frame >> 10, BENCH_JSON_SCHEMA, BENCH_TOLERANCE * 100, BENCH_SUGGEST_RUNS,
	       BENCH_LOAD_MAX, BENCH_SPREAD_MAX);
}

/* piece, frames_at_once and max_pending stay 0 here: their defaults depend
 * on the layout (layout_defaults). */
static void set_defaults(struct bench_opts *o, size_t frame)
{
	*o = (struct bench_opts){.size = (size_t)64 << 20,
	                         .frame = frame,
	                         .repeat = 5,
	                         .threads = 1,
	                         .seed = 1,
	                         .layout = LAYOUT_SCATTERED,
	                         .advice = MADV_DONTNEED,
	                         .mode = PURGE_MODE_AUTO,
	                         .thp = THP_SYSTEM};
	for (unsigned v = 1; v <= PURGE_BATCH_MAX; v *= 2)
		o->vlens[o->nvlens++] = v;
}

/* *out = the value whose name is arg, or -EINVAL with the choices in err. */
static int choose(const char *opt, const char *arg, const char *const *names, int *out, char *err,
                  size_t errlen)
{
	const char *sep = " ";
	for (int i = 0; i < BENCH_NAMES; i++)
		if (names[i] && !strcmp(arg, names[i])) {
			*out = i;
			return 0;
		}
	size_t n = (size_t)snprintf(err, errlen, "--%s: '%s' is not", opt, arg);
	for (int i = 0; i < BENCH_NAMES && n < errlen; i++)
		if (names[i]) {
			n += (size_t)snprintf(err + n, errlen - n, "%s%s", sep, names[i]);
			sep = "|";
		}
	return -EINVAL;
}

/* A whole decimal number in [lo, hi]. */
static int parse_uint(const char *s, unsigned lo, unsigned long hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = isdigit((unsigned char)*s) ? strtoul(s, &end, 10) : 0;
	if (!isdigit((unsigned char)*s) || errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

enum {
	OPT_CSV = 256,
	OPT_JSON,
	OPT_REFAULT,
	OPT_SUGGEST,
	OPT_THP,
	OPT_SEED,
	OPT_MODE,
	OPT_VER,
	OPT_FRAMES_AT_ONCE,
	OPT_MAX_PENDING
};

/* clang-format off */
static const struct option long_opts[] = {
	{"size", required_argument, NULL, 's'},      {"piece", required_argument, NULL, 'p'},
	{"layout", required_argument, NULL, 'l'},    {"advice", required_argument, NULL, 'a'},
	{"mode", required_argument, NULL, OPT_MODE}, {"batch", required_argument, NULL, 'b'},
	{"repeat", required_argument, NULL, 'r'},    {"threads", required_argument, NULL, 't'},
	{"thp", required_argument, NULL, OPT_THP},   {"seed", required_argument, NULL, OPT_SEED},
	{"out", required_argument, NULL, 'o'},       {"plot", required_argument, NULL, 'P'},
	{"csv", no_argument, NULL, OPT_CSV},         {"json", no_argument, NULL, OPT_JSON},
	{"refault", no_argument, NULL, OPT_REFAULT}, {"suggest", no_argument, NULL, OPT_SUGGEST},
	{"help", no_argument, NULL, 'h'},            {"version", no_argument, NULL, OPT_VER},
	{"frames-at-once", required_argument, NULL, OPT_FRAMES_AT_ONCE},
	{"max-pending", required_argument, NULL, OPT_MAX_PENDING},
	{NULL, 0, NULL, 0},
};
/* clang-format on */

/* Options that take a number, a size or a list. */
static int apply_number(struct bench_opts *o, int c, const char *arg, char *err, size_t errlen)
{
	int n;
	switch (c) {
	case 's':
	case 'p':
		if (bench_parse_size(arg, c == 's' ? &o->size : &o->piece))
			return fail(err, errlen, "--%s: bad size '%s' (e.g. 64M, 4K)",
			            c == 's' ? "size" : "piece", arg);
		return 0;
	case 'b':
		if ((n = bench_parse_vlens(arg, o->vlens, BENCH_MAX_VLENS)) < 0)
			return fail(err, errlen, "--batch: '%s' is not a list of 1..1024", arg);
		o->nvlens = (unsigned)n;
		return 0;
	case 'r':
		if (parse_uint(arg, 1, 100000, &o->repeat))
			return fail(err, errlen, "--repeat: '%s' is not 1..100000", arg);
		return 0;
	case 't':
		if (parse_uint(arg, 1, 1024, &o->threads))
			return fail(err, errlen, "--threads: '%s' is not 1..1024", arg);
		return 0;
	case OPT_FRAMES_AT_ONCE:
		if (parse_uint(arg, 1, 1u << 20, &o->frames_at_once))
			return fail(err, errlen, "--frames-at-once: '%s' is not 1..1048576", arg);
		return 0;
	case OPT_MAX_PENDING:
		if (bench_parse_size(arg, &o->max_pending))
			return fail(err, errlen, "--max-pending: bad size '%s' (e.g. 8M)", arg);
		return 0;
	default:
		if (parse_uint(arg, 0, ~0u, &o->seed))
			return fail(err, errlen, "--seed: '%s' is not a number", arg);
		return 0;
	}
}

/* One option: 1 = help/version printed, 0 = applied, -EINVAL = error. */
static int apply_opt(struct bench_opts *o, int c, const char *prog, char *err, size_t errlen)
{
	switch (c) {
	case 'l':
		return choose("layout", optarg, bench_layouts, &o->layout, err, errlen);
	case 'a':
		return choose("advice", optarg, bench_advices, &o->advice, err, errlen);
	case OPT_MODE:
		return choose("mode", optarg, bench_modes, &o->mode, err, errlen);
	case OPT_THP:
		return choose("thp", optarg, bench_thps, &o->thp, err, errlen);
	case 'o':
		o->out = optarg;
		return 0;
	case 'P':
		o->plot = optarg;
		return 0;
	case OPT_CSV:
	case OPT_JSON:
		*(c == OPT_CSV ? &o->csv : &o->json) = true;
		return 0;
	case OPT_REFAULT:
	case OPT_SUGGEST:
		*(c == OPT_REFAULT ? &o->refault : &o->suggest) = true;
		return 0;
	case 'h':
		usage(prog, o->frame);
		return 1;
	case OPT_VER:
		printf("purge-bench (libpurge %d.%d)\n", PURGE_VERSION_MAJOR, PURGE_VERSION_MINOR);
		return 1;
	default:
		return apply_number(o, c, optarg, err, errlen);
	}
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcasecmp(s + n - m, suf);
}

/* The defaults that depend on the layout, for what the options left unset;
 * -EINVAL for options of the frames layout given with another. */
static int layout_defaults(struct bench_opts *o, char *err, size_t errlen)
{
	bool frames = o->layout == LAYOUT_FRAMES;
	if (!frames && (o->frames_at_once || o->max_pending))
		return fail(err, errlen, "--%s needs --layout frames",
		            o->frames_at_once ? "frames-at-once" : "max-pending");
	if (!o->piece)
		o->piece = frames ? (size_t)128 << 10 : 4096;
	if (frames && !o->frames_at_once)
		o->frames_at_once = 4;
	if (frames && !o->max_pending)
		o->max_pending = o->size / 8;
	return 0;
}

/* --layout frames: whole frames, each cut into whole pieces. */
static int check_frames(const struct bench_opts *o, char *err, size_t errlen)
{
	if (o->layout != LAYOUT_FRAMES)
		return 0;
	if (o->size % o->frame)
		return fail(err, errlen, "--layout frames: --size must be whole %zu KiB frames",
		            o->frame >> 10);
	if (o->piece > o->frame || o->frame % o->piece)
		return fail(err, errlen,
		            "--layout frames: --piece must divide the %zu KiB frame, so that no "
		            "piece spans two frames",
		            o->frame >> 10);
	return 0;
}

/* Rules between options, once everything is parsed. */
static int check_opts(const struct bench_opts *o, size_t page, char *err, size_t errlen)
{
	if (o->piece % page)
		return fail(err, errlen, "--piece must be a multiple of the page size (%zu)", page);
	if (o->size % o->piece || o->size / o->piece < 2)
		return fail(err, errlen, "--size must be a multiple of --piece, 2 pieces or more");
	if (o->size / o->piece > 0x7fffffffu)
		return fail(err, errlen, "too many pieces: raise --piece or lower --size");
	if (check_frames(o, err, errlen))
		return -EINVAL;
	if (o->out && !o->csv && !o->json)
		return fail(err, errlen, "--out needs --csv or --json");
	if (o->csv && o->json && !o->out)
		return fail(err, errlen,
		            "--csv with --json needs --out FILE.csv (the JSON goes "
		            "beside it): stdout takes only one of them");
	if (o->plot && !has_suffix(o->plot, ".svg") && !has_suffix(o->plot, ".png"))
		return fail(err, errlen, "--plot: the file name must end in .svg or .png");
	return 0;
}

int bench_parse_args(int argc, char **argv, size_t page, size_t frame, struct bench_opts *o,
                     char *err, size_t errlen)
{
	set_defaults(o, frame);
	optind = 0; /* glibc: 0 re-initialises getopt, so the tests can call again */
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
	if (layout_defaults(o, err, errlen))
		return -EINVAL;
	return check_opts(o, page, err, errlen);
}
