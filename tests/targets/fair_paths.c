/* fair_paths [--wait] N: main -> pX -> pY for every X, Y < N (N <= 64):
 * N * N + N + 1 distinct call paths, each called once. Then prints
 * "made PATHS" and sleeps until killed, its paths held in its thread's cache
 * until the recording stops. */
#include <stdlib.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static char names[64][8];

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int n = arg < argc ? atoi(argv[arg]) : 0;
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		snprintf(names[i], sizeof names[i], "p%d", i);
	USDTPROF_ENTER("main");
	for (int x = 0; x < n; x++) {
		USDTPROF_ENTER(names[x]);
		for (int y = 0; y < n; y++) {
			USDTPROF_ENTER(names[y]);
			USDTPROF_EXIT(names[y]);
		}
		USDTPROF_EXIT(names[x]);
	}
	USDTPROF_EXIT("main");
	printf("made %d\n", n * n + n + 1);
	fflush(stdout);
	for (;;)
		pause();
}
