/* For the reports' uncertainty marks (~): tiny() does nothing between its
 * probes, 20000 calls, so its compensated time is the probes' own cost give
 * or take: within the calibration's spread (its shortest call surely, its
 * on-CPU self time when the probes cost what calibration measured); busy()
 * spins 2 ms a call, 5 calls: far above any spread. */
#include <usdtprof/usdtprof.h>
#include "spin.h"

static volatile unsigned long sink;

static __attribute__((noinline)) void tiny(unsigned long i)
{
	USDTPROF_ENTER("tiny");
	sink += i;
	USDTPROF_EXIT("tiny");
}

static __attribute__((noinline)) void busy(void)
{
	USDTPROF_ENTER("busy");
	spin_us(2000);
	USDTPROF_EXIT("busy");
}

int main(void)
{
	for (unsigned long i = 0; i < 20000; i++)
		tiny(i);
	for (int i = 0; i < 5; i++)
		busy();
	return 0;
}
