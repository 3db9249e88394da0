/* SPDX-License-Identifier: GPL-2.0 */
/* The histograms' buckets: a path's durations (log2) and spans' (four per
 * power of two). Plain C on both sides: the unit tests check them against
 * userspace's reading of the buckets (tests/unit/profile/test_distribution.cpp). */
#ifndef USDTPROF_BITS_BPF_H
#define USDTPROF_BITS_BPF_H

#include "usdtprof/bpf_shared.h"

/* The index of v's highest set bit (0 for v <= 1): floor(log2(v)). BPF has
 * no instruction for it; a binary search, branches only. */
static __always_inline __u32 highest_set_bit(__u64 v)
{
	__u32 m = 0;

	if (v >> 32) { m += 32; v >>= 32; }
	if (v >> 16) { m += 16; v >>= 16; }
	if (v >> 8) { m += 8; v >>= 8; }
	if (v >> 4) { m += 4; v >>= 4; }
	if (v >> 2) { m += 2; v >>= 2; }
	if (v >> 1) { m += 1; }
	return m;
}

/* The histogram bucket of a path's duration (USDTPROF_DIST_BUCKETS): its
 * highest set bit, the last bucket holding the rest. The engine calls it
 * through a global function (durations.bpf.h): inlined, its branches would
 * multiply the exit program's verifier states. */
static __always_inline __u32 dist_bucket(__u64 ns)
{
	__u32 m = highest_set_bit(ns);

	return m < USDTPROF_DIST_BUCKETS ? m : USDTPROF_DIST_BUCKETS - 1;
}

/* A span's bucket (USDTPROF_SPAN_BUCKETS), four per power of two: the
 * highest set bit and the two below it. */
static __always_inline __u32 span_bucket(__u64 ns)
{
	__u32 m;

	if (ns < 4)
		return (__u32)ns;
	m = highest_set_bit(ns);
	return ((m << 2) | (__u32)((ns >> (m - 2)) & 3)) & (USDTPROF_SPAN_BUCKETS - 1);
}

#endif /* USDTPROF_BITS_BPF_H */
