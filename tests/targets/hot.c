/* A hot loop of probed calls: `hot [--wait] SECONDS` calls work() for
 * SECONDS (or until SIGTERM), then prints how many calls it made. Far beyond
 * any overhead budget when every call is probed. SIGUSR2 pauses it between
 * two calls (it prints "paused at call N", then makes no call, idle, until
 * SIGTERM or the end of its SECONDS). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static volatile unsigned long sink;

__attribute__((noinline)) static void work(unsigned long i)
{
	USDTPROF_ENTER("work");
	sink += i;
	USDTPROF_EXIT("work");
}

static volatile sig_atomic_t stop, hold;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_pause(int sig)
{
	(void)sig;
	hold = 1;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	double seconds = argc > arg ? atof(argv[arg]) : 1, end = now_s() + seconds;
	unsigned long calls = 0;

	signal(SIGTERM, on_term);
	signal(SIGUSR2, on_pause);
	while (!stop && now_s() < end) {
		if (hold) {
			printf("paused at call %lu\n", calls);
			fflush(stdout);
			while (!stop && now_s() < end)
				usleep(10000);
			break;
		}
		for (int i = 0; i < 1000; i++)
			work(calls++);
	}
	printf("calls %lu\n", calls);
	return 0;
}
