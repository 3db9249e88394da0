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
 * rules as text; both must agree. */
struct sql_ctx {
	const char *text;
	__u64 hash;
	__u8 prev;      /* the previous character, white space included */
	__u8 prev_sig;  /* the last character hashed but a space, 0 at the start */
	__u8 in_quote, quote_closed, in_number, minus_pending, space_pending;
};

static __always_inline void sql_emit(struct sql_ctx *c, __u8 b)
{
	c->hash = (c->hash ^ b) * FNV_PRIME;
	if (b != ' ')
		c->prev_sig = b;
}

static __always_inline bool sql_digit(__u8 ch)
{
	return ch >= '0' && ch <= '9';
}

static __always_inline bool sql_ident(__u8 ch)
{
	return sql_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == '$' ||
	       ch >= 0x80;
}

/* A minus is unary after the start, an opening parenthesis, a comma or an operator. */
static __always_inline bool sql_unary_before(__u8 p)
{
	return p == 0 || p == '(' || p == ',' || p == '=' || p == '<' || p == '>' || p == '+' || p == '-' ||
	       p == '*' || p == '/' || p == '%' || p == '^' || p == '|';
}

static long sql_step(__u32 i, void *data)
{
	struct sql_ctx *c = data;
	__u8 ch = c->text[i & (USDTPROF_SQL_MAX - 1)];

	if (ch == 0)
		return 1;
	if (c->in_quote) {
		if (ch == '\'')
			c->in_quote = 0, c->quote_closed = 1;
		goto next;
	}
	if (c->quote_closed) {
		c->quote_closed = 0;
		if (ch == '\'') { /* '' inside a literal */
			c->in_quote = 1;
			goto next;
		}
		sql_emit(c, '?');
	}
	if (c->in_number) {
		if (sql_digit(ch) || ch == '.')
			goto next;
		c->in_number = 0;
	}
	if (c->minus_pending) {
		c->minus_pending = 0;
		if (sql_digit(ch)) {
			sql_emit(c, '?');
			c->in_number = 1;
			goto next;
		}
		sql_emit(c, '-');
	}
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
		c->space_pending = c->prev_sig != 0;
		goto next;
	}
	if (c->space_pending) {
		c->space_pending = 0;
		sql_emit(c, ' ');
	}
	if (ch == '\'')
		c->in_quote = 1;
	else if (sql_digit(ch) && !sql_ident(c->prev))
		sql_emit(c, '?'), c->in_number = 1;
	else if (ch == '-' && sql_unary_before(c->prev_sig))
		c->minus_pending = 1;
	else
		sql_emit(c, ch);
next:
	c->prev = ch;
	return 0;
}

/* The FNV-1a hash of text's shape; n: its length with the NUL, as
 * bpf_probe_read_user_str() returns it. text is USDTPROF_SQL_MAX bytes. */
static __always_inline __u64 sql_shape_hash(const char *text, long n)
{
	/* A constant initializer, then the text: clang copies the constant from
	 * .rodata, which the verifier reads as known values; field stores of
	 * zero instead made the bpf_loop callback's verification exceed the
	 * verifier's limit ("Argument list too long"). */
	struct sql_ctx c = { .hash = FNV_OFFSET };

	c.text = text;
	bpf_loop(n, sql_step, &c, 0);
	if (c.quote_closed)
		sql_emit(&c, '?');
	if (c.minus_pending)
		sql_emit(&c, '-');
	return c.hash;
}

#endif
