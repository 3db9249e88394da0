/* For the overhead compensation's acceptance: `leaf` does WORK_NS of fixed
 * work, `mid` does WORK_NS of its own (half before, half after) around 10
 * `leaf` calls. Each batch first times unprobed copies of the same code (the
 * truth), then runs the probed ones under a root of its own, `batchNN`, so
 * the profile has one `batchNN;mid;leaf` path per batch to compare with.
 *
 *   overhead WORK_NS BATCHES
 *
 * prints "iters N ..." (the work loop's length, fixed before any batch) and per
 * batch "truth BATCH LEAF_NS MID_SELF_NS" (means per call over the batch).
 *
 * MID_SELF_NS is timed as it is, on unprobed copies of mid whose children
 * return at once (the calls and returns stay mid's, as a profiler charges
 * them): taken as mid's time less ten leaves' it was the difference of two
 * ~11x larger times, each moving by a few percent from chunk to chunk, and
 * moved by 10-30% from one batch to the next (docs/benchmarks.md). It is
 * timed in as many calls a chunk as the probed mid makes, right after the
 * leaves' truth as mid's own work runs after its leaves: timed in ten times
 * as many calls, back to back, it came out 2-3% above at 10 us, without any
 * tracer as well (the program's own clock reads in mid said so). */
#include <stdio.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#ifdef OVERHEAD_OLDER_HEADER
/* The probes of usdtprof.h before 2026-12-05 (overhead_older_header.c): three
 * clock reads, the read after once, so that usdtprof keeps measuring
 * binaries built with that header. */
#undef USDTPROF_PROBE_
#define USDTPROF_PROBE_(probe, type, arg)                                                       \
	do {                                                                                    \
		if (__builtin_expect(usdtprof_##probe##_semaphore, 0)) {                        \
			type usdtprof_arg_ = (type)(arg);                                       \
			usdtprof_u64_ usdtprof_before_ = usdtprof_clock_();                     \
			STAP_PROBE4(usdtprof, probe, usdtprof_arg_, usdtprof_before_,           \
				    usdtprof_clock_reads_.before, usdtprof_clock_reads_.after); \
			usdtprof_clock_reads_.before = usdtprof_before_;                        \
			usdtprof_clock_reads_.after = usdtprof_clock_();                        \
		}                                                                               \
	} while (0)
#endif

#define CHILDREN 10
#define MAX_BATCHES 64

static long iters;

static __attribute__((noinline)) void leaf_plain(void)
{
	fixed_work(iters);
}

/* A child that returns at once, for mid's own time. */
static __attribute__((noinline)) void stub(void)
{
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void mid_own_plain(void)
{
	fixed_work(iters / 2);
	for (int i = 0; i < CHILDREN; i++)
		stub();
	fixed_work(iters - iters / 2);
}

static __attribute__((noinline)) void leaf(void)
{
	USDTPROF_ENTER("leaf");
	fixed_work(iters);
	USDTPROF_EXIT("leaf");
}

static __attribute__((noinline)) void mid(void)
{
	USDTPROF_ENTER("mid");
	fixed_work(iters / 2);
	for (int i = 0; i < CHILDREN; i++)
		leaf();
	fixed_work(iters - iters / 2);
	USDTPROF_EXIT("mid");
}

/* Batch roots: literals, so usdtprof reads their names from the file too. */
#define B10(t) "batch" #t "0", "batch" #t "1", "batch" #t "2", "batch" #t "3", "batch" #t "4", \
	"batch" #t "5", "batch" #t "6", "batch" #t "7", "batch" #t "8", "batch" #t "9"
static const char *const batch_names[MAX_BATCHES] = {B10(0), B10(1), B10(2), B10(3), B10(4), B10(5),
	"batch60", "batch61", "batch62", "batch63"};

static long long thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* What reading a clock twice costs, to take out of each chunk: the least of
 * many tries. */
static long long clock_cost(clockid_t clock)
{
	long long best = -1;
	for (int i = 0; i < 100; i++) {
		long long a = clock_ns(clock), b = clock_ns(clock);
		if (best < 0 || b - a < best)
			best = b - a;
	}
	return best;
}

static long long mono_cost, cpu_cost;

/* The time reps calls of fn take, as usdtprof's on-CPU self time counts it:
 * by the monotonic clock (read in the vDSO, a few ns that vary by a few ns),
 * unless the thread was switched out in between, which the thread's CPU
 * clock tells (it then runs behind the monotonic one) and then gives. That
 * clock alone is a system call here whose cost varies by hundreds of ns from
 * read to read: several percent of a 10 us window. */
static long long on_cpu_time_of(void (*fn)(void), int reps)
{
	long long cpu_start = thread_cpu_ns(), start = now_ns();
	for (int i = 0; i < reps; i++)
		fn();
	long long end = now_ns(), cpu_end = thread_cpu_ns();
	long long took = end - start - mono_cost;
	if (cpu_end - cpu_start < end - start)
		took = cpu_end - cpu_start - cpu_cost - 2 * mono_cost;
	return took > 0 ? took : 0;
}

int main(int argc, char **argv)
{
	long work_ns = argc > 1 ? atol(argv[1]) : 1000;
	int batches = argc > 2 ? atoi(argv[2]) : 20;
	if (work_ns <= 0 || batches <= 0 || batches > MAX_BATCHES) {
		fprintf(stderr, "usage: overhead WORK_NS BATCHES (1..%d)\n", MAX_BATCHES);
		return 2;
	}
	iters = fixed_work_iterations(work_ns);
	mono_cost = clock_cost(CLOCK_MONOTONIC);
	cpu_cost = clock_cost(CLOCK_THREAD_CPUTIME_ID);
	/* Chunks of ~100 us of mid calls, plain and probed in turn, so that both
	 * see the same machine; ~30 chunks a batch. */
	int chunk = (int)(100000 / (work_ns * (CHILDREN + 1)));
	if (chunk < 1)
		chunk = 1;
	int chunks = 30;
	printf("iters %ld chunk %d chunks %d\n", iters, chunk, chunks);
	on_cpu_time_of(mid_own_plain, chunk); /* warm-up */
	on_cpu_time_of(mid, chunk);
	for (int b = 0; b < batches; b++) {
		long long leaf_ns = 0, mid_ns = 0;
		USDTPROF_ENTER(batch_names[b]);
		for (int c = 0; c < chunks; c++) {
			/* The leaves in windows as long as the probed mid's
			 * stretches between two hits (a leaf's work at 10 us,
			 * ~10 us of leaves at 1 us): a busy host's own work
			 * interrupts a long window, and waits for a switch to
			 * the host (a probe's trap, the CPU clock's system call)
			 * in short ones. Timed in one window of ten times that,
			 * the truth was 2-5% higher than the probed leaves' own
			 * clock in runs where the host was busy (docs/benchmarks.md). */
			for (int k = 0; k < CHILDREN; k++)
				leaf_ns += on_cpu_time_of(leaf_plain, chunk);
			mid_ns += on_cpu_time_of(mid_own_plain, chunk);
			for (int i = 0; i < chunk; i++)
				mid();
		}
		USDTPROF_EXIT(batch_names[b]);
		double leaf_mean = (double)leaf_ns / (chunks * chunk * CHILDREN);
		double mid_mean = (double)mid_ns / (chunks * chunk);
		printf("truth %d %.1f %.1f\n", b, leaf_mean, mid_mean);
	}
	return 0;
}
