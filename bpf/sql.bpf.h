/* SPDX-License-Identifier: GPL-2.0 */
/* The SQL-shape lexer: a query's text hashed as its statement shape, the
 * function id of a query probe (USDTPROF_IDENT_SQL). Included by
 * usdtprof.bpf.c and by the test program that runs it through
 * BPF_PROG_TEST_RUN on the cases of userspace/target/sql.cpp's tests
 * (tests/bpf/sql_shape.bpf.c, tests/e2e/test_sql_shape.cpp). Needs vmlinux.h,
 * bpf_helpers.h and usdtprof/bpf_shared.h first. */
#ifndef USDTPROF_SQL_BPF_H
#define USDTPROF_SQL_BPF_H

#include "hash.bpf.h"

/* SQL normalisation, as pg_stat_statements shows statements: numeric and
 * quoted literals (a leading unary minus included) become one placeholder
 * byte, runs of white space one space. userspace/target/sql.cpp renders the same
 * rules as text; both must agree. The rules are tools/gen_sql_table.c's, which
 * writes them as tables (sql_table.h, generated into the build's output): per
 * state and character class, what a character emits and the state after it. */
#include "sql_table.h"

/* Characters a loop step takes. Each call of the loop's step costs tens of ns
 * on a host whose returns go through the SRSO thunk, more than a character's
 * work; the tables give each character one path for the verifier, so a step
 * can take several without the verifier's states multiplying (16: 3.5x
 * faster than one; 32 no faster; docs/benchmarks.md). */
#define SQL_STEP 16

struct sql_ctx {
	const char *text;
	__u64 hash;
	__u32 state;
};

static __always_inline __u64 sql_mix(__u64 h, __u8 b)
{
	return (h ^ b) * FNV_PRIME;
}

static __always_inline __u64 sql_emit(__u64 h, __u32 emits, __u8 ch)
{
	if (emits & SQL_EMIT_MARK)
		h = sql_mix(h, '?');
	if (emits & SQL_EMIT_MINUS)
		h = sql_mix(h, '-');
	if (emits & SQL_EMIT_SPACE)
		h = sql_mix(h, ' ');
	if (emits & SQL_EMIT_NUMBER)
		h = sql_mix(h, '?');
	if (emits & SQL_EMIT_SELF)
		h = sql_mix(h, ch);
	return h;
}

static long sql_step(__u32 i, void *data)
{
	struct sql_ctx *c = data;
	__u64 h = c->hash;
	__u32 s = c->state;
	long stop = 0;

#pragma unroll
	for (int j = 0; j < SQL_STEP; j++) {
		__u8 ch = c->text[(i * SQL_STEP + j) & (USDTPROF_SQL_MAX - 1)];
		__u16 t;

		if (ch == 0) {
			stop = 1;
			break;
		}
		t = sql_next[(s * SQL_MAX_CLASSES + sql_class[ch]) & (SQL_MAX_STATES * SQL_MAX_CLASSES - 1)];
		/* Most characters emit themselves alone (names, keywords) or nothing. */
		if ((t >> 8) == SQL_EMIT_SELF)
			h = sql_mix(h, ch);
		else if (t >> 8)
			h = sql_emit(h, t >> 8, ch);
		s = t & 0xff;
	}
	c->hash = h;
	c->state = s;
	return stop;
}

/* The FNV-1a hash of text's shape; n: its length with the NUL, as
 * bpf_probe_read_user_str() returns it (1 to USDTPROF_SQL_MAX). text is
 * USDTPROF_SQL_MAX bytes. */
static __always_inline __u64 sql_shape_hash(const char *text, long n)
{
	struct sql_ctx c = { .text = text, .hash = FNV_OFFSET };

	bpf_loop(((__u32)n + SQL_STEP - 1) / SQL_STEP, sql_step, &c, 0);
	return sql_emit(c.hash, sql_end[c.state & (SQL_MAX_STATES - 1)], 0);
}

#endif
