/* work() spins 1 ms on the CPU, then sleeps 2 ms: its self time should split
 * 1 : 2 between on- and off-CPU. Runs 50 times. On a loaded machine the
 * split moves (preempted spins, late wake-ups), so the target also prints
 * what it measured itself inside work(): "measured oncpu NS" from its
 * thread CPU clock and "measured offcpu NS" for the rest of the wall time. */
#include <sys/prctl.h>
#include <usdtprof/usdtprof.h>
#include "measure.h"

static long long wall_sum, cpu_sum;

static void work(void)
{
	struct timespec two_ms = {0, 2000000};
	USDTPROF_ENTER("work");
	long long wall = now_ns(), cpu = thread_cpu_ns();
	spin_us(1000);
	nanosleep(&two_ms, NULL);
	cpu_sum += thread_cpu_ns() - cpu;
	wall_sum += now_ns() - wall;
	USDTPROF_EXIT("work");
}

int main(void)
{
	prctl(PR_SET_TIMERSLACK, 1UL); /* sleep 2 ms, not 2.05 */
	for (int i = 0; i < 50; i++)
		work();
	printf("measured oncpu %lld\nmeasured offcpu %lld\nmeasured slack %lld\n", cpu_sum, wall_sum - cpu_sum,
	       wall_sum - 150000000LL);
	return 0;
}
