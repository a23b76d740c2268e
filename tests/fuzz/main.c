/* SPDX-License-Identifier: MIT */
/*
 * The model-based fuzz driver as a plain seeded random loop (what CI runs):
 *   fuzz-purge [--real] [--ops N] [--seed S] [--seeds FILE]
 * --seeds runs every seed listed in FILE (one per line, '#' comments): the
 * seeds that once found bugs, kept as regression tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static uint64_t zclaims; /* zero claims read back, over all seeds */

static uint64_t run_seed(uint64_t seed, const struct fuzz_opts *o)
{
	struct fuzz_src src = {.state = seed};
	uint64_t n = fuzz_run(&src, o);

	zclaims += src.zclaims;
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
		else if (!strcmp(argv[i], "--verbose"))
			o.verbose = true;
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			o.max_ops = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			seeds = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--real] [--ops N] [--seed S] [--seeds FILE]\n",
			        argv[0]);
			return 2;
		}
	}
	total = seeds ? run_file(seeds, &o) : run_seed(seed, &o);
	printf("fuzz: %llu operations on the %s kernel, %llu zero claims read back, no mismatch\n",
	       (unsigned long long)total, o.real_kernel ? "real" : "fake",
	       (unsigned long long)zclaims);
	if (total >= 10000 && zclaims == 0) {
		fprintf(stderr, "fuzz: no zero claim in %llu operations: the check ran vacuously\n",
		        (unsigned long long)total);
		return 1;
	}
	return 0;
}
