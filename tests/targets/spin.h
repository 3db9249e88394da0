/* Shared by the test targets: busy-spin for an exact wall-clock time, fixed
 * work of a length set once, and an optional hold until SIGUSR1 so a
 * profiler can attach first. */
#ifndef TARGETS_SPIN_H
#define TARGETS_SPIN_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline long long clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline long long now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* Fixed work: a number of loop iterations, the same probed or not (where a
 * spin to a deadline would absorb the probes' cost). */
static __attribute__((noinline, unused)) void fixed_work(long n)
{
	for (long i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
}

/* The loop length whose work takes work_ns: the fastest of several tries. */
static inline long fixed_work_iterations(long work_ns)
{
	long n = 100000;
	long long best = -1;
	for (int t = 0; t < 20; t++) {
		long long start = now_ns();
		fixed_work(n);
		long long took = now_ns() - start;
		if (best < 0 || took < best)
			best = took;
	}
	return (long)((double)n * (double)work_ns / (double)(best > 0 ? best : 1));
}

/* The time the spins asked for, and when the first one started: a loaded
 * machine stretches a run beyond its spins (a spin preempted at its deadline
 * ends late, a thread waits for a CPU), and print_slack() reports by how much,
 * so tests can tell usdtprof's error from the machine's. */
static long long spin_requested_ns, spin_first_ns;

/* Where the timed work starts (else at the first spin): a preemption between
 * here and the first spin is then part of the slack too. */
static inline void mark_work_start(void)
{
	spin_first_ns = now_ns();
}

static inline void spin_us(long long us)
{
	long long start = now_ns(), end = start + us * 1000;
	if (!spin_first_ns)
		spin_first_ns = start;
	spin_requested_ns += us * 1000;
	while (now_ns() < end)
		;
}

/* "measured slack NS": wall time since the first spin beyond what the spins
 * asked for. For programs whose spins run one after another. */
static inline void print_slack(void)
{
	long long slack = now_ns() - spin_first_ns - spin_requested_ns;
	printf("measured slack %lld\n", slack > 0 ? slack : 0);
	fflush(stdout);
}

static volatile sig_atomic_t go_signal;
static void on_go(int sig) { (void)sig; go_signal = 1; }

/* Catches SIGUSR1 (go_signal) and blocks it until a sigsuspend(old): old is
 * the mask before, with SIGUSR1 let through. */
static inline void block_go_signal(sigset_t *old)
{
	sigset_t mask;
	signal(SIGUSR1, on_go);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, old);
	sigdelset(old, SIGUSR1);
}

/* With --wait as argv[1]: print "ready <pid>", wait for SIGUSR1, then print
 * "go <ns>", when the work starts on the clock tests read (CLOCK_MONOTONIC).
 * Returns the index of the first remaining argument. */
static inline int hold_if_asked(int argc, char **argv)
{
	sigset_t old;
	if (argc < 2 || strcmp(argv[1], "--wait") != 0)
		return 1;
	block_go_signal(&old);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!go_signal)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("go %lld\n", now_ns());
	fflush(stdout);
	return 2;
}

#endif
