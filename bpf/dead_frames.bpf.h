/* SPDX-License-Identifier: GPL-2.0 */
/* Frames left without their exit (longjmp, exceptions), proved gone by a
 * later entry's stack pointer, popped there. */
#ifndef USDTPROF_DEAD_FRAMES_BPF_H
#define USDTPROF_DEAD_FRAMES_BPF_H

#include "maps.bpf.h"
#include "args.bpf.h"
#include "stack.bpf.h"

/* NESTS_SITE: a frame entered at site S with stack pointer P is proved gone
 * by a later entry at the same site S whose stack pointer lies above P (the
 * code at S runs in a frame above the one that held the frame: that one has
 * returned, even when S is in an out-of-line helper such as
 * usdtprof::Scope's constructor), or at P with the same function (the same
 * code entered again from the same frame: not a recursion, which lies
 * below). Other sites prove nothing: a site in an out-of-line helper records
 * a stack pointer below the frame it times, which a callee of that frame can
 * lie above.
 *
 * NESTS_CALLER (HotSpot): only an entry of the same function from the same
 * code at the same stack pointer proves a frame gone (a call from the same
 * frame again). A higher stack pointer proves nothing: a JVM moves live
 * frames (on-stack replacement swaps an interpreted frame for a smaller
 * compiled one, whose callees lie above the old frame's entry), and C1
 * inlines a callee, its probe called from the caller's frame at the
 * caller's stack pointer (a recursion inlined once included), from other
 * code. */
struct dead_ctx {
	struct usdtprof_thread_stack *st;
	__u64 sp, site, func;
	__u32 depth, dead, caller;
};

static long find_dead(__u32 i, void *data)
{
	struct dead_ctx *c = data;
	struct usdtprof_frame *f;

	if (i >= c->depth)
		return 1;
	f = &c->st->frames[(c->depth - 1 - i) & FRAME_MASK];
	if (!f->sp || f->site != c->site)
		return 0;
	if (c->sp == f->sp ? f->func == c->func : c->sp > f->sp && !c->caller)
		c->dead = i + 1; /* the outermost proof wins: frames above it are its callees */
	return 0;
}

/* Before an entry of a probe that nests on the native stack: frames left
 * without their exit (longjmp, an exception, an early return) that the
 * entry proves gone are popped now, charged up to now, with one
 * exit_mismatch for the repair. Returns the depth left. The search runs only
 * when the entry's stack pointer is not below the top frame's (a callee's
 * always is). */
static __always_inline __u32 pop_dead_frames(struct usdtprof_thread_stack *st, __u32 d, __u64 sp, __u64 site,
					     __u32 nests, __u64 func, __u64 now)
{
	struct dead_ctx c = { .st = st, .sp = sp, .site = site, .func = func, .depth = d,
			      .caller = nests == USDTPROF_NESTS_CALLER };
	struct usdtprof_frame *top;

	if (d == 0 || d > USDTPROF_MAX_DEPTH || st->overflow)
		return d;
	top = &st->frames[(d - 1) & FRAME_MASK];
	if (!top->sp || sp < top->sp)
		return d;
	bpf_loop(USDTPROF_MAX_DEPTH, find_dead, &c, 0);
	if (c.dead == 0 || c.dead > d)
		return d;
	count_anomaly(USDTPROF_ANOM_EXIT_MISMATCH, 1);
	pop_frames(st, d, c.dead, now, 0);
	st->depth = d - c.dead;
	return d - c.dead;
}

/* What tells an entry's code apart (see find_dead): the probe's address, or
 * for NESTS_CALLER the return address of the runtime's helper, read through
 * its frame pointer (with bit 63 set); 0 if that cannot be read. */
static __always_inline __u64 entry_site(struct pt_regs *ctx, __u32 nests)
{
	__u64 bp, sp, ret = 0;

	if (nests != USDTPROF_NESTS_CALLER)
		return CTX_LOAD(ip);
	bp = CTX_LOAD(bp);
	sp = CTX_LOAD(sp);
	/* A frame pointer points into the helper's own (small) frame. */
	if (bp < sp || bp - sp > 4096 || bpf_probe_read_user(&ret, sizeof(ret), (void *)(bp + 8)) || !ret)
		return 0;
	return ret | (1ULL << 63);
}

#endif /* USDTPROF_DEAD_FRAMES_BPF_H */
