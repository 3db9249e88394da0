/* Tight loop of probed calls for `make bench`: `loop N OUT` calls work() N
 * times and writes the mean ns per call to OUT. Built twice: with the
 * header's probes (-DPROBED) and without. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef PROBED
#include <usdtprof/usdtprof.h>
#else
#define USDTPROF_ENTER(name)
#define USDTPROF_EXIT(name)
#endif

static volatile unsigned long sink;

__attribute__((noinline)) static void work(unsigned long i)
{
	USDTPROF_ENTER("work");
	sink += i;
	USDTPROF_EXIT("work");
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	FILE *out = argc > 2 ? fopen(argv[2], "w") : stdout;

	if (!out)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (unsigned long i = 0; i < n; i++)
		work(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(out, "%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return fclose(out) != 0;
}
