/* THREADS threads (first argument, default 4, at most 64) started together
 * (barrier); thread i runs ROUNDS rounds (second argument, default 50) of
 * worker<i> -> leaf<i> (100 us then 200 us of spin), with "shared" as third
 * argument each followed by a call of "shared", a name every thread uses
 * (50 us). Thread i's names end in two octal digits i/8, i%8 ("worker53" is
 * thread 43), so a stack mixing two threads would show as a path whose names
 * end differently. The names are literals, not formatted at run time:
 * usdtprof reads them from the binary once the process is gone. */
#include <pthread.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#define MAX_THREADS 64

#define NAMES8(prefix, hi)                                                      \
	prefix #hi "0", prefix #hi "1", prefix #hi "2", prefix #hi "3",           \
	prefix #hi "4", prefix #hi "5", prefix #hi "6", prefix #hi "7"
#define NAMES64(prefix)                                                         \
	NAMES8(prefix, 0), NAMES8(prefix, 1), NAMES8(prefix, 2), NAMES8(prefix, 3), \
	NAMES8(prefix, 4), NAMES8(prefix, 5), NAMES8(prefix, 6), NAMES8(prefix, 7)

static const char *const workers[MAX_THREADS] = {NAMES64("worker")};
static const char *const leaves[MAX_THREADS] = {NAMES64("leaf")};
static pthread_barrier_t start;
static int rounds, shared;

static void *run(void *arg)
{
	long i = (long)arg;
	pthread_barrier_wait(&start);
	for (int r = 0; r < rounds; r++) {
		USDTPROF_ENTER(workers[i]);
		spin_us(100);
		USDTPROF_ENTER(leaves[i]);
		spin_us(200);
		USDTPROF_EXIT(leaves[i]);
		USDTPROF_EXIT(workers[i]);
		if (shared) {
			USDTPROF_ENTER("shared");
			spin_us(50);
			USDTPROF_EXIT("shared");
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	int arg = hold_if_asked(argc, argv);
	int threads = argc > arg ? atoi(argv[arg]) : 4;
	rounds = argc > arg + 1 ? atoi(argv[arg + 1]) : 50;
	shared = argc > arg + 2 && strcmp(argv[arg + 2], "shared") == 0;
	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "threads: 1 to %d threads\n", MAX_THREADS);
		return 2;
	}
	pthread_barrier_init(&start, NULL, threads);
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
