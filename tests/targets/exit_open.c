/* Exits the process from inside probed frames: main -> outer -> inner, each
 * spinning 2 ms, then exit(3) from inner; no EXIT runs. Prints the spins
 * summed per frame and the time off the CPU outside them (measure.h),
 * "entered_at", the time just before main's ENTER, and, from a watcher
 * process, "exited_at", when the watcher saw this process's files closed:
 * later in do_exit() than the exit hook. */
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "measure.h"

static long long main_self, outer_self, inner_self, entered_at;

static void start_watcher(void)
{
	int fds[2];
	char c;
	if (pipe(fds) != 0)
		exit(1);
	if (fork() == 0) {
		close(fds[1]);
		if (read(fds[0], &c, 1) == 0)
			printf("measured exited_at %lld\n", now_ns());
		fflush(stdout);
		_exit(0);
	}
	close(fds[0]);
}

static __attribute__((noinline)) void inner(void)
{
	USDTPROF_ENTER("inner");
	spin_into(&inner_self, 2000);
	printf("measured main %lld\nmeasured outer %lld\nmeasured inner %lld\nmeasured off_cpu %lld\nmeasured outside %lld\n"
	       "measured entered_at %lld\n",
	       main_self, outer_self, inner_self, off_cpu_outside_spins(), wall_outside_spins(), entered_at);
	exit(3);
}

static __attribute__((noinline)) void outer(void)
{
	USDTPROF_ENTER("outer");
	spin_into(&outer_self, 2000);
	inner();
}

int main(int argc, char **argv)
{
	start_watcher();
	hold_if_asked(argc, argv);
	measure_start();
	entered_at = now_ns();
	USDTPROF_ENTER("main");
	spin_into(&main_self, 2000);
	outer();
}
