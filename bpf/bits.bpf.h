/* SPDX-License-Identifier: GPL-2.0 */
/* Bit arithmetic the histograms share. */
#ifndef USDTPROF_BITS_BPF_H
#define USDTPROF_BITS_BPF_H

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

#endif /* USDTPROF_BITS_BPF_H */
