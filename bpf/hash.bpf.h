/* SPDX-License-Identifier: GPL-2.0 */
/* The engine's hashes. FNV-1a, 64 bits: of a string's content (content_hash)
 * and of a query's shape (sql.bpf.h). */
#ifndef USDTPROF_HASH_BPF_H
#define USDTPROF_HASH_BPF_H

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

#endif
