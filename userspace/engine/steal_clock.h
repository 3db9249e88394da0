// Where the BPF programs find the hypervisor's steal clock: a KVM guest
// kernel keeps each vCPU's stolen time in a per-CPU kvm_steal_time record
// (bpf/offcpu.bpf.h). Per-CPU variables sit at the same distance from each
// other in every CPU's copy, so the record is at a fixed distance from the
// CPU's runqueue, which a task leads to; the kernel's BTF gives both
// variables' places in its per-CPU section.
#pragma once

#include <cstdint>

struct btf;

namespace usdtprof {

// steal_time's offset minus runqueues' in the per-CPU section of `vmlinux`;
// 0 when either is missing or steal_time is not a kvm_steal_time (then no
// time is taken for stolen).
int64_t steal_time_from_rq(const btf *vmlinux);
// The same from the running kernel's BTF (/sys/kernel/btf/vmlinux).
int64_t steal_time_from_rq();

} // namespace usdtprof
