/* SPDX-License-Identifier: GPL-2.0 */
/* Off-CPU time: a switched-out thread's time goes to its innermost frame;
 * switches back in that the kernel does not report are placed by arrival. */
#ifndef USDTPROF_OFFCPU_BPF_H
#define USDTPROF_OFFCPU_BPF_H

#include "maps.bpf.h"

/* Off-CPU accounting. The sched_switch hook sees a thread leave and come
 * back; the kernel does not report every switch, though (seen on kernel
 * 6.18 under PVM: the switches away from some host-agent threads never
 * reach the tracepoint), so a thread can come back unseen. The scheduler
 * still stamps its arrival (sched_info.last_arrival, on the runqueue's
 * clock), which places the unseen return exactly. */

/* Per CPU: bpf_ktime_get_ns() minus the runqueue clock, as last measured in
 * the switch hook (where the runqueue clock has just been updated). The two
 * clocks run at the same rate, so an older offset still converts. */
#define USDTPROF_MAX_CPUS 1024 /* a power of two */
__s64 rq_clock_offset[USDTPROF_MAX_CPUS];
/* Switches back in that the kernel did not report, placed by arrival time. */
__u64 missed_switch_ins;

static __always_inline void note_rq_clock(struct task_struct *t, __u32 cpu, __u64 now)
{
	struct rq *rq = t->se.cfs_rq ? t->se.cfs_rq->rq : 0;
	__u64 clock = rq ? rq->clock : 0;

	if (clock)
		rq_clock_offset[cpu & (USDTPROF_MAX_CPUS - 1)] = (__s64)(now - clock);
}

/* Time away ends: charged to the innermost frame, up to the close (stop or
 * window) like self time, so a frame the iterator charges later never has
 * more off-CPU than self time. */
static __always_inline void end_offcpu(struct usdtprof_thread_stack *st, __u64 at)
{
	__u64 close = READ_ONCE(close_ns);

	if (close && at > close)
		at = close;
	if (at > st->switched_out) {
		if (st->depth > 0 && st->depth <= USDTPROF_MAX_DEPTH)
			st->frames[(st->depth - 1) & FRAME_MASK].offcpu += at - st->switched_out;
		else
			st->unknown_offcpu += at - st->switched_out;
	}
	st->switched_out = 0;
}

/* A thread marked out that is running (it hits a probe, or leaves its CPU
 * again) came back unseen, on this CPU, at its last arrival. With no
 * offset measured on this CPU yet, its time away is not charged. */
static __always_inline void place_missed_switch_in(struct usdtprof_thread_stack *st, struct task_struct *t,
						   __u32 cpu, __u64 now)
{
	__s64 offset = rq_clock_offset[cpu & (USDTPROF_MAX_CPUS - 1)];
	__u64 arrival = t->sched_info.last_arrival + offset;

	__sync_fetch_and_add(&missed_switch_ins, 1);
	if (!offset || arrival <= st->switched_out)
		arrival = st->switched_out;
	end_offcpu(st, arrival < now ? arrival : now);
}

#endif /* USDTPROF_OFFCPU_BPF_H */
