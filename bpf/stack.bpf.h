/* SPDX-License-Identifier: GPL-2.0 */
/* The shadow stack's pops: a frame charged and recorded, several at once
 * (exits that missed theirs, open frames at the stop), a cache flushed. */
#ifndef USDTPROF_STACK_BPF_H
#define USDTPROF_STACK_BPF_H

#include "maps.bpf.h"
#include "paths.bpf.h"

/* Pops frame d-1 of a stack d deep at time `now`: charges it, records it,
 * resumes its parent. The caller owns st->depth. Open frames (flush) go
 * straight to the map. */
static __always_inline void pop_frame(struct usdtprof_thread_stack *st, __u32 d, __u64 now,
				      __u64 open, bool timed)
{
	struct usdtprof_frame *f, *parent = 0;
	__u64 self, total, end, func;

	if (d == 0 || d > USDTPROF_MAX_DEPTH)
		return;
	f = &st->frames[(d - 1) & FRAME_MASK];
	if (d > 1)
		parent = &st->frames[(d - 2) & FRAME_MASK];
	/* A flush at close_ns never comes before a frame's last resume (hits
	 * after the close charge nothing); should it, the frame ends at that
	 * resume, so its total still covers its self time and its children's. */
	end = now > f->resume ? now : f->resume;
	self = f->self + (end - f->resume);
	total = end - f->start;
	if (parent)
		parent->resume = end;
	else
		st->idle_since = end;
	/* Inside an [other] frame, the frame's time is already within its
	 * caller's inclusive time. */
	func = f->coarse ? USDTPROF_FUNC_OTHER : f->func;
	if (f->coarse == 2)
		total = 0;
	if (open) {
		__u32 zero = 0;
		struct usdtprof_path_slot *t = bpf_map_lookup_elem(&scratch_slot, &zero);

		if (!t)
			return;
		t->path = f->path;
		t->parent = f->parent;
		t->func = func;
		t->calls = 1;
		t->self_ns = self;
		t->total_ns = total;
		t->self_offcpu_ns = f->offcpu;
		t->probe_ns = f->probe;
		t->slot_ref = f->coarse ? 0 : f->slot_ref;
		add_to_map(t, 0, st->tgid, 1);
		return;
	}
	/* A duration only from the frame's own exit: frames popped without
	 * theirs ended at some unknown time before now. */
	add_to_cache(st, f->path, f->parent, func, f->coarse ? 0 : f->slot_ref, self, total, f->offcpu, f->probe,
		     timed && f->coarse != 2);
}

struct pop_ctx {
	struct usdtprof_thread_stack *st;
	__u64 now;
	__u32 depth;
	__u32 open;
};

static __always_inline void count_pair_mismatch(__u32 pair)
{
	__u64 one = 1, *n;

	if (!pair)
		return;
	n = bpf_map_lookup_elem(&pair_mismatches, &pair);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&pair_mismatches, &pair, &one, BPF_NOEXIST);
}

static long pop_one(__u32 i, void *data)
{
	struct pop_ctx *c = data;
	__u32 d = c->depth - i;

	/* Popped without its exit (open: still running at the stop). */
	if (!c->open && d > 0 && d <= USDTPROF_MAX_DEPTH)
		count_pair_mismatch((__u32)c->st->frames[(d - 1) & FRAME_MASK].pair);

	pop_frame(c->st, c->depth - i, c->now, c->open, false);
	return 0;
}

/* Pops the top n frames of a stack d deep. */
static __always_inline void pop_frames(struct usdtprof_thread_stack *st, __u32 d, __u32 n,
				       __u64 now, __u32 open)
{
	struct pop_ctx c = { .st = st, .depth = d, .now = now, .open = open };

	bpf_loop(n, pop_one, &c, 0);
}

static long flush_slot(__u32 i, void *data)
{
	struct usdtprof_thread_stack *st = ((struct pop_ctx *)data)->st;
	struct usdtprof_path_slot *slot = &st->cache[i & (USDTPROF_PATH_CACHE - 1)];

	if (slot->calls)
		add_to_map(slot, &st->dist[i & (USDTPROF_PATH_CACHE - 1)], st->tgid, 0);
	slot->path = 0;
	slot->calls = 0;
	return 0;
}

#endif /* USDTPROF_STACK_BPF_H */
