/* Many short-lived threads, one after another (argument, default 2000), each
 * making one probed call, "short". The kernel hands out tids cyclically up to
 * /proc/sys/kernel/pid_max, so a run longer than that reuses tids of earlier
 * threads of this run; printed at the end as "reused N" (threads whose tid an
 * earlier one had). Also printed: the time the threads spent off the CPU
 * around their call (measure.h). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "measure.h"

#define MAX_TID (1 << 22) /* the kernel's upper limit for pid_max */

static unsigned char seen[MAX_TID / 8];
static int tid;
static long long off_cpu;

static void *run(void *arg)
{
	(void)arg;
	measure_start(); /* the threads run one at a time */
	USDTPROF_ENTER("short");
	tid = gettid();
	USDTPROF_EXIT("short");
	off_cpu += off_cpu_outside_spins();
	return NULL;
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int threads = argc > arg ? atoi(argv[arg]) : 2000;
	int reused = 0;
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		pthread_create(&t, NULL, run, NULL);
		pthread_join(t, NULL);
		reused += (seen[tid / 8] >> (tid % 8)) & 1;
		seen[tid / 8] |= 1 << (tid % 8);
	}
	printf("reused %d\nmeasured off_cpu %lld\n", reused, off_cpu);
	return 0;
}
