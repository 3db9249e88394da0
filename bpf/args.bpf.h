/* SPDX-License-Identifier: GPL-2.0 */
/* Probe arguments: a USDT argument spec (register, register + offset, constant)
 * read from the probe's registers, sign- or zero-extended to its size. */
#ifndef USDTPROF_ARGS_BPF_H
#define USDTPROF_ARGS_BPF_H

#include "maps.bpf.h"

/* Each case loads its own constant offset in asm: plain C lets clang merge
 * the cases into one load from a computed ctx offset, which the verifier
 * rejects, and a bpf_probe_read_kernel() would cost a helper call. */
#define CTX_LOAD(field)                                                                \
	({                                                                             \
		__u64 v_;                                                              \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                                  \
			     : "=r"(v_)                                                \
			     : "r"(ctx), "i"(__builtin_offsetof(struct pt_regs, field))); \
		v_;                                                                    \
	})

static __always_inline __u64 reg_value(struct pt_regs *ctx, __u32 reg)
{
	switch (reg) {
	case USDTPROF_REG_DI: return CTX_LOAD(di);
	case USDTPROF_REG_SI: return CTX_LOAD(si);
	case USDTPROF_REG_AX: return CTX_LOAD(ax);
	case USDTPROF_REG_DX: return CTX_LOAD(dx);
	case USDTPROF_REG_CX: return CTX_LOAD(cx);
	case USDTPROF_REG_BX: return CTX_LOAD(bx);
	case USDTPROF_REG_BP: return CTX_LOAD(bp);
	case USDTPROF_REG_SP: return CTX_LOAD(sp);
	case USDTPROF_REG_R8: return CTX_LOAD(r8);
	case USDTPROF_REG_R9: return CTX_LOAD(r9);
	case USDTPROF_REG_R10: return CTX_LOAD(r10);
	case USDTPROF_REG_R11: return CTX_LOAD(r11);
	case USDTPROF_REG_R12: return CTX_LOAD(r12);
	case USDTPROF_REG_R13: return CTX_LOAD(r13);
	case USDTPROF_REG_R14: return CTX_LOAD(r14);
	case USDTPROF_REG_R15: return CTX_LOAD(r15);
	default: return CTX_LOAD(ip);
	}
}

static __always_inline __u64 read_arg(struct pt_regs *ctx, const struct usdtprof_arg_spec *arg)
{
	__u64 v;
	__u32 shift;

	if (arg->kind == USDTPROF_ARG_CONST)
		return arg->offset;
	v = reg_value(ctx, arg->reg);
	if (arg->kind == USDTPROF_ARG_REG_DEREF &&
	    bpf_probe_read_user(&v, sizeof(v), (void *)(v + arg->offset)))
		return 0;
	shift = 64 - arg->size * 8;
	if (shift > 0 && shift < 64) {
		v <<= shift;
		v = arg->is_signed ? (__u64)((__s64)v >> shift) : v >> shift;
	}
	return v;
}

/* Out of line: runtime probes read several arguments, native ones one. */
static __noinline __u64 read_arg_slow(struct pt_regs *ctx, const struct usdtprof_arg_spec *arg)
{
	return read_arg(ctx, arg);
}

#endif /* USDTPROF_ARGS_BPF_H */
