/* Five functions of fixed CPU work (a dependent multiply chain, not a
 * wall-clock spin: load stretches their wall time, not their on-CPU time),
 * each called CALLS times in each of WORKERS forked processes. With "slow"
 * as argument, charlie does twice the work: usdtprof diff must put it first
 * and mark it significant, and mark no other function. charlie is the
 * heaviest, so that its change (160 x its base time) stays above what a
 * burst of CPU stolen from one process adds to another function.
 *
 * Each worker prints the on-CPU time its functions' work took per call, by
 * its own thread clock: "measured PID alpha NS bravo NS ...". The machine
 * moves that too: on 2 vCPUs, delta, after a charlie made longer, ran its
 * same work up to 5% slower (the scheduler then preempts charlie at each
 * call; measured 2026-12-06, docs/diff.md), and the tests hold usdtprof to
 * what the program measured, not to what its code should take.
 * Usage: diffable [slow] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>

#include "spin.h"

#define WORKERS 6
#define CALLS 30
#define WORK 100000 /* iterations: about 130 us of CPU on the AMD host */

static volatile uint64_t sink;

enum { ALPHA, BRAVO, CHARLIE, DELTA, ECHO, FUNCTIONS };
static const char *const names[FUNCTIONS] = {"alpha", "bravo", "charlie", "delta", "echo"};
static long long measured_ns[FUNCTIONS]; /* on-CPU, summed over the calls */

static void work(long iterations, int function)
{
	long long start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t x = sink;
	for (long i = 0; i < iterations; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
	measured_ns[function] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
}

static void print_measured(void)
{
	printf("measured %d", (int)getpid());
	for (int f = 0; f < FUNCTIONS; f++)
		printf(" %s %lld", names[f], measured_ns[f] / CALLS);
	printf("\n");
	fflush(stdout);
}

static void alpha(void)
{
	USDTPROF_ENTER("alpha");
	work(WORK * 1, ALPHA);
	USDTPROF_EXIT("alpha");
}

static void bravo(void)
{
	USDTPROF_ENTER("bravo");
	work(WORK * 2, BRAVO);
	USDTPROF_EXIT("bravo");
}

static void delta(void)
{
	USDTPROF_ENTER("delta");
	work(WORK * 1, DELTA);
	USDTPROF_EXIT("delta");
}

static void echo(void)
{
	USDTPROF_ENTER("echo");
	work(WORK * 3, ECHO);
	USDTPROF_EXIT("echo");
}

static void charlie(int slow)
{
	USDTPROF_ENTER("charlie");
	work(WORK * 4 * (slow ? 2 : 1), CHARLIE);
	USDTPROF_EXIT("charlie");
}

static void worker(int slow)
{
	USDTPROF_ENTER("worker");
	for (int i = 0; i < CALLS; i++) {
		alpha();
		bravo();
		charlie(slow);
		delta();
		echo();
	}
	USDTPROF_EXIT("worker");
}

int main(int argc, char **argv)
{
	int slow = argc > 1 && strcmp(argv[1], "slow") == 0;
	for (int i = 0; i < WORKERS; i++)
		if (fork() == 0) {
			worker(slow);
			print_measured();
			_exit(0);
		}
	int status, failed = 0;
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	return failed;
}
