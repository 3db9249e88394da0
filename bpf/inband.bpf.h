/* SPDX-License-Identifier: GPL-2.0 */
/* Probe time measured in band: our header's probes pass the program's own
 * clock read right before each hit, and the reads before and after the
 * thread's previous probe (include/usdtprof/usdtprof.h). Between two hits of
 * a thread one frame runs; what the earlier hit took after this program's
 * clock read (its `now`) and the later one took before it were charged to
 * that frame's self time: both are known exactly at the later hit, and kept
 * beside the self time (probe), which compensation takes out whole. A hit
 * whose previous probe this program did not see (the first after the
 * attach, one after a paused window or another kind of probe) measures
 * nothing: its gap is left to the calibration.
 * The program's own code in the gap holds the tail of one clock read (after
 * its sample) and the head of another (before it): one read's cost, which
 * moves with the host's speed as the work does. Our header measures it with
 * a second read after each probe, the same two halves back to back, and
 * passes it with the next hit: the gap takes it out too. */
#ifndef USDTPROF_INBAND_BPF_H
#define USDTPROF_INBAND_BPF_H

#include "maps.bpf.h"
#include "args.bpf.h"

/* More than this between two reads around one hit is a preemption inside
 * it, whose time off the CPU the context-switch hook has already counted. */
#define USDTPROF_INBAND_MAX_NS 1000000
/* A read's own cost beyond this was interrupted: the frame keeps it. */
#define USDTPROF_READ_MAX_NS 2000

/* The hit's clock (its `now`), and its gap's probe time charged to the
 * frame that ran in it. Out of line, where the clock was read: the values
 * the caller keeps across it are those it kept across the clock's helper,
 * so no more of the exit program's 512-byte stack is spent. */
static __noinline __u64 clock_at_hit(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
				     struct usdtprof_thread_stack *st)
{
	__u64 before, last_before, last_after, read, took, now = bpf_ktime_get_ns();
	__u32 d = st->depth;

	/* A hit the caller will drop (a window closing: paused) charges no
	 * frame, whose time ends at the close. */
	if (!spec->inband || READ_ONCE(paused)) {
		st->clock_before = 0;
		return now;
	}
	before = read_arg_slow(ctx, &spec->clock_args[0]);
	last_before = read_arg_slow(ctx, &spec->clock_args[1]);
	last_after = read_arg_slow(ctx, &spec->clock_args[2]);
	if (st->clock_before && last_before == st->clock_before && st->clock_at <= last_after &&
	    last_after <= before && before <= now && d > 0 && d <= USDTPROF_MAX_DEPTH) {
		took = (last_after - st->clock_at) + (now - before);
		if (spec->inband >= USDTPROF_INBAND) {
			read = read_arg_slow(ctx, &spec->clock_args[3]);
			if (read < USDTPROF_READ_MAX_NS)
				took += read;
		}
		if (took < USDTPROF_INBAND_MAX_NS)
			st->frames[(d - 1) & FRAME_MASK].probe += took;
	}
	st->clock_before = before;
	st->clock_at = now;
	return now;
}

#endif /* USDTPROF_INBAND_BPF_H */
