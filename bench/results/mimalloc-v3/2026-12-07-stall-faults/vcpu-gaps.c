/* SPDX-License-Identifier: MIT */
/*
 * vcpu-gaps: the longest time between two reads of CLOCK_MONOTONIC in a
 * loop that only reads the clock, for 5 s: on an idle machine, time the
 * thread did not run (the host's or the kernel's).  Run one per CPU.
 * cc -O2 -o vcpu-gaps vcpu-gaps.c
 */
#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(void)
{
	double end = now_ms() + 5000, prev = now_ms(), max = 0;
	int over1 = 0, over5 = 0;
	while (prev < end) {
		double t = now_ms(), gap = t - prev;
		max = gap > max ? gap : max;
		over1 += gap > 1;
		over5 += gap > 5;
		prev = t;
	}
	printf("longest gap %.2f ms; gaps over 1 ms: %d, over 5 ms: %d\n", max, over1, over5);
	return 0;
}
