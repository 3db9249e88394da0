/* SPDX-License-Identifier: GPL-2.0 */
/* Frames running when the probes were attached: their exits come without an
 * entry, and are kept in order as the thread's attach chain. */
#ifndef USDTPROF_ATTACH_CHAIN_BPF_H
#define USDTPROF_ATTACH_CHAIN_BPF_H

#include "maps.bpf.h"
#include "hash.bpf.h"
#include "paths.bpf.h"

struct chain_ctx {
	struct usdtprof_thread_stack *st;
	__u64 parent, total;
	__u32 n;
};

static long record_chain_frame(__u32 i, void *data)
{
	struct chain_ctx *c = data;
	struct usdtprof_attach_frame *f;
	struct usdtprof_path_slot *slot;
	__u32 zero = 0;

	if (i >= c->n)
		return 1;
	slot = bpf_map_lookup_elem(&scratch_slot, &zero);
	if (!slot)
		return 1;
	f = &c->st->attach_chain[(c->n - 1 - i) & (USDTPROF_ATTACH_CHAIN - 1)];
	slot->path = path_hash(c->parent, f->func);
	slot->parent = c->parent;
	slot->func = f->func;
	slot->calls = 1;
	slot->self_ns = f->self;
	slot->total_ns = c->total;
	slot->self_offcpu_ns = f->offcpu;
	slot->probe_ns = 0;
	slot->slot_ref = 0;
	add_to_map(slot, 0, c->st->tgid, 0);
	c->parent = slot->path;
	c->total -= f->self < c->total ? f->self : c->total;
	return 0;
}

/* Records the thread's attach chain under its [running at attach] root,
 * outermost first, each frame's total its own self time plus its callee's
 * total: the tree adds up, and a thread's recorded time never exceeds the
 * time it was recorded. */
static __always_inline void record_attach_chain(struct usdtprof_thread_stack *st)
{
	struct chain_ctx c = { .st = st, .n = st->chain_len };
	__u64 top = thread_root(st);
	struct usdtprof_path_slot *root;
	__u32 i, zero = 0;

	if (c.n == 0 || c.n > USDTPROF_ATTACH_CHAIN)
		return;
	root = bpf_map_lookup_elem(&scratch_slot, &zero);
	if (!root)
		return;
	__builtin_memset(root, 0, sizeof(*root));
	root->path = path_hash(top ? top : st->tgid, USDTPROF_FUNC_RUNNING_AT_ATTACH);
	root->parent = top;
	root->func = USDTPROF_FUNC_RUNNING_AT_ATTACH;
	for (i = 0; i < USDTPROF_ATTACH_CHAIN && i < c.n; i++)
		root->total_ns += st->attach_chain[i].self;
	c.total = root->total_ns;
	c.parent = root->path;
	add_to_map(root, 0, st->tgid, 0);
	bpf_loop(USDTPROF_ATTACH_CHAIN, record_chain_frame, &c, 0);
	st->chain_len = 0;
}

/* The exit of a function entered before the probes were attached: it has
 * been the innermost probed frame whenever the stack was empty since the
 * previous such exit, whose caller it is. Kept in the thread's attach chain
 * until the stack is flushed (a full chain is recorded first and restarts). */
static __always_inline void exit_running_at_attach(struct usdtprof_thread_stack *st, __u64 func,
						   __u64 now)
{
	struct usdtprof_attach_frame *c;
	__u32 n = st->chain_len;

	if (n >= USDTPROF_ATTACH_CHAIN) {
		record_attach_chain(st);
		n = 0;
	}
	c = &st->attach_chain[n & (USDTPROF_ATTACH_CHAIN - 1)];
	c->func = func;
	c->self = st->unknown_self + (now - st->idle_since);
	c->offcpu = st->unknown_offcpu;
	st->chain_len = n + 1;
	st->unknown_self = 0;
	st->unknown_offcpu = 0;
	st->idle_since = now;
}

#endif /* USDTPROF_ATTACH_CHAIN_BPF_H */
