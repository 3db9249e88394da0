/* A program with USDT probes of its own (plain sys/sdt.h, no semaphores),
 * profiled with --pair and --task: handle() runs 5 requests; each queues a
 * job that a new thread runs (compute, 1 ms). */
#include <pthread.h>
#include <stdint.h>
#include <sys/sdt.h>
#include "spin.h"

static void *worker(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	DTRACE_PROBE1(myapp, job__start, id);
	DTRACE_PROBE2(myapp, request__start, id, "compute");
	spin_us(1000);
	DTRACE_PROBE2(myapp, request__done, id, "compute");
	DTRACE_PROBE1(myapp, job__done, id);
	return NULL;
}

int main(void)
{
	mark_work_start();
	for (uint64_t id = 1; id <= 5; id++) {
		pthread_t t;
		DTRACE_PROBE2(myapp, request__start, id, "handle");
		DTRACE_PROBE1(myapp, job__queued, id);
		pthread_create(&t, NULL, worker, (void *)(uintptr_t)id);
		pthread_join(t, NULL);
		DTRACE_PROBE2(myapp, request__done, id, "handle");
	}
	print_slack();
	return 0;
}
