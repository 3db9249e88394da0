/* Known durations: outer spins 4 ms then calls inner 3 times (2 ms each);
 * main calls outer REPEAT times (argument, default 10).
 * Expected per outer: self 4 ms, total 10 ms; per inner: 2 ms. */
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static void inner(void)
{
	USDTPROF_ENTER("inner");
	spin_us(2000);
	USDTPROF_EXIT("inner");
}

static void outer(void)
{
	USDTPROF_ENTER("outer");
	spin_us(4000);
	for (int i = 0; i < 3; i++)
		inner();
	USDTPROF_EXIT("outer");
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int repeat = argc > arg ? atoi(argv[arg]) : 10;
	mark_work_start();
	USDTPROF_ENTER("main");
	for (int i = 0; i < repeat; i++)
		outer();
	USDTPROF_EXIT("main");
	print_slack();
	return 7; /* record -- passes this through */
}
