/* For targets whose times the tests compare with usdtprof's (one thread).
 *
 * Busy-spins are wall-clock and end late when the thread is preempted, so the
 * time each spin really took is summed per frame usdtprof should charge it to
 * (spin_into) and printed as "measured NAME NS". Time the thread spends off
 * the CPU outside the spins, around the probes, cannot be attributed that way:
 * off_cpu_outside_spins() gives it, as the tests' tolerance for preemption. */
#ifndef TARGETS_MEASURE_H
#define TARGETS_MEASURE_H

#include "spin.h"

static inline long long thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static long long measure_wall, measure_cpu, measure_spins_off_cpu, measure_spins_wall;

static inline void measure_start(void)
{
	measure_wall = now_ns();
	measure_cpu = thread_cpu_ns();
}

static inline void spin_into(long long *sum, long long us)
{
	long long wall = now_ns(), cpu = thread_cpu_ns();
	spin_us(us);
	wall = now_ns() - wall;
	*sum += wall;
	measure_spins_wall += wall;
	measure_spins_off_cpu += wall - (thread_cpu_ns() - cpu);
}

/* Time off the CPU since measure_start(), outside spin_into(). */
static inline long long off_cpu_outside_spins(void)
{
	long long off = now_ns() - measure_wall - (thread_cpu_ns() - measure_cpu) - measure_spins_off_cpu;
	return off > 0 ? off : 0;
}

/* Wall time since measure_start() outside spin_into(): the probes' own cost,
 * on the CPU (the trap, a thread's or process's first hit) or off it, which
 * usdtprof rightly charges to the frames around them. The tests' tolerance. */
static inline long long wall_outside_spins(void)
{
	return now_ns() - measure_wall - measure_spins_wall;
}

#endif
