/* Missing exits by longjmp, then clean calls.
 * Fault phase, FAULTS times (argument, default 10): a() spins 1 ms and calls
 * b(), which spins 1 ms and calls c(), which spins 1 ms and longjmps back
 * into a(); a() spins 1 ms more and exits. b's and c's EXIT never run.
 * Clean phase, CLEAN times (second argument, default 10): a2() -> b2() of
 * clean_calls.h.
 * Prints the spins summed per frame usdtprof should charge them to, and the
 * time off the CPU outside them (measure.h). */
#include <setjmp.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "clean_calls.h"
#include "measure.h"

static jmp_buf back_to_a;
static long long a_self, b_self, c_self;

static __attribute__((noinline)) void c(void)
{
	USDTPROF_ENTER("c");
	spin_into(&c_self, 1000);
	longjmp(back_to_a, 1);
}

static __attribute__((noinline)) void b(void)
{
	USDTPROF_ENTER("b");
	spin_into(&b_self, 1000);
	c();
	USDTPROF_EXIT("b"); /* never reached */
}

static __attribute__((noinline)) void a(void)
{
	USDTPROF_ENTER("a");
	if (setjmp(back_to_a) == 0) {
		spin_into(&a_self, 1000);
		b();
	}
	/* usdtprof cannot see the jump: c is still its top frame until a's EXIT. */
	spin_into(&c_self, 1000);
	USDTPROF_EXIT("a");
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int faults = argc > arg ? atoi(argv[arg]) : 10;
	int clean = argc > arg + 1 ? atoi(argv[arg + 1]) : 10;
	measure_start();
	USDTPROF_ENTER("main");
	for (int i = 0; i < faults; i++)
		a();
	for (int i = 0; i < clean; i++)
		a2();
	USDTPROF_EXIT("main");
	printf("measured a %lld\nmeasured b %lld\nmeasured c %lld\nmeasured a2 %lld\nmeasured b2 %lld\n"
	       "measured off_cpu %lld\n",
	       a_self, b_self, c_self, a2_self, b2_self, off_cpu_outside_spins());
	return 0;
}
