/* Work handed to a task on another thread (issue 11): spawn runs 300 us of
 * its own, then creates a task and returns without waiting for it; main then
 * hands the task to a worker thread, whose thread_body runs it (work:
 * 1000 us), then 100 us of its own (own). main waits (off-CPU) until the task
 * is done before the next round. The worker is woken only after spawn has
 * returned, so no timed frame runs beside another: a preemption of one thread
 * while the other spins would stretch a frame without adding to the measured
 * slack. ROUNDS rounds (argument, default 10).
 *
 * Reports count work under main;spawn;[task] and in spawn's inclusive time,
 * not in thread_body's (docs/report-json.md "Inclusive time and tasks"). */
#include <pthread.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long long queued, done; /* task ids 1..queued created, 1..done finished */
static int rounds;

static void *worker(void *arg)
{
	(void)arg;
	USDTPROF_ENTER("thread_body");
	for (long long id = 1; id <= rounds; id++) {
		pthread_mutex_lock(&lock);
		while (queued < id)
			pthread_cond_wait(&changed, &lock);
		pthread_mutex_unlock(&lock);
		USDTPROF_TASK_BEGIN(id);
		USDTPROF_ENTER("work");
		spin_us(1000);
		USDTPROF_EXIT("work");
		USDTPROF_TASK_END(id);
		USDTPROF_ENTER("own");
		spin_us(100);
		USDTPROF_EXIT("own");
		pthread_mutex_lock(&lock);
		done = id;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
	}
	USDTPROF_EXIT("thread_body");
	return NULL;
}

static void spawn(long long id)
{
	USDTPROF_ENTER("spawn");
	spin_us(300);
	USDTPROF_TASK_CREATE(id);
	USDTPROF_EXIT("spawn");
}

static void hand_over(long long id)
{
	pthread_mutex_lock(&lock);
	queued = id;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv)
{
	pthread_t t;
	int arg = hold_if_asked(argc, argv);
	rounds = argc > arg ? atoi(argv[arg]) : 10;
	if (rounds < 1) {
		fprintf(stderr, "rounds: at least 1\n");
		return 2;
	}
	pthread_create(&t, NULL, worker, NULL);
	USDTPROF_ENTER("main");
	mark_work_start();
	for (long long id = 1; id <= rounds; id++) {
		spawn(id);
		hand_over(id);
		pthread_mutex_lock(&lock);
		while (done < id)
			pthread_cond_wait(&changed, &lock);
		pthread_mutex_unlock(&lock);
	}
	USDTPROF_EXIT("main");
	pthread_join(t, NULL);
	print_slack();
	return 0;
}
