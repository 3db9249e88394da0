/* The clean phase of the targets that skip probed exits (longjmp, exception):
 * after the faults, a2() spins 1 ms and calls b2(), which spins 2 ms, and the
 * tests check these calls are attributed exactly. */
#ifndef TARGETS_CLEAN_CALLS_H
#define TARGETS_CLEAN_CALLS_H

#include <usdtprof/usdtprof.h>
#include "measure.h"

static long long a2_self, b2_self;

static __attribute__((noinline)) void b2(void)
{
	USDTPROF_ENTER("b2");
	spin_into(&b2_self, 2000);
	USDTPROF_EXIT("b2");
}

static __attribute__((noinline)) void a2(void)
{
	USDTPROF_ENTER("a2");
	spin_into(&a2_self, 1000);
	b2();
	USDTPROF_EXIT("a2");
}

#endif
