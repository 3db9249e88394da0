/* More distinct call paths than a small table holds: main -> n<x> -> n<y> ->
 * n<z> for every x, y, z in 0..7, the innermost spinning 10 us: 8 + 64 + 512
 * paths below main. Prints "measured main NS", the time from just after
 * main's ENTER to just before its EXIT, and "measured main_outer NS", from
 * just before the ENTER to just after the EXIT: a profiler's time for main
 * lies between the two, however long the probes or a preemption took.
 * many_paths [--wait] [US]: the innermost spins US us instead (a run whose
 * probes cost little beside its work). */
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static const char *const names[8] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int spin = arg < argc ? atoi(argv[arg]) : 10;
	long long outer_start = now_ns();
	USDTPROF_ENTER("main");
	long long start = now_ns();
	for (int x = 0; x < 8; x++) {
		USDTPROF_ENTER(names[x]);
		for (int y = 0; y < 8; y++) {
			USDTPROF_ENTER(names[y]);
			for (int z = 0; z < 8; z++) {
				USDTPROF_ENTER(names[z]);
				spin_us(spin);
				USDTPROF_EXIT(names[z]);
			}
			USDTPROF_EXIT(names[y]);
		}
		USDTPROF_EXIT(names[x]);
	}
	long long end = now_ns();
	USDTPROF_EXIT("main");
	long long outer_end = now_ns();
	printf("measured main %lld\nmeasured main_outer %lld\n", end - start, outer_end - outer_start);
	return 0;
}
