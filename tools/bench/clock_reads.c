/* What the header's clock reads cost the program per hit, without a tracer:
 * the best of 5 rounds of N calls of a function with an entry and an exit
 * probe, its semaphores down (the header's branch alone) and then raised by
 * the program itself (no uprobe: each site's nop runs), so the difference is
 * the CLOCK_MONOTONIC reads (three) and their stores a hit makes while a profiler
 * is attached (docs/design.md, "Probe time measured in band").
 *
 *   clock_reads [N] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <usdtprof/usdtprof.h>
#include "../../tests/targets/spin.h"

static __attribute__((noinline)) void probed(void)
{
	USDTPROF_ENTER("probed");
	__asm__ volatile("" ::: "memory");
	USDTPROF_EXIT("probed");
}

/* The best time of n calls, the semaphores at `raised`. */
static long long best_of(long n, unsigned short raised)
{
	long long best = -1;
	for (int r = 0; r < 5; r++) {
		usdtprof_enter_semaphore = usdtprof_exit_semaphore = raised;
		long long start = now_ns();
		for (long i = 0; i < n; i++)
			probed();
		long long took = now_ns() - start;
		if (best < 0 || took < best)
			best = took;
	}
	usdtprof_enter_semaphore = usdtprof_exit_semaphore = 0;
	return best;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	if (n <= 0) {
		fprintf(stderr, "usage: clock_reads [N]\n");
		return 2;
	}
	double off = (double)best_of(n, 0) / (double)n, on = (double)best_of(n, 1) / (double)n;
	printf("per call: semaphores down %.2f ns, raised without a tracer %.2f ns: %.2f ns a hit\n", off, on,
	       (on - off) / 2);
	return 0;
}
