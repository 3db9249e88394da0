/* SPDX-License-Identifier: GPL-2.0 */
/* `usdtprof trace`: events to the ring buffer (compiled out of plain
 * recording by the verifier: `trace_events` is set before load). */
#ifndef USDTPROF_TRACE_BPF_H
#define USDTPROF_TRACE_BPF_H

#include "maps.bpf.h"

static __always_inline void emit(__u32 type, __u64 func, __u64 now)
{
	struct usdtprof_event *e;
	__u64 id;

	if (!trace_events)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_anomaly(USDTPROF_ANOM_LOST_EVENTS, 1);
		return;
	}
	id = bpf_get_current_pid_tgid();
	e->ts = now;
	e->func = func;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->type = type;
	e->pad = 0;
	/* Userspace drains the buffer on a timer: no wakeup per event. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

#endif /* USDTPROF_TRACE_BPF_H */
