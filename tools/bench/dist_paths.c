/* For the cost of duration distributions per probe hit (docs/benchmarks.md):
 * CALLS calls of functions named f0..f<PATHS-1>, in turn, under main. One
 * path stays in the thread's path cache; 256 paths in turn evict a cache
 * slot (64 of them) at nearly every exit, adding its totals and histogram
 * to the map. With "roots", the calls are made outside main: each is a root
 * (record --per-thread's cost is at a root's entry).
 *
 *   dist_paths PATHS CALLS [roots] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usdtprof/usdtprof.h>

#define MAX_PATHS 1024

static char names[MAX_PATHS][8];

static __attribute__((noinline)) void call(const char *name)
{
	USDTPROF_ENTER(name);
	__asm__ volatile("" ::: "memory");
	USDTPROF_EXIT(name);
}

int main(int argc, char **argv)
{
	int paths = argc > 1 ? atoi(argv[1]) : 1;
	long calls = argc > 2 ? atol(argv[2]) : 1000000;
	int roots = argc > 3 && strcmp(argv[3], "roots") == 0;
	if (paths < 1 || paths > MAX_PATHS || calls < 1) {
		fprintf(stderr, "usage: dist_paths PATHS (1..%d) CALLS\n", MAX_PATHS);
		return 2;
	}
	for (int i = 0; i < paths; i++)
		snprintf(names[i], sizeof(names[i]), "f%d", i);
	if (roots) {
		for (long c = 0; c < calls; c++)
			call(names[c % paths]);
		return 0;
	}
	USDTPROF_ENTER("main");
	for (long c = 0; c < calls; c++)
		call(names[c % paths]);
	USDTPROF_EXIT("main");
	return 0;
}
