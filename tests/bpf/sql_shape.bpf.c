// SPDX-License-Identifier: GPL-2.0
/* The engine's SQL-shape lexer (bpf/sql.bpf.h), alone, for
 * tests/e2e/test_sql_shape.cpp: userspace writes a query into `text`, runs
 * the program with BPF_PROG_TEST_RUN and reads the hash the engine would give
 * the query as its function id. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "usdtprof/bpf_shared.h"
#include "../../bpf/sql.bpf.h"

char LICENSE[] SEC("license") = "GPL";

char text[USDTPROF_SQL_MAX];
long text_len; /* with its NUL, as bpf_probe_read_user_str() counts */
__u64 shape_hash;

SEC("syscall")
int sql_shape(void *ctx)
{
	shape_hash = sql_shape_hash(text, text_len);
	return 0;
}
