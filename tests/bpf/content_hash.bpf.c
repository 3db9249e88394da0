// SPDX-License-Identifier: GPL-2.0
/* The engine's content hash of a name (bpf/content.bpf.h), alone, for
 * tests/e2e/test_content_hash.cpp: userspace writes a text into `text`, runs
 * the program with BPF_PROG_TEST_RUN and reads the hash the engine would key
 * the name by. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "usdtprof/bpf_shared.h"
#include "../../bpf/content.bpf.h"

char LICENSE[] SEC("license") = "GPL";

char text[USDTPROF_SQL_MAX];
long text_len; /* with its NUL, as bpf_probe_read_user_str() counts */
__u32 anon;
__u64 content_hash;

SEC("syscall")
int content_hash_of_text(void *ctx)
{
	content_hash = content_text_hash(text, text_len, anon);
	return 0;
}

/* The engine's hash of a Ruby name of a class without one, known without the
 * loop (anonymous_name_hash): the first ANON_NAME_READ bytes of `text`;
 * anonymous_found says whether it took the text. */
__u32 anonymous_found;
__u64 anonymous_hash;

SEC("syscall")
int anonymous_hash_of_text(void *ctx)
{
	anonymous_hash = 0;
	anonymous_found = anonymous_name_hash(text, &anonymous_hash);
	return 0;
}
