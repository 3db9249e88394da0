/* step() spins ~100 us on 9 calls of 10 and ~1 ms on the 10th, 1000 calls:
 * its durations' p50 lies in the power-of-two bucket of 100 us, its p99 in
 * that of 1 ms. Each call is timed by the target's own clock twice: inside
 * the probes (just after the entry, just before the exit: what usdtprof's
 * duration is at least) and around the call (the probes' own cost
 * included: what it is at most). Prints "measured inner_min NS" and
 * inner_max, inner_p50, inner_p99, outer_min, outer_max, and the same
 * quantiles of the outer times. Asks for SCHED_FIFO (best effort) so CPU
 * hogs preempt it less. */
#include <sched.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#define CALLS 1000

static long long inner[CALLS], outer[CALLS];

static __attribute__((noinline)) void step(int i)
{
	USDTPROF_ENTER("step");
	long long t = now_ns();
	spin_us(i % 10 == 9 ? 1000 : 100);
	inner[i] = now_ns() - t;
	USDTPROF_EXIT("step");
}

static int by_value(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

/* The rank-th smallest (from 1) of a sorted array, rank = q * CALLS rounded
 * as usdtprof's quantiles round it. */
static long long quantile(const long long *sorted, double q)
{
	long long rank = (long long)(q * CALLS + 0.5);
	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
}

int main(void)
{
	struct sched_param sp = {.sched_priority = 1};
	int fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;

	for (int i = 0; i < CALLS; i++) {
		long long t = now_ns();
		step(i);
		outer[i] = now_ns() - t;
	}
	qsort(inner, CALLS, sizeof inner[0], by_value);
	qsort(outer, CALLS, sizeof outer[0], by_value);
	printf("fifo %d\n", fifo);
	printf("measured inner_min %lld\nmeasured inner_max %lld\n", inner[0], inner[CALLS - 1]);
	printf("measured inner_p50 %lld\nmeasured inner_p99 %lld\n", quantile(inner, 0.5), quantile(inner, 0.99));
	printf("measured outer_min %lld\nmeasured outer_max %lld\n", outer[0], outer[CALLS - 1]);
	printf("measured outer_p50 %lld\nmeasured outer_p99 %lld\n", quantile(outer, 0.5), quantile(outer, 0.99));
	return 0;
}
