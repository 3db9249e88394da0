/* SPDX-License-Identifier: GPL-2.0 */
/* Durations: a path's min and max and its log2 histogram (the thread's cache
 * counts them, add_to_map adds them to the map). */
#ifndef USDTPROF_DURATIONS_BPF_H
#define USDTPROF_DURATIONS_BPF_H

#include "maps.bpf.h"

/* Lowers (or raises) *at to v; a few tries against other threads' updates. */
static __always_inline void span_extreme(__u64 *at, __u64 v, bool lower)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = READ_ONCE(*at);

		if (lower ? old && old <= v : old >= v)
			return;
		if (__sync_val_compare_and_swap(at, old, v) == old)
			return;
	}
}

/* The histogram bucket of a duration (USDTPROF_DIST_BUCKETS): its highest
 * set bit. A global function: verified once, apart from its callers, so its
 * branches add no states to the exit program's. */
__noinline __u32 usdtprof_dist_bucket(__u64 ns)
{
	__u32 m = 0;

	if (ns >> 32) { m += 32; ns >>= 32; }
	if (ns >> 16) { m += 16; ns >>= 16; }
	if (ns >> 8) { m += 8; ns >>= 8; }
	if (ns >> 4) { m += 4; ns >>= 4; }
	if (ns >> 2) { m += 2; ns >>= 2; }
	if (ns >> 1) { m += 1; }
	return m < USDTPROF_DIST_BUCKETS ? m : USDTPROF_DIST_BUCKETS - 1;
}

struct dist_ctx {
	struct usdtprof_path_stats *s;
	const struct usdtprof_path_dist *d;
};

static long add_bucket(__u32 i, void *data)
{
	struct dist_ctx *c = data;
	__u16 n;

	if (i >= USDTPROF_DIST_BUCKETS)
		return 1;
	n = c->d->buckets[i];
	if (n)
		__sync_fetch_and_add(&c->s->buckets[i], n);
	return 0;
}

#endif /* USDTPROF_DURATIONS_BPF_H */
