/* A function that sometimes returns without its EXIT: main calls step() CALLS
 * times (argument, default 12); step spins 1 ms, calls leaf(i), spins 1 ms.
 * leaf spins 1 ms and, on every 3rd call (i % 3 == 0), returns early without
 * its EXIT; otherwise spins 2 ms more and exits. step's EXIT then finds leaf
 * on top and repairs the stack.
 * Prints the spins summed per frame usdtprof should charge them to, and the
 * time off the CPU outside them (measure.h). */
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "measure.h"

static long long step_self, leaf_self;

static __attribute__((noinline)) int leaf(int i)
{
	USDTPROF_ENTER("leaf");
	spin_into(&leaf_self, 1000);
	if (i % 3 == 0)
		return 1; /* the bug under test: no EXIT */
	spin_into(&leaf_self, 2000);
	USDTPROF_EXIT("leaf");
	return 0;
}

static __attribute__((noinline)) void step(int i)
{
	USDTPROF_ENTER("step");
	spin_into(&step_self, 1000);
	/* After an early return leaf is still usdtprof's top frame. */
	spin_into(leaf(i) ? &leaf_self : &step_self, 1000);
	USDTPROF_EXIT("step");
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int calls = argc > arg ? atoi(argv[arg]) : 12;
	measure_start();
	USDTPROF_ENTER("main");
	for (int i = 0; i < calls; i++)
		step(i);
	USDTPROF_EXIT("main");
	printf("measured step %lld\nmeasured leaf %lld\nmeasured off_cpu %lld\nmeasured outside %lld\n", step_self, leaf_self,
	       off_cpu_outside_spins(), wall_outside_spins());
	return 0;
}
