/* SPDX-License-Identifier: GPL-2.0 */
/* Off-CPU time: a switched-out thread's time goes to its innermost frame;
 * switches back in that the kernel does not report are placed by arrival. */
#ifndef USDTPROF_OFFCPU_BPF_H
#define USDTPROF_OFFCPU_BPF_H

#include <bpf/bpf_core_read.h>
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

/* Time stolen by the hypervisor. A KVM guest's vCPU can be descheduled by
 * the host while a thread runs on it: the guest kernel does not count that
 * time as the thread's CPU time (CONFIG_PARAVIRT_TIME_ACCOUNTING; it is
 * what /proc/stat calls steal), and neither does usdtprof: it is off-CPU
 * time of the innermost frame. The host keeps the vCPU's stolen total in
 * the guest's per-CPU kvm_steal_time record, current at every return to
 * the guest. Per-CPU variables keep their distance in every CPU's copy, so
 * the record is found from the CPU's runqueue; userspace sets that distance
 * from the kernel's BTF (0: not a KVM guest kernel, nothing is read). */
const volatile __s64 steal_time_from_rq = 0;

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline __u64 rq_of(struct task_struct *t)
{
	return t->se.cfs_rq ? (__u64)t->se.cfs_rq->rq : 0;
}

/* The vCPU's stolen nanoseconds so far (a load: the cast costs nothing). */
static __always_inline __u64 steal_clock(__u64 rq)
{
	struct kvm_steal_time *kst;

	if (!rq)
		return 0;
	kst = bpf_rdonly_cast((void *)(rq + steal_time_from_rq), bpf_core_type_id_kernel(struct kvm_steal_time));
	return kst->steal;
}

/* Off-CPU time of the thread's innermost frame (or, with an empty stack, of
 * a function entered before attach). */
static __always_inline void charge_offcpu(struct usdtprof_thread_stack *st, __u64 ns)
{
	if (st->depth > 0 && st->depth <= USDTPROF_MAX_DEPTH)
		st->frames[(st->depth - 1) & FRAME_MASK].offcpu += ns;
	else
		st->unknown_offcpu += ns;
}

/* The time stolen since the thread's last mark on this CPU is off-CPU time;
 * a mark on another CPU (or none) is another clock: only a new mark. */
static __always_inline void charge_steal(struct usdtprof_thread_stack *st, __u64 rq)
{
	__u64 steal = steal_clock(rq);

	if (st->steal_rq == rq && steal > st->steal_mark)
		charge_offcpu(st, steal - st->steal_mark);
	st->steal_mark = steal;
	st->steal_rq = rq;
}

/* The steal clock each CPU's last switch of a profiled thread read, for
 * the check that it reads the record /proc/stat's steal comes from
 * (USDTPROF_DEBUG prints it at the stop; the e2e case "steal clock"). */
__u64 steal_seen[USDTPROF_MAX_CPUS];

/* rq: this CPU's runqueue (rq_of), 0 when unknown. */
static __always_inline void note_rq_clock(__u64 rq, __u32 cpu, __u64 now)
{
	__u64 clock = rq ? ((struct rq *)rq)->clock : 0;

	if (clock)
		rq_clock_offset[cpu & (USDTPROF_MAX_CPUS - 1)] = (__s64)(now - clock);
	if (steal_time_from_rq && rq)
		steal_seen[cpu & (USDTPROF_MAX_CPUS - 1)] = steal_clock(rq);
}

/* Time away ends: charged to the innermost frame, up to the close (stop or
 * window) like self time, so a frame the iterator charges later never has
 * more off-CPU than self time. */
static __always_inline void end_offcpu(struct usdtprof_thread_stack *st, __u64 at)
{
	__u64 close = READ_ONCE(close_ns);

	if (close && at > close)
		at = close;
	if (at > st->switched_out)
		charge_offcpu(st, at - st->switched_out);
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
