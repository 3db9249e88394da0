/* fair_paths [--wait] N [DEPTH]: main -> pX -> pY for every X, Y < N (N <=
 * 64): N * N + N + 1 distinct call paths, each called once; DEPTH 3 adds a
 * pZ below each (N^3 more). Then prints "made PATHS" and sleeps until
 * killed, its paths held in its thread's cache until the recording stops. */
#include <stdlib.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static char names[64][8];

/* A call of each of the first n names below the caller, levels deep. */
static void calls(int n, int levels)
{
	for (int i = 0; levels > 0 && i < n; i++) {
		USDTPROF_ENTER(names[i]);
		calls(n, levels - 1);
		USDTPROF_EXIT(names[i]);
	}
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int n = arg < argc ? atoi(argv[arg]) : 0;
	int depth = arg + 1 < argc ? atoi(argv[arg + 1]) : 2;
	if (n < 1 || n > 64 || depth < 2 || depth > 3)
		return 2;
	for (int i = 0; i < n; i++)
		snprintf(names[i], sizeof names[i], "p%d", i);
	USDTPROF_ENTER("main");
	calls(n, depth);
	USDTPROF_EXIT("main");
	long made = 1, level = 1;
	for (int d = 0; d < depth; d++)
		made += level *= n;
	printf("made %ld\n", made);
	fflush(stdout);
	for (;;)
		pause();
}
