/* Two scenarios for the stack's edge cases.
 *   deep attach   : enters level1..level10, prints "ready PID" at level 10 and
 *                   waits for SIGUSR1 (attach now), then level 10 spins 20 ms
 *                   and each outer level spins 5 ms before its exit; then
 *                   shallow() runs 3 times (2 ms each).
 *   deep recurse N: rec() recursion N deep, 3 times, then shallow() 3 times. */
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static const char *const levels[] = {"level1", "level2", "level3", "level4", "level5",
				      "level6", "level7", "level8", "level9", "level10"};

static void shallow(void)
{
	USDTPROF_ENTER("shallow");
	spin_us(2000);
	USDTPROF_EXIT("shallow");
}

static void level(int i, int argc, char **argv)
{
	USDTPROF_ENTER(levels[i]);
	if (i == 9) {
		char *args[] = {argv[0], "--wait"};
		hold_if_asked(2, args);
		spin_us(20000);
	} else {
		level(i + 1, argc, argv);
		spin_us(5000);
	}
	USDTPROF_EXIT(levels[i]);
}

static void rec(int n)
{
	USDTPROF_ENTER("rec");
	if (n > 1)
		rec(n - 1);
	USDTPROF_EXIT("rec");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "attach") == 0) {
		level(0, argc, argv);
	} else if (argc > 2 && strcmp(argv[1], "recurse") == 0) {
		for (int i = 0; i < 3; i++)
			rec(atoi(argv[2]));
	} else {
		return 2;
	}
	if (strcmp(argv[1], "recurse") == 0)
		mark_work_start(); /* only shallow() is timed */
	for (int i = 0; i < 3; i++)
		shallow();
	print_slack();
	return 0;
}
