/* THREADS threads at once, thread i runs worker_i -> leaf_i ROUNDS times;
 * each thread's names are its own, so a mixed stack would show as a path
 * worker_i;leaf_j with i != j. */
#include <pthread.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#define THREADS 4
#define ROUNDS 50

static const char *const workers[THREADS] = {"worker0", "worker1", "worker2", "worker3"};
static const char *const leaves[THREADS] = {"leaf0", "leaf1", "leaf2", "leaf3"};
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
