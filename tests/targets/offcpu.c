/* work() spins 1 ms on the CPU, then sleeps 2 ms: its self time should split
 * 1 : 2 between on- and off-CPU. Runs 50 times. */
#include <sys/prctl.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static void work(void)
{
	struct timespec two_ms = {0, 2000000};
	USDTPROF_ENTER("work");
	spin_us(1000);
	nanosleep(&two_ms, NULL);
	USDTPROF_EXIT("work");
}

int main(void)
{
	prctl(PR_SET_TIMERSLACK, 1UL); /* sleep 2 ms, not 2.05 */
	for (int i = 0; i < 50; i++)
		work();
	return 0;
}
