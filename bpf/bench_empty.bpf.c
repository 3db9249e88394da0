// SPDX-License-Identifier: GPL-2.0
/* The uprobe floor for `make bench`: a program that does nothing, attached
 * to the same probe sites as usdtprof's. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int empty(struct pt_regs *ctx)
{
	return 0;
}
