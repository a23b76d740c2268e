/* SPDX-License-Identifier: MIT */
/*
 * The memory figures the documentation states, from purge_queue_bytes():
 * bytes a range (the slope up to a million ranges), the fixed part (a
 * one-range queue) and the default queue, rounded as the documents round
 * them.  check-doc-figures.sh compares them with purge.h,
 * purge_queue_bytes(3) and the README.
 */
#include <stdio.h>

#include "purge.h"

int main(void)
{
	if (sizeof(void *) != 8) {
		printf("skip: the documents give the figures of a 64-bit system\n");
		return 77;
	}
	double big = (double)purge_queue_bytes(1u << 20), one = (double)purge_queue_bytes(1);
	double def = (double)purge_queue_bytes(0);

	if (big == 0 || one == 0 || def == 0)
		return 1;
	printf("%.0f %.0f %.0f\n", (big - one) / ((1u << 20) - 1), one / 1024, def / 1024);
	return 0;
}
