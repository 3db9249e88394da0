// SPDX-License-Identifier: GPL-2.0
/* monitor --all's discovery: the processes that start on the host, from the
 * kernel's scheduler tracepoints (BTF-typed: no tracefs, no kprobes). Every
 * exec is sent to userspace (a new program may have probes); a fork only
 * when its parent is watched (a child of a profiled process runs the same
 * program; the children of others have no probes either). Threads are not
 * processes and are never sent. A separate object from the engine's: loaded
 * by monitor --all only. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* Layout shared with userspace/engine/exec_events.cpp. */
struct exec_event {
	__u32 pid;    /* the process (tgid) that exec'd, or the forked child */
	__u32 parent; /* a fork's parent; 0 for an exec */
	__u64 ns;     /* when (bpf_ktime_get_ns: CLOCK_MONOTONIC) */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} process_events SEC(".maps");

/* The processes whose forks are sent: userspace keeps it to those it profiles. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} watched SEC(".maps");

/* Events the ring buffer had no room for: userspace rescans /proc then. */
__u64 lost_events = 0;

static __always_inline void send(__u32 pid, __u32 parent)
{
	struct exec_event *e = bpf_ringbuf_reserve(&process_events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&lost_events, 1);
		return;
	}
	e->pid = pid;
	e->parent = parent;
	e->ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(discover_exec, struct task_struct *task)
{
	send(task->tgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(discover_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;

	if (child->pid != child->tgid || !bpf_map_lookup_elem(&watched, &ptgid))
		return 0;
	send(child->tgid, ptgid);
	return 0;
}
