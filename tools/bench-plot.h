/* SPDX-License-Identifier: MIT */
/* purge-bench --plot: ns per purged page against vlen, drawn by gnuplot. */
#ifndef BENCH_PLOT_H
#define BENCH_PLOT_H

#include <stddef.h>

#include "bench-output.h"

/* Draw r into `file` (.svg or .png; log2 x axis, one line per row; loop and
 * floor are flat lines since they do not depend on vlen).  Writes the data
 * and the script to temporary files and runs gnuplot on them.  Returns 0,
 * -ENOENT when gnuplot is not installed, or another negative errno; msg
 * says what happened either way. */
int bench_plot(const char *file, const struct bench_report *r, char *msg, size_t len);

#endif
