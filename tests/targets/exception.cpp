/* A C++ exception thrown through probed frames and caught two levels up,
 * FAULTS times (second argument, default 10), then CLEAN clean calls a2() ->
 * b2() (third argument, default 10; clean_calls.h).
 *   manual: outer -> mid -> thrower with USDTPROF_ENTER/EXIT; the exception
 *           skips mid's and thrower's EXIT, outer catches it, spins 1 ms
 *           and exits.
 *   raii:   the same with USDTPROF_FUNC(), whose exits fire while unwinding.
 * Every frame spins 1 ms before calling on. Prints the spins summed per frame
 * usdtprof should charge them to, the time off the CPU outside them
 * (measure.h), and "unwind", the time from the throws to the catches. */
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <usdtprof/usdtprof.h>
#include "clean_calls.h"
#include "measure.h"

static long long outer_self, mid_self, thrower_self, unwind, thrown_at;

static void throw_now()
{
	thrown_at = now_ns();
	throw std::runtime_error("unwind");
}

static long long caught()
{
	long long t = now_ns() - thrown_at;
	unwind += t;
	return t;
}

__attribute__((noinline)) static void thrower()
{
	USDTPROF_ENTER("thrower");
	spin_into(&thrower_self, 1000);
	throw_now();
	USDTPROF_EXIT("thrower"); /* never reached */
}

__attribute__((noinline)) static void mid()
{
	USDTPROF_ENTER("mid");
	spin_into(&mid_self, 1000);
	thrower();
	USDTPROF_EXIT("mid"); /* never reached */
}

__attribute__((noinline)) static void outer()
{
	USDTPROF_ENTER("outer");
	spin_into(&outer_self, 1000);
	try {
		mid();
	} catch (const std::runtime_error &) {
		/* thrower stays usdtprof's top frame until outer's EXIT. */
		thrower_self += caught();
		spin_into(&thrower_self, 1000);
	}
	USDTPROF_EXIT("outer");
}

__attribute__((noinline)) static void thrower_raii()
{
	USDTPROF_FUNC();
	spin_into(&thrower_self, 1000);
	throw_now();
}

__attribute__((noinline)) static void mid_raii()
{
	USDTPROF_FUNC();
	spin_into(&mid_self, 1000);
	thrower_raii();
}

__attribute__((noinline)) static void outer_raii()
{
	USDTPROF_FUNC();
	spin_into(&outer_self, 1000);
	try {
		mid_raii();
	} catch (const std::runtime_error &) {
		/* The unwinding is shared by the three frames, in unknown parts. */
		caught();
		spin_into(&outer_self, 1000);
	}
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	bool raii = argc > arg && std::string(argv[arg]) == "raii";
	int faults = argc > arg + 1 ? atoi(argv[arg + 1]) : 10;
	int clean = argc > arg + 2 ? atoi(argv[arg + 2]) : 10;
	measure_start();
	USDTPROF_ENTER("main");
	for (int i = 0; i < faults; i++)
		raii ? outer_raii() : outer();
	for (int i = 0; i < clean; i++)
		a2();
	USDTPROF_EXIT("main");
	printf("measured outer %lld\nmeasured mid %lld\nmeasured thrower %lld\n"
	       "measured a2 %lld\nmeasured b2 %lld\nmeasured unwind %lld\nmeasured off_cpu %lld\nmeasured outside %lld\n",
	       outer_self, mid_self, thrower_self, a2_self, b2_self, unwind, off_cpu_outside_spins(), wall_outside_spins());
	return 0;
}
