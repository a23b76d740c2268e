/* SPDX-License-Identifier: MIT */
/*
 * The model-based fuzz driver as a plain seeded random loop (what CI runs):
 *   fuzz-purge [--real [--thp]] [--ops N] [--seed S] [--seeds FILE]
 * --seeds runs every seed listed in FILE (one per line, '#' comments): the
 * seeds that once found bugs, kept as regression tests.  --thp: on the real
 * kernel, a region transparent huge pages back (exit 77 where they cannot).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static struct fuzz_src all; /* the counts, over all seeds */

static uint64_t run_seed(uint64_t seed, const struct fuzz_opts *o)
{
	struct fuzz_src src = {.state = seed};
	uint64_t n = fuzz_run(&src, o);

	all.zclaims += src.zclaims;
	all.overlapped += src.overlapped;
	all.whole_checks += src.whole_checks;
	all.split_checks += src.split_checks;
	all.due_checks += src.due_checks;
	all.huge_seen += src.huge_seen;
	if (o->verbose)
		printf("seed %llu: %llu operations\n", (unsigned long long)seed,
		       (unsigned long long)n);
	return n;
}

static uint64_t run_file(const char *path, const struct fuzz_opts *o)
{
	FILE *f = fopen(path, "r");
	char line[128];
	uint64_t total = 0;

	if (!f) {
		perror(path);
		exit(2);
	}
	while (fgets(line, sizeof(line), f))
		if (line[0] >= '0' && line[0] <= '9')
			total += run_seed(strtoull(line, NULL, 0), o);
	fclose(f);
	return total;
}

int main(int argc, char **argv)
{
	struct fuzz_opts o = {.max_ops = 1000000};
	uint64_t seed = 1, total;
	const char *seeds = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--real"))
			o.real_kernel = true;
		else if (!strcmp(argv[i], "--thp"))
			o.real_kernel = o.thp = true;
		else if (!strcmp(argv[i], "--verbose"))
			o.verbose = true;
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			o.max_ops = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			seeds = argv[++i];
		else {
			fprintf(stderr,
			        "usage: %s [--real [--thp]] [--ops N] [--seed S] [--seeds FILE]\n",
			        argv[0]);
			return 2;
		}
	}
	total = seeds ? run_file(seeds, &o) : run_seed(seed, &o);
	printf("fuzz: %llu operations on the %s kernel, %llu zero claims read back, no mismatch\n",
	       (unsigned long long)total,
	       o.thp           ? "real (huge pages)"
	       : o.real_kernel ? "real"
	                       : "fake",
	       (unsigned long long)all.zclaims);
	printf("fuzz: PURGE_HUGE: %llu holding flushes with overlapping ranges pending; checked "
	       "%llu for frames left whole, %llu for splits (%llu with a huge page), %llu "
	       "deadlines\n",
	       (unsigned long long)all.overlapped, (unsigned long long)all.whole_checks,
	       (unsigned long long)all.split_checks, (unsigned long long)all.huge_seen,
	       (unsigned long long)all.due_checks);
	if (total >= 10000 && all.zclaims == 0) {
		fprintf(stderr, "fuzz: no zero claim in %llu operations: the check ran vacuously\n",
		        (unsigned long long)total);
		return 1;
	}
	if (total >= 20000 && (!o.real_kernel || o.thp) &&
	    !(all.overlapped && all.whole_checks && all.huge_seen && all.due_checks)) {
		fprintf(stderr, "fuzz: a PURGE_HUGE check never ran in %llu operations\n",
		        (unsigned long long)total);
		return 1;
	}
	return 0;
}
