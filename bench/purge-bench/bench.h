/* SPDX-License-Identifier: MIT */
/*
 * purge-bench: how long purging a region in small pieces takes through a
 * madvise() loop, raw process_madvise(PIDFD_SELF) at each vlen, libpurge
 * without and with coalescing, against one madvise() over the whole region.
 *
 *   bench-opts.c    command line and names (no measurement: unit-tested)
 *   bench-stats.c   percentiles, --suggest, noise warnings (unit-tested)
 *   bench-output.c  table, CSV, JSON (unit-tested)
 *   bench-run.c     region, rows, the interleaved sweep
 *   bench-sys.c     machine facts, helper threads
 *   bench-mem.c     vmstat, cgroup, statm and smaps readers (unit-tested on fake files)
 *   bench-order.c   the order of the pieces: shuffles, the frames window (unit-tested)
 *   purge-bench.c   main: path checks, --suggest reruns, output files, --plot
 *   plot.gp         the plot, drawn from the CSV
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#include "purge.h"

/* The frame counters of PURGE_HUGE (purge.h, 2.1). */
struct bench_frames {
	uint64_t whole;       /* frames purged whole */
	uint64_t split;       /* purges of part of a huge-backed frame */
	uint64_t held_ranges; /* pending parts held for their frame, now */
	uint64_t held_bytes;
};
static inline struct bench_frames bench_frames_of(const struct purge_stats *st)
{
	return (struct bench_frames){st->frames_whole, st->frames_split, st->held_ranges,
	                             st->held_bytes};
}

#define BENCH_MAX_VLENS    64
#define BENCH_TOLERANCE    0.05 /* --suggest: a vlen within 5% of the best median */
#define BENCH_SPREAD_MAX   2.0  /* a row whose p90/p10 is above this is noisy */
#define BENCH_LOAD_MAX     0.5  /* load average per CPU above this: a loaded machine */
#define BENCH_SUGGEST_RUNS 4    /* --suggest sweeps at most, until two picks agree */
#define BENCH_MAX_WARN     6
#define BENCH_HUGE_MIN     0.9 /* THP advised: a row should start this much huge-backed */
#define BENCH_JSON_SCHEMA  3   /* 2: before purge-huge and skip_reason; unversioned: 1 */

enum { LAYOUT_SCATTERED, LAYOUT_ADJACENT, LAYOUT_RANDOM, LAYOUT_FRAMES };
enum { THP_SYSTEM, THP_NEVER, THP_ALWAYS, THP_MADVISE };
enum bench_row { ROW_LOOP, ROW_FLOOR, ROW_RAW, ROW_NOCOAL, ROW_DEFAULT, ROW_HUGE, ROW_KINDS };

/* Names by value (NULL: no such value) for --layout, --thp, the rows,
 * --mode (PURGE_MODE_*) and --advice (MADV_*). */
#define BENCH_NAMES 32
extern const char *const bench_layouts[BENCH_NAMES];
extern const char *const bench_thps[BENCH_NAMES];
extern const char *const bench_rows[BENCH_NAMES];
extern const char *const bench_modes[BENCH_NAMES];
extern const char *const bench_advices[BENCH_NAMES];

struct bench_opts {
	size_t size;                     /* region bytes */
	size_t piece;                    /* bytes per purged range */
	int layout;                      /* LAYOUT_* */
	int advice;                      /* MADV_* */
	int mode;                        /* PURGE_MODE_* of the library rows */
	unsigned vlens[BENCH_MAX_VLENS]; /* ascending, no duplicates */
	unsigned nvlens;
	unsigned repeat;  /* timed passes per row */
	unsigned threads; /* 1 + helper threads */
	unsigned seed;    /* shuffle seed for LAYOUT_RANDOM */
	int thp;          /* THP_* */
	size_t frame;     /* huge page frame (hpage_pmd_size), as bench_parse_args was told */
	/* --layout frames: frames being freed at a time, and the library rows'
	 * max_pending_bytes (both 0 in the other layouts) */
	unsigned frames_at_once;
	size_t max_pending;
	bool refault, suggest, csv, json;
	const char *out;  /* CSV (or JSON) destination; NULL = stdout */
	const char *plot; /* .svg or .png; NULL = no plot */
};

struct bench_summary {
	double median, p10, p90;
};

/* What each pass of a row leaves in memory, with --thp other than system
 * (bench_mem_measured).  "half": after the first half of the pieces
 * (library rows: enqueued, with the automatic flushes they triggered);
 * "drop": how much the usage (cgroup, or RSS where unreadable) fell since
 * the start of the purge.  NAN where unknown or undefined. */
enum bench_mem {
	MF_SPLIT_HALF,   /* thp_split_pmd (/proc/vmstat) rise by half-way */
	MF_SPLIT_END,    /* and by the end */
	MF_PURGED_HALF,  /* bytes purged by half-way (library rows: purge_stats) */
	MF_DROP_HALF,    /* usage drop by half-way, bytes */
	MF_LEFT_HALF,    /* MF_DROP_HALF / MF_PURGED_HALF: what left at once */
	MF_DROP_END,     /* usage drop by the end, bytes */
	MF_HUGE_BEFORE,  /* AnonHugePages (smaps_rollup) before the purge, bytes */
	MF_HUGE_AFTER,   /* and after it */
	MF_FRAMES_WHOLE, /* purge-huge rows (the queue counts them): frames purged whole */
	MF_FRAMES_SPLIT, /* purges of part of a huge-backed frame */
	MF_HELD_HALF,    /* bytes held for their frame at half-way */
	MF_FIELDS
};
extern const char *const bench_mem_names[MF_FIELDS];

static inline bool bench_mem_measured(const struct bench_opts *o)
{
	return o->thp != THP_SYSTEM;
}

/* --thp madvise and always both advise MADV_HUGEPAGE */
static inline bool bench_thp_advised(const struct bench_opts *o)
{
	return o->thp == THP_ALWAYS || o->thp == THP_MADVISE;
}

struct bench_result {
	enum bench_row kind;
	unsigned vlen;       /* 0 for loop and floor, which do not depend on it */
	const char *skipped; /* why the row was not run (raw rows when process_madvise
	                        is refused, purge-huge without PURGE_HUGE); NULL: it ran */
	uint64_t syscalls;   /* per pass */
	double *ns;          /* [repeat] purge time of each pass, in pass order */
	double *refault_ns;  /* [repeat], 0 without --refault */
	struct bench_summary time, refault;
	double *mem;                  /* [MF_FIELDS][repeat]; NULL unless bench_mem_measured */
	double mem_median[MF_FIELDS]; /* of the known values; NAN if none */
};

struct bench_results {
	struct bench_result *rows; /* loop, floor, then raw/nocoal/default/huge per vlen */
	size_t nrows;
	double *samples;     /* what the rows' ns and refault_ns point into */
	double *mem_samples; /* and their mem */
	unsigned repeat;
	size_t pages;  /* pages in the purged pieces: the ns/page denominator */
	double wall_s; /* the whole sweep, untimed touches included */
};

enum { MEM_CGROUP_V1 = 1, MEM_CGROUP_V2, MEM_RSS };
struct bench_memsrc {
	int kind;       /* MEM_* */
	char path[512]; /* the file the usage is read from */
	char note[256]; /* MEM_RSS: why no cgroup file; the root cgroup: a caveat */
};
struct bench_machine {
	char cpu[128], kernel[128], arch[72], thp[32], pinning[160];
	long cpus, page;
	double load_start[3], load_end[3]; /* 1, 5, 15 min; -1 = unknown */
	const char *backend;               /* purge_backend(advice) in auto mode */
	struct bench_memsrc mem;           /* where the memory usage is read */
};

struct bench_report {
	const struct bench_opts *o;
	struct bench_machine m;
	struct bench_results res;
	size_t npieces;
	unsigned picks[BENCH_SUGGEST_RUNS]; /* --suggest: the vlen each run picked */
	unsigned npicks;
	/* --suggest: each run's purge-default median (ns) at o->vlens[i], -1
	 * where that run has no such row; run 0 is the sweep the table shows */
	double medians[BENCH_SUGGEST_RUNS][BENCH_MAX_VLENS];
	unsigned suggest;  /* the pick two runs agree on, and the table's run
	                    * too (within BENCH_TOLERANCE); 0 = none */
	unsigned disputed; /* the reruns' pick the table's run disagreed with */
	char warn[BENCH_MAX_WARN][256];
	unsigned nwarn;
};

/* bench-opts.c */
/* "256M", "4K", "4096", "2KiB" (binary units, any case).  0, -EINVAL or -ERANGE. */
int bench_parse_size(const char *s, size_t *out);
/* "1,16,1024", each 1..PURGE_BATCH_MAX: sorted, deduplicated; count, -EINVAL or -E2BIG. */
int bench_parse_vlens(const char *s, unsigned *out, unsigned max);
/* 0, 1 when --help or --version was printed, or -EINVAL with a reason in
 * err.  page and frame: the page and huge page sizes the options must fit. */
int bench_parse_args(int argc, char **argv, size_t page, size_t frame, struct bench_opts *o,
                     char *err, size_t errlen);
/* Where --csv --out FILE puts the JSON: FILE with .csv replaced by .json, or FILE.json. */
void bench_sidecar_path(const char *out, char *buf, size_t len);

/* bench-stats.c */
/* Percentile q (0..100) by linear interpolation between closest ranks; sorts v. */
double bench_percentile(double *v, size_t n, double q);
struct bench_summary bench_summarize(const double *v, size_t n);
/* The median of the values of v that are not NAN; NAN if none is. */
double bench_median_known(const double *v, size_t n);
/* A row's time, refault and (with x->mem) memory summaries of repeat passes. */
void bench_summarize_row(struct bench_result *x, unsigned repeat);
double bench_spread(struct bench_summary s); /* p90 / p10 */
/* Index of the smallest vlen whose median is within BENCH_TOLERANCE of the best; -1 if n == 0. */
int bench_suggest(const double *medians, size_t n);
/* The vlen --suggest picked from the purge-default rows of res; 0 if none. */
unsigned bench_pick(const struct bench_results *res);
/* The first pick that an earlier one equals, 0 while no two agree. */
unsigned bench_settle(const unsigned *picks, unsigned n);
/* --suggest: record one run's purge-default medians and pick (the sweep's
 * first, then each rerun), and settle r->suggest again; no-op when full. */
void bench_add_run(struct bench_report *r, const struct bench_results *res);
/* The agreement rule: true unless the suggestion's median in the table's
 * run (run 0) is above that run's best by more than BENCH_TOLERANCE. */
bool bench_table_agrees(const struct bench_report *r);
/* Fill r->warn: loaded machine, noisy rows, unstable --suggest, a
 * suggestion the table disagrees with (withdrawn: r->suggest becomes 0,
 * r->disputed keeps it); huge pages advised but missing, and memory usage
 * read from RSS. */
void bench_check_noise(struct bench_report *r);
/* The closing line: the batch to use, its gain over the madvise loop and
 * why, from the rows the table shows; never a batch the table disagrees
 * with.  Call after bench_check_noise.  Writes "" when the table has no
 * loop or purge-default row to compare. */
void bench_conclude(const struct bench_report *r, char *buf, size_t len);

/* bench-output.c */
typedef void bench_printer(FILE *f, const struct bench_report *r);
bench_printer bench_print_table, bench_print_csv, bench_print_json;

/* bench-mem.c: the memory facts of a pass, read from files the caller
 * names, so that the tests can feed fake ones. */
/* The number after key at the start of a line of path ("thp_split_pmd 12",
 * "AnonHugePages:    2048 kB": the number as written; the unit is the
 * caller's).  0, -errno (unreadable), -ENOENT (no such key) or -EINVAL. */
int bench_read_key(const char *path, const char *key, uint64_t *out);
/* The number path starts with (memory.current, hpage_pmd_size). */
int bench_read_number(const char *path, uint64_t *out);
/* Resident bytes: the second field of a statm file, in pages. */
int bench_read_statm(const char *path, size_t page, uint64_t *out);

/* Where this process's memory usage is read: its memory cgroup's usage
 * file, found from proc_cgroup (/proc/self/cgroup) under root
 * (/sys/fs/cgroup), v1 first; the first that reads.  Else statm. */
void bench_memsrc_find(struct bench_memsrc *s, const char *proc_cgroup, const char *root,
                       const char *statm);
/* The usage now, in bytes: 0 or -errno. */
int bench_memsrc_read(const struct bench_memsrc *s, size_t page, uint64_t *out);

/* bench-order.c: xorshift64 from --seed (the same order for the same seed),
 * Fisher-Yates, and --layout frames: the size / piece pieces of the frames
 * at base into out, frames_at_once frames being freed at a time.  0 or
 * -ENOMEM. */
uint64_t bench_rand_seed(unsigned seed);
void bench_shuffle(struct iovec *v, size_t n, uint64_t *rs);
int bench_order_frames(struct iovec *out, char *base, const struct bench_opts *o, uint64_t *rs);

/* bench-run.c */
struct bench_work {
	const struct bench_opts *o;
	char *region;
	size_t page, npieces;
	size_t step;       /* pieces are every step-th piece of the region: 2 when scattered */
	struct iovec *iov; /* the pieces, in the order the layout purges them */
	bool have_raw;     /* process_madvise(PIDFD_SELF) takes this advice */
	const struct bench_memsrc *mem;
	struct purge_queue *q[ROW_KINDS]; /* ROW_NOCOAL, ROW_DEFAULT and ROW_HUGE (NULL
	                                     while the library lacks PURGE_HUGE) */
};
/* Map the region, lay out the pieces, make the queues: 0 or -errno and err.
 * mem: where the passes read the memory usage (bench_mem_measured). */
int bench_work_init(struct bench_work *w, const struct bench_opts *o,
                    const struct bench_memsrc *mem, char *err, size_t errlen);
void bench_work_fini(struct bench_work *w);
/* Every row of the kinds in the mask (1 << ROW_*), interleaved pass by pass.
 * 0, or a negative errno with a reason in err (a purge failed). */
int bench_sweep(struct bench_work *w, const struct bench_opts *o, unsigned kinds,
                struct bench_results *res, char *err, size_t errlen);
void bench_results_free(struct bench_results *res);

/* bench-sys.c */
void bench_machine_read(struct bench_machine *m, int advice);
/* hpage_pmd_size, or 2 MiB where the kernel does not say (no THP). */
size_t bench_frame_size(void);
void bench_loadavg(double avg[3]);
struct bench_helpers;
/* Pin this thread, start count helpers on the other CPUs; 0 or -errno. */
int bench_helpers_start(unsigned count, struct bench_helpers **out, char *note, size_t len);
void bench_helpers_stop(struct bench_helpers *h);

#endif
