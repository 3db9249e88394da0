/* SPDX-License-Identifier: GPL-2.0 */
/* PostgreSQL's process titles, and the statement a parallel worker's leader
 * runs, under which the worker's frames hang. */
#ifndef USDTPROF_POSTGRES_BPF_H
#define USDTPROF_POSTGRES_BPF_H

#include "maps.bpf.h"

#define WORKER_MARK "parallel worker for PID "
#define WORKER_MARK_LEN (sizeof(WORKER_MARK) - 1)

/* The pid after "parallel worker for PID " in a title, 0 if none: a
 * PostgreSQL parallel worker's title names its leader. */
static __always_inline __u32 leader_in_title(const char *title)
{
	const char mark[] = WORKER_MARK;
	__u32 i, k, pid = 0;

	for (i = 0; i + WORKER_MARK_LEN < USDTPROF_TITLE_LEN; i++) {
		for (k = 0; k < WORKER_MARK_LEN; k++)
			if (title[(i + k) & (USDTPROF_TITLE_LEN - 1)] != mark[k])
				break;
		if (k == WORKER_MARK_LEN)
			break;
	}
	if (i + WORKER_MARK_LEN >= USDTPROF_TITLE_LEN)
		return 0;
	for (k = i + WORKER_MARK_LEN; k < USDTPROF_TITLE_LEN && k < i + WORKER_MARK_LEN + 10; k++) {
		char c = title[k & (USDTPROF_TITLE_LEN - 1)];
		if (c < '0' || c > '9')
			break;
		pid = pid * 10 + (c - '0');
	}
	return pid;
}

/* A parallel worker's first event: its leader is inside the statement that
 * launched it, whose path the worker's frames go under (worker_statements). */
static __always_inline void remember_leader_statement(__u32 tgid, const char *title)
{
	__u32 leader = leader_in_title(title);
	__u64 *statement = leader ? bpf_map_lookup_elem(&statements, &leader) : 0;

	if (statement)
		bpf_map_update_elem(&worker_statements, &tgid, statement, BPF_NOEXIST);
}

/* The current process's title (process_titles), read through the scratch
 * name: beyond what the hit's stack can spare. */
static __noinline void remember_title(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s || !mm)
		return;
	if (bpf_probe_read_user_str(s->name.text[0], USDTPROF_TITLE_LEN, (void *)mm->arg_start) <= 0)
		return;
	bpf_map_update_elem(&process_titles, &tgid, s->name.text[0], BPF_NOEXIST);
	remember_leader_statement(tgid, s->name.text[0]);
}

#endif /* USDTPROF_POSTGRES_BPF_H */
