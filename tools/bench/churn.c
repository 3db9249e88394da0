/* A target whose processes and threads come and go, for tools/bench/monitor_soak.sh:
 *
 *   churn SECONDS [CHILDREN_PER_SECOND [THREADS_PER_SECOND]]     (defaults 20 and 50)
 *
 * Prints "ready PID", then for SECONDS (0: until killed) the main process calls main_loop ->
 * tick every 10 ms and, at the given rates:
 *   - forks a child that names itself (comm) after one of 8 worker names, makes probed calls
 *     on a few paths, some with function names on its heap (per-process names), lives 0-40 ms
 *     and exits; one child in 8 execs this program again (`churn --child N`) first, so it
 *     is a new image in a new address space, as a server's re-exec'd worker would be;
 *   - starts a thread that names itself "t<counter>", makes probed calls and exits.
 * The parent reaps every child and joins every thread; it never runs out of pids or memory.
 * Prints "children N threads N" at the end. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>

static const char *const workers[8] = {"churn-a", "churn-b", "churn-c", "churn-d",
				       "churn-e", "churn-f", "churn-g", "churn-h"};
static const char *const leaves[4] = {"parse", "plan", "execute", "commit"};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_us(long long us)
{
	long long end = now_ns() + us * 1000;
	while (now_ns() < end)
		;
}

/* A request: request -> (leaf)*, the leaves picked by seed, each spinning a few us. */
static void request(const char *name, unsigned seed)
{
	USDTPROF_ENTER(name);
	for (int i = 0; i < 3; i++) {
		const char *leaf = leaves[(seed >> (2 * i)) & 3];
		USDTPROF_ENTER(leaf);
		spin_us(5);
		USDTPROF_EXIT(leaf);
	}
	USDTPROF_EXIT(name);
}

static int child(unsigned n)
{
	prctl(PR_SET_NAME, workers[n % 8]);
	/* Function names that exist only in this process: a heap copy is another address. */
	char *own = malloc(32);
	snprintf(own, 32, "job%u", n % 16);
	USDTPROF_ENTER("child_main");
	for (unsigned i = 0; i < 8; i++)
		request(i % 2 ? own : "request", n + i);
	USDTPROF_EXIT("child_main");
	usleep((n * 7919u) % 40 * 1000);
	free(own);
	return 0;
}

static void *thread_main(void *arg)
{
	char name[16];
	unsigned n = (unsigned)(unsigned long)arg;
	snprintf(name, sizeof name, "t%u", n);
	pthread_setname_np(pthread_self(), name);
	USDTPROF_ENTER("thread_main");
	for (unsigned i = 0; i < 4; i++)
		request("thread_request", n + i);
	USDTPROF_EXIT("thread_main");
	return NULL;
}

static volatile sig_atomic_t stop;
static void on_stop(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "--child") == 0)
		return child((unsigned)atoi(argv[2]));
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	double child_rate = argc > 2 ? atof(argv[2]) : 20, thread_rate = argc > 3 ? atof(argv[3]) : 50;
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	long long start = now_ns();
	unsigned long children = 0, threads = 0;
	USDTPROF_ENTER("main_loop");
	while (!stop && (seconds <= 0 || now_ns() - start < (long long)(seconds * 1e9))) {
		double elapsed = (now_ns() - start) / 1e9;
		USDTPROF_ENTER("tick");
		spin_us(20);
		USDTPROF_EXIT("tick");
		for (; children < elapsed * child_rate; children++) {
			pid_t pid = fork();
			if (pid == 0) {
				if (children % 8 == 7) {
					char n[24];
					snprintf(n, sizeof n, "%lu", children);
					execl("/proc/self/exe", argv[0], "--child", n, (char *)NULL);
					_exit(127);
				}
				_exit(child((unsigned)children));
			}
		}
		for (; threads < elapsed * thread_rate; threads++) {
			pthread_t t;
			if (pthread_create(&t, NULL, thread_main, (void *)threads) == 0)
				pthread_detach(t);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(10000);
	}
	USDTPROF_EXIT("main_loop");
	while (wait(NULL) > 0)
		;
	printf("children %lu threads %lu\n", children, threads);
	return 0;
}
