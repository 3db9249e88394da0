/* SPDX-License-Identifier: GPL-2.0 */
/* Spans (record --span): each process's stats (their bucket: bits.bpf.h). */
#ifndef USDTPROF_SPANS_BPF_H
#define USDTPROF_SPANS_BPF_H

#include "maps.bpf.h"
#include "bits.bpf.h"

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
