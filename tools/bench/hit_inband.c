/* What each probe hit costs, timed from the target's side (issue 11: what an
 * in-band measure would see, docs/benchmarks.md): CHUNKS chunks of N calls,
 * each probe (entry, exit) between two reads of CLOCK_MONOTONIC, and N pairs
 * of reads alone (the reads' own cost); prints each chunk's percentiles.
 * Run under `usdtprof record`.
 *
 *   hit_inband CHUNKS N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <usdtprof/usdtprof.h>

static inline long long monotonic_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

/* Sorts ns[0..n) and prints its 10th, 50th and 90th percentiles. */
static void print_percentiles(const char *what, long long *ns, int n)
{
	qsort(ns, n, sizeof(*ns), by_value);
	printf(" | %s p10 %lld p50 %lld p90 %lld", what, ns[n / 10], ns[n / 2], ns[9 * n / 10]);
}

int main(int argc, char **argv)
{
	int chunks = argc > 1 ? atoi(argv[1]) : 12;
	int n = argc > 2 ? atoi(argv[2]) : 4000;
	if (chunks < 1 || n < 10) {
		fprintf(stderr, "usage: hit_inband CHUNKS N (N >= 10)\n");
		return 2;
	}
	long long *reads = malloc(sizeof(long long) * n), *entry = malloc(sizeof(long long) * n),
		  *exit_ = malloc(sizeof(long long) * n);
	for (int c = 0; c < chunks; c++) {
		for (int i = 0; i < n; i++) {
			long long t0 = monotonic_ns();
			reads[i] = monotonic_ns() - t0;
		}
		for (int i = 0; i < n; i++) {
			long long t0 = monotonic_ns();
			USDTPROF_ENTER("f");
			long long t1 = monotonic_ns();
			USDTPROF_EXIT("f");
			long long t2 = monotonic_ns();
			entry[i] = t1 - t0;
			exit_[i] = t2 - t1;
		}
		printf("chunk %2d, ns", c);
		print_percentiles("two reads", reads, n);
		print_percentiles("entry hit", entry, n);
		print_percentiles("exit hit", exit_, n);
		printf("\n");
	}
	return 0;
}
