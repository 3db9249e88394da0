/* Threads that exit inside probed frames: THREADS threads (argument, default
 * 200), one after another, each entering t_outer -> t_mid -> t_inner with a
 * 1 ms spin in each and calling pthread_exit() from t_inner: no EXIT runs.
 * Printed at the end ("measured NAME NS"): the spins summed per frame
 * (measure.h's spin_into, fine for threads that run one at a time), and
 * "bound", the sum over threads of the time from just before t_outer's ENTER
 * to the return of pthread_join(), which comes after the thread's exit. */
#include <pthread.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "measure.h"

static long long outer_self, mid_self, inner_self, entered;

static void *run(void *arg)
{
	(void)arg;
	entered = now_ns();
	USDTPROF_ENTER("t_outer");
	spin_into(&outer_self, 1000);
	USDTPROF_ENTER("t_mid");
	spin_into(&mid_self, 1000);
	USDTPROF_ENTER("t_inner");
	spin_into(&inner_self, 1000);
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	int threads = argc > arg ? atoi(argv[arg]) : 200;
	long long bound = 0;
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		pthread_create(&t, NULL, run, NULL);
		pthread_join(t, NULL);
		bound += now_ns() - entered;
	}
	printf("measured t_outer %lld\nmeasured t_mid %lld\nmeasured t_inner %lld\nmeasured bound %lld\n",
	       outer_self, mid_self, inner_self, bound);
	return 0;
}
