// SPDX-License-Identifier: MIT
/* What the purge-bench unit tests share: the headers, the page and frame
 * sizes they parse with, and parse(), the argument parser on a list. */
#ifndef TESTS_BENCH_TEST_H
#define TESTS_BENCH_TEST_H

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

/* Parse a NULL-terminated argument list. */
static inline int parse(struct bench_opts *o, const char **args)
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

#endif
