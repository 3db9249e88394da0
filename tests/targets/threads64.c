/* 64 threads started together (barrier); thread i runs ROUNDS (20) rounds of
 * worker<i> -> leaf<i> (100 us then 200 us of spin) followed by a call of
 * "shared", a name every thread uses (50 us). Thread i's names end in two
 * octal digits i/8, i%8 ("worker53" is thread 43), so a stack mixing two
 * threads would show as a path whose names end differently. */
#include <pthread.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#define THREADS 64
#define ROUNDS 20

#define NAMES8(prefix, hi)                                                      \
	prefix #hi "0", prefix #hi "1", prefix #hi "2", prefix #hi "3",           \
	prefix #hi "4", prefix #hi "5", prefix #hi "6", prefix #hi "7"
#define NAMES64(prefix)                                                         \
	NAMES8(prefix, 0), NAMES8(prefix, 1), NAMES8(prefix, 2), NAMES8(prefix, 3), \
	NAMES8(prefix, 4), NAMES8(prefix, 5), NAMES8(prefix, 6), NAMES8(prefix, 7)

static const char *const workers[THREADS] = {NAMES64("worker")};
static const char *const leaves[THREADS] = {NAMES64("leaf")};
static pthread_barrier_t start;

static void *run(void *arg)
{
	long i = (long)arg;
	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		USDTPROF_ENTER(workers[i]);
		spin_us(100);
		USDTPROF_ENTER(leaves[i]);
		spin_us(200);
		USDTPROF_EXIT(leaves[i]);
		USDTPROF_EXIT(workers[i]);
		USDTPROF_ENTER("shared");
		spin_us(50);
		USDTPROF_EXIT("shared");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	hold_if_asked(argc, argv);
	pthread_barrier_init(&start, NULL, THREADS);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
