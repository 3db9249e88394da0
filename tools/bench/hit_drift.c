/* How the cost of a probed call moves over time within one process (the
 * limit of overhead compensation, docs/benchmarks.md): CHUNKS chunks of N
 * back-to-back calls of an empty probed function, each timed by the thread's
 * CPU clock; prints ns per call for each chunk (with a third argument `t`,
 * the chunk's end on CLOCK_MONOTONIC first, for tools/bench/bpf_run_time.py).
 * Run under `usdtprof record`.
 *
 *   hit_drift CHUNKS N [t] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <usdtprof/usdtprof.h>
#include "../../tests/targets/spin.h"

static __attribute__((noinline)) void empty(void)
{
	USDTPROF_ENTER("empty");
	USDTPROF_EXIT("empty");
}

int main(int argc, char **argv)
{
	int chunks = argc > 1 ? atoi(argv[1]) : 20;
	int n = argc > 2 ? atoi(argv[2]) : 5000;
	int stamped = argc > 3 && argv[3][0] == 't';
	if (chunks < 1 || n < 1) {
		fprintf(stderr, "usage: hit_drift CHUNKS N [t]\n");
		return 2;
	}
	for (int c = 0; c < chunks; c++) {
		long long start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < n; i++)
			empty();
		double per_call = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - start) / n;
		if (stamped)
			printf("%lld ", now_ns());
		printf("%.1f\n", per_call);
		fflush(stdout);
	}
	return 0;
}
