/* SPDX-License-Identifier: GPL-2.0 */
/* Spans (record --span): their histogram bucket and each process's stats. */
#ifndef USDTPROF_SPANS_BPF_H
#define USDTPROF_SPANS_BPF_H

#include "maps.bpf.h"
#include "bits.bpf.h"

/* Four buckets per power of two: the highest set bit and the two below it. */
static __always_inline __u32 span_bucket(__u64 ns)
{
	__u32 m;

	if (ns < 4)
		return (__u32)ns;
	m = highest_set_bit(ns);
	return ((m << 2) | (__u32)((ns >> (m - 2)) & 3)) & (USDTPROF_SPAN_BUCKETS - 1);
}

static __always_inline struct usdtprof_span_stats *span_stats_of(struct usdtprof_span_key *key)
{
	struct usdtprof_span_stats *s = bpf_map_lookup_elem(&span_stats, key);
	__u32 zero = 0;
	void *blank;

	if (s)
		return s;
	blank = bpf_map_lookup_elem(&span_zero, &zero);
	if (!blank)
		return 0;
	bpf_map_update_elem(&span_stats, key, blank, BPF_NOEXIST);
	return bpf_map_lookup_elem(&span_stats, key);
}

#endif /* USDTPROF_SPANS_BPF_H */
