/* What a trap into the kernel costs the program's own code after it: a
 * stretch of fixed work (SEGMENT_NS, a loop, as tests/targets/overhead.c's
 * mid does between its leaves) timed by two clock reads right after
 *   none:    nothing,
 *   syscall: a system call (getppid),
 *   probe:   a call of an empty probed function (under a tracer: two hits),
 * in turn, ROUNDS rounds of 2,000 of each; prints each mode's mean per
 * stretch (the reads' cost included alike). Run it under `usdtprof record`
 * for the probe's traps; alone, `probe` is a plain call.
 *
 *   post_trap [SEGMENT_NS] [ROUNDS] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <usdtprof/usdtprof.h>
#include "../../tests/targets/spin.h"

#define STRETCHES 2000

enum { NONE, SYSCALL, PROBE, MODES };

static __attribute__((noinline)) void probed(void)
{
	USDTPROF_ENTER("probed");
	USDTPROF_EXIT("probed");
}

int main(int argc, char **argv)
{
	long segment_ns = argc > 1 ? atol(argv[1]) : 90;
	int rounds = argc > 2 ? atoi(argv[2]) : 30;
	if (segment_ns <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: post_trap [SEGMENT_NS] [ROUNDS]\n");
		return 2;
	}
	long iters = fixed_work_iterations(segment_ns);
	double sum[MODES] = {0};
	for (int r = 0; r < rounds; r++)
		for (int m = 0; m < MODES; m++)
			for (int i = 0; i < STRETCHES; i++) {
				if (m == SYSCALL)
					syscall(SYS_getppid);
				else if (m == PROBE)
					probed();
				long long start = now_ns();
				fixed_work(iters);
				sum[m] += (double)(now_ns() - start);
			}
	double per = (double)rounds * STRETCHES;
	printf("segment %ld ns (%ld iterations), ns per stretch: none %.2f syscall %.2f probe %.2f\n", segment_ns,
	       iters, sum[NONE] / per, sum[SYSCALL] / per, sum[PROBE] / per);
	return 0;
}
