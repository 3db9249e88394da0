/* Names set after the launch: main renames its process "renamed-main"
 * (prctl PR_SET_NAME), then starts THREADS threads (first argument, default
 * 4) that name themselves "worker-I" (pthread_setname_np) and call "work"
 * ROUNDS times (second argument, default 20; 100 us of spin each; with a
 * third argument "scaled", worker-I calls it ROUNDS * (I + 1) times); main
 * joins them and calls "done" once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static int rounds, scaled;

static void *run(void *arg)
{
	char name[16];
	snprintf(name, sizeof(name), "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	for (long i = 0; i < rounds * (scaled ? (long)arg + 1 : 1); i++) {
		USDTPROF_ENTER("work");
		spin_us(100);
		USDTPROF_EXIT("work");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	rounds = argc > 2 ? atoi(argv[2]) : 20;
	scaled = argc > 3 && strcmp(argv[3], "scaled") == 0;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		return 2;
	prctl(PR_SET_NAME, "renamed-main");
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	USDTPROF_ENTER("done");
	USDTPROF_EXIT("done");
	return 0;
}
