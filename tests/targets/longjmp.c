/* Missing exits by longjmp, then clean calls.
 * Fault phase, FAULTS times (argument, default 10): a() spins 1 ms and calls
 * b(), which spins 1 ms and calls c(), which spins 1 ms and longjmps back
 * into a(); a() spins 1 ms more and exits. b's and c's EXIT never run.
 * Clean phase, CLEAN times (second argument, default 10): a2() -> b2() of
 * clean_calls.h.
 * Jump phase, JUMPS times (third argument, default 0): main calls jump1(), which
 * spins 1 ms and calls jump2(), which spins 1 ms and longjmps back into main;
 * main calls jump1() again, and after the last jump after() JUMPS times (1 ms
 * each). No EXIT of jump1 or jump2 runs and no outer frame exits in between: only
 * the next jump1 entry (same site, same stack pointer) shows jump1 and jump2 gone;
 * after() lies above them (jump1's frame is the larger) but at another site,
 * which proves nothing, so the last jump's frames wait for main's exit.
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

static jmp_buf back_to_main;
static long long jump1_self, jump2_self, after_self;

static __attribute__((noinline)) void jump2(void)
{
	USDTPROF_ENTER("jump2");
	spin_into(&jump2_self, 1000);
	longjmp(back_to_main, 1);
}

static __attribute__((noinline)) void jump1(void)
{
	volatile char frame[512]; /* a larger frame than after()'s */

	frame[0] = 0;
	USDTPROF_ENTER("jump1");
	spin_into(&jump1_self, 1000 + frame[0]);
	jump2();
	USDTPROF_EXIT("jump1"); /* never reached */
}

static __attribute__((noinline)) void after(void)
{
	USDTPROF_ENTER("after");
	spin_into(&after_self, 1000);
	USDTPROF_EXIT("after");
}

static void jumps(int n)
{
	for (volatile int i = 0; i < n; i++)
		if (setjmp(back_to_main) == 0)
			jump1();
	for (int i = 0; i < n; i++)
		after();
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int faults = argc > arg ? atoi(argv[arg]) : 10;
	int clean = argc > arg + 1 ? atoi(argv[arg + 1]) : 10;
	int jump = argc > arg + 2 ? atoi(argv[arg + 2]) : 0;
	measure_start();
	USDTPROF_ENTER("main");
	for (int i = 0; i < faults; i++)
		a();
	for (int i = 0; i < clean; i++)
		a2();
	jumps(jump);
	USDTPROF_EXIT("main");
	printf("measured a %lld\nmeasured b %lld\nmeasured c %lld\nmeasured a2 %lld\nmeasured b2 %lld\n"
	       "measured jump1 %lld\nmeasured jump2 %lld\nmeasured after %lld\nmeasured off_cpu %lld\nmeasured outside %lld\n",
	       a_self, b_self, c_self, a2_self, b2_self, jump1_self, jump2_self, after_self, off_cpu_outside_spins(), wall_outside_spins());
	return 0;
}
