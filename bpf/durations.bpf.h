/* SPDX-License-Identifier: GPL-2.0 */
/* Durations: a path's min and max and its log2 histogram (the thread's cache
 * counts them, add_to_map adds them to the map). */
#ifndef USDTPROF_DURATIONS_BPF_H
#define USDTPROF_DURATIONS_BPF_H

#include "maps.bpf.h"
#include "bits.bpf.h"

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

/* dist_bucket (bits.bpf.h) as a global function: verified once, apart from
 * its callers, so its branches add no states to the exit program's. Inlined
 * and without branches it measured no faster per hit and took the exit
 * program's verification from 334k to 570k instructions (docs/benchmarks.md). */
__noinline __u32 usdtprof_dist_bucket(__u64 ns)
{
	return dist_bucket(ns);
}

struct dist_ctx {
	struct usdtprof_path_stats *s;
	const struct usdtprof_path_dist *d;
	__u32 first; /* the bucket of callback 0 */
};

static long add_bucket(__u32 i, void *data)
{
	struct dist_ctx *c = data;
	__u16 n;

	i += c->first;
	if (i >= USDTPROF_DIST_BUCKETS)
		return 1;
	n = c->d->buckets[i];
	if (n)
		__sync_fetch_and_add(&c->s->buckets[i], n);
	return 0;
}

/* Adds a slot's histogram to its path's. Only the buckets from its shortest
 * call's to its longest's can hold counts: usually one (a slot holds the
 * calls of one path since it last changed hands), added directly; bpf_loop,
 * whose call and callbacks cost ~70-125 ns per slot over all 40 buckets, runs
 * only for a range. */
static __always_inline void add_buckets(struct usdtprof_path_stats *s, const struct usdtprof_path_dist *d)
{
	/* 64 bits: a spilled 32-bit index loses its bounds in the verifier. */
	__u64 lo = usdtprof_dist_bucket(d->min_ns);
	/* One call (the slot changed hands at each): one bucket, one call of
	 * usdtprof_dist_bucket. */
	__u64 hi = d->max_ns == d->min_ns ? lo : usdtprof_dist_bucket(d->max_ns);

	if (lo >= USDTPROF_DIST_BUCKETS || hi >= USDTPROF_DIST_BUCKETS || lo > hi)
		return;
	if (lo == hi) {
		__u16 n = d->buckets[lo];

		if (n)
			__sync_fetch_and_add(&s->buckets[lo], n);
		return;
	}
	struct dist_ctx c = { .s = s, .d = d, .first = lo };

	bpf_loop(hi - lo + 1, add_bucket, &c, 0);
}

#endif /* USDTPROF_DURATIONS_BPF_H */
