/* SPDX-License-Identifier: GPL-2.0 */
/* A string's content hash, the identity of names a runtime passes as fresh
 * copies (Ruby's class names, PHP's names, --pair ...:str): FNV-1a of its
 * bytes; a Ruby name of a class without one ("#<Class:0x...>") without its
 * addresses' hex digits. */
#ifndef USDTPROF_CONTENT_BPF_H
#define USDTPROF_CONTENT_BPF_H

#include "hash.bpf.h"

/* Characters a bpf_loop step takes. Each call of the step costs tens of ns
 * on a host whose returns go through a mitigation thunk (this one: SRSO),
 * more than a character's work: 16 a step hash a 42-byte name in ~0.3x the
 * time of one a step (docs/benchmarks.md, "A name's hash, 16 characters a
 * step"). The caller, content_hash, is global: verified once, not once per
 * state of each of its callers. */
#define CONTENT_STEP 16

struct content_ctx {
	const char *text; /* USDTPROF_SQL_MAX bytes, NUL-terminated */
	__u64 hash;
	__u32 anon;  /* leave out the hex digits after each ":0x" */
	__u32 state; /* how much of ":0x" was just seen (3: all) */
};

static __always_inline bool is_hex_digit(__u8 ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

/* The next state of ":0x" seen, after ch (from state). */
static __always_inline __u32 anon_state(__u32 state, __u8 ch)
{
	if (ch == ':')
		return 1;
	if (state == 1 && ch == '0')
		return 2;
	if (state == 2 && ch == 'x')
		return 3;
	return 0;
}

/* One callback for both kinds of text: with two, clang calls bpf_loop once
 * with either, and the verifier no longer inlines the loop (~100 ns more per
 * Ruby hit, measured). */
static long content_step(__u32 i, void *data)
{
	struct content_ctx *c = data;
	__u64 h = c->hash;
	__u32 state = c->state;
	long stop = 0;

#pragma unroll
	for (int j = 0; j < CONTENT_STEP; j++) {
		__u8 ch = c->text[(i * CONTENT_STEP + j) & (USDTPROF_SQL_MAX - 1)];

		if (ch == 0) {
			stop = 1;
			break;
		}
		if (c->anon) {
			if (state == 3 && is_hex_digit(ch))
				continue;
			state = anon_state(state, ch);
		}
		h = (h ^ ch) * FNV_PRIME;
	}
	c->hash = h;
	c->state = state;
	return stop;
}

/* FNV-1a of text, n its length with the NUL (as bpf_probe_read_user_str()
 * counts it, 1 to USDTPROF_SQL_MAX); with anon, of a text starting with '#'
 * without the hex digits after each ":0x". */
static __always_inline __u64 content_text_hash(const char *text, long n, bool anon)
{
	struct content_ctx c = { .text = text, .hash = FNV_OFFSET };

	if (n <= 1)
		return FNV_OFFSET;
	c.anon = anon && text[0] == '#';
	bpf_loop(((__u32)n - 1 + CONTENT_STEP - 1) / CONTENT_STEP, content_step, &c, 0);
	return c.hash;
}

/* Bytes of a name read to tell Ruby's name of a class or module without one:
 * "#<Module:0x", 16 hex digits, ">" and the NUL are 29. */
#define ANON_NAME_READ 32

/* Whether text's first n bytes are lit's (a literal: the loop unrolls into
 * comparisons with constants). */
static __always_inline bool text_starts(const char *text, const char *lit, int n)
{
#pragma unroll
	for (int j = 0; j < n; j++)
		if (text[j] != lit[j])
			return false;
	return true;
}

/* s: the prefix ("#<Class:0x", prefix bytes), then 16 hex digits, ">" and
 * the NUL? Then *hash: FNV-1a of the prefix and ">", as content_text_hash
 * with anon hashes the text (the digits after ":0x" left out). */
static __always_inline bool anon_name_hash_at(const char *s, int prefix, __u64 *hash)
{
	__u64 h = FNV_OFFSET;

	if (s[prefix + 16] != '>' || s[prefix + 17] != 0)
		return false;
#pragma unroll
	for (int j = 0; j < 16; j++)
		if (!is_hex_digit(s[prefix + j]))
			return false;
#pragma unroll
	for (int j = 0; j < prefix; j++)
		h = (h ^ (__u8)s[j]) * FNV_PRIME;
	*hash = (h ^ '>') * FNV_PRIME;
	return true;
}

/* Whether s (ANON_NAME_READ bytes) is Ruby's name of a class or module
 * without one, "#<Class:0x" or "#<Module:0x", the object's address in 16
 * hex digits, ">": then *hash is its content hash with anon, the same for
 * every such class (or module), known with no loop, where content_hash reads
 * the string and loops over it at every hit (Ruby makes the name anew at
 * each call, so no thread keeps it). Any other text: false. */
static __always_inline bool anonymous_name_hash(const char *s, __u64 *hash)
{
	if (text_starts(s, "#<Class:0x", 10))
		return anon_name_hash_at(s, 10, hash);
	if (text_starts(s, "#<Module:0x", 11))
		return anon_name_hash_at(s, 11, hash);
	return false;
}

#endif
