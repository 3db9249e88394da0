/* SPDX-License-Identifier: GPL-2.0 */
/* The engine's hashes. FNV-1a, 64 bits: of a string's content (content_hash)
 * and of a query's shape (sql.bpf.h). */
#ifndef USDTPROF_HASH_BPF_H
#define USDTPROF_HASH_BPF_H

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* A call path's id from its parent's and its function's (a 64-bit mix). */
static __always_inline __u64 path_hash(__u64 parent, __u64 func)
{
	__u64 h = parent ^ (func * 0x9E3779B97F4A7C15ULL);

	h ^= h >> 32;
	h *= 0xD6E8FEB86659FD93ULL;
	h ^= h >> 32;
	return h;
}

#endif
