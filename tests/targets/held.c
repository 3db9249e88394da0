/* A function running when the probes are attached: main -> held, which
 * prints "held PID" and waits inside its frame for SIGUSR1 (blocked first:
 * none is lost), spins 1 ms and returns; main spins 5 ms more. Then it prints
 * "lived NS": the time from its main's start to after main's exit, by its own
 * clock (CLOCK_MONOTONIC), which bounds every time recorded of it. */
#include <usdtprof/usdtprof.h>
#include "spin.h"

int main(void)
{
	long long start = now_ns();
	sigset_t old;
	block_go_signal(&old);
	USDTPROF_ENTER("main");
	USDTPROF_ENTER("held");
	printf("held %d\n", (int)getpid());
	fflush(stdout);
	while (!go_signal)
		sigsuspend(&old);
	spin_us(1000);
	USDTPROF_EXIT("held");
	spin_us(5000);
	USDTPROF_EXIT("main");
	printf("lived %lld\n", now_ns() - start);
	fflush(stdout);
	return 0;
}
