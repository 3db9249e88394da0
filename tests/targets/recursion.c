/* rec(depth) spins 1 ms per level; ping/pong recurse mutually.
 * main runs rec(5) 4 times and ping(3) twice (ping->pong->ping->pong->ping->pong). */
#include <usdtprof/usdtprof.h>
#include "spin.h"

static void rec(int depth)
{
	USDTPROF_ENTER("rec");
	spin_us(1000);
	if (depth > 1)
		rec(depth - 1);
	USDTPROF_EXIT("rec");
}

static void pong(int n);

static void ping(int n)
{
	USDTPROF_ENTER("ping");
	spin_us(500);
	pong(n);
	USDTPROF_EXIT("ping");
}

static void pong(int n)
{
	USDTPROF_ENTER("pong");
	spin_us(500);
	if (n > 1)
		ping(n - 1);
	USDTPROF_EXIT("pong");
}

int main(int argc, char **argv)
{
	hold_if_asked(argc, argv);
	mark_work_start();
	for (int i = 0; i < 4; i++)
		rec(5);
	for (int i = 0; i < 2; i++)
		ping(3);
	print_slack();
	return 0;
}
