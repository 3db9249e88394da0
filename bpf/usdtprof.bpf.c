// SPDX-License-Identifier: GPL-2.0
/* usdtprof's in-kernel engine: one entry and one exit program serve every
 * probe. Per thread a shadow call stack lives in task-local storage; each exit
 * adds calls, inclusive and exclusive time into the `paths` map under the
 * frame's call-path id, which is built incrementally as hash(parent path, func).
 *
 * Task storage rather than a hash map keyed by tid: the lookup goes through
 * the task's own storage cache (no hashing, no contention between threads),
 * the kernel frees the stack when the thread dies, and userspace never has to
 * garbage-collect stale tids. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "usdtprof/bpf_shared.h"
#include "hash.bpf.h"
#include "sql.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#include "maps.bpf.h"
#include "args.bpf.h"
#include "identity.bpf.h"
#include "durations.bpf.h"
#include "paths.bpf.h"
#include "stack.bpf.h"
#include "trace.bpf.h"
#include "offcpu.bpf.h"
#include "postgres.bpf.h"
#include "inband.bpf.h"

/* A thread's accounting starts at its first hit (in its program: an exec
 * starts it again). A function running then, entered before the attach, is
 * charged from when its process's probes were attached (start_ns, or a later
 * attach of the process's program: process_attached), never from before the
 * thread exists or before its exec (idle_since, as flush_on_exec left it).
 * Off-CPU time counted since the exec, before that point, is not its own:
 * as much as that span is taken off (it may have been off-CPU all along). */
static __always_inline void begin_accounting(struct usdtprof_thread_stack *st, struct task_struct *task)
{
	__u64 since = start_ns, now = bpf_ktime_get_ns(), exec = st->idle_since, before;
	__u64 *attached = bpf_map_lookup_elem(&process_attached, &st->tgid);

	if (attached && *attached > since)
		since = *attached;
	if (task->start_time > since)
		since = task->start_time;
	if (exec > since)
		since = exec;
	if (since > now)
		since = now;
	before = exec ? since - exec : 0;
	st->unknown_offcpu = st->unknown_offcpu > before ? st->unknown_offcpu - before : 0;
	st->unknown_self = 0;
	if (st->switched_out && st->switched_out < since)
		st->switched_out = since;
	st->idle_since = since;
}

/* The thread's program's code and read-only data (text_lo, text_hi), kept
 * for its hits in this program: an exec empties them (flush_on_exec). */
static __always_inline void set_text_range(struct usdtprof_thread_stack *st, struct task_struct *task)
{
	struct mm_struct *mm = task->mm;

	st->text_lo = 0;
	st->text_hi = 0;
	if (mm && mm->start_code < mm->start_data) {
		st->text_lo = mm->start_code;
		st->text_hi = mm->start_data;
	}
}

/* The calling thread's (task's) stack, created on its first event. */
static __always_inline struct usdtprof_thread_stack *thread_stack(struct task_struct *task)
{
	struct usdtprof_thread_stack *st = bpf_task_storage_get(&stacks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!st) {
		count_anomaly(USDTPROF_ANOM_NO_STORAGE, 1);
		return 0;
	}
	if (!st->tgid) {
		__u64 id = bpf_get_current_pid_tgid();
		char comm[16];

		st->tgid = id >> 32;
		set_text_range(st, task);
		if (per_thread)
			st->tid = (__u32)id;
		begin_accounting(st, task);
		if (!bpf_map_lookup_elem(&process_comms, &st->tgid)) {
			if (bpf_probe_read_kernel_str(comm, sizeof(comm), task->group_leader->comm) > 0)
				bpf_map_update_elem(&process_comms, &st->tgid, comm, BPF_NOEXIST);
			remember_title(st->tgid);
		}
	}
	return st;
}

/* Whether the calling process's own sampling window is closed (monitor -p
 * A,B, --all): a lookup only while some process's is. Not inlined, as
 * count_process_hit: the callers' registers stay as they were without them
 * (the verifier follows their bounds). */
static __noinline bool process_closed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return READ_ONCE(processes_closed) && bpf_map_lookup_elem(&closed_processes, &tgid);
}

/* Counts a hit of the calling process (per_process), unless its window is
 * closed: then false, the probe does nothing. */
static __noinline bool count_process_hit(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 one = 1, *n;

	if (process_closed())
		return false;
	n = bpf_map_lookup_elem(&process_hits, &tgid);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&process_hits, &tgid, &one, BPF_NOEXIST);
	return true;
}

/* USDTPROF_ROLE_FORGET_NAMES: the calling thread's pinned names go. A
 * thread without a stack has none. */
static __noinline void forget_names(void)
{
	struct usdtprof_thread_stack *st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);

	if (st)
		st->names_epoch++;
}

/* What every hit does first: its probe's spec, the thread's stack, the
 * function (or task id), then the clock. The clock is read last, so creating
 * a thread's stack, capturing a name or hashing a query text is charged to
 * nobody. NULL when the probe is to do nothing. */
static __always_inline struct usdtprof_thread_stack *
begin_hit(struct pt_regs *ctx, const struct usdtprof_probe_spec **spec, __u64 *func, __u64 *now)
{
	struct usdtprof_thread_stack *st;
	struct task_struct *task;
	__u32 spec_index;

	*spec = probe_spec(ctx, &spec_index);
	if (!*spec)
		return 0;
	/* Before the pause and the process's window: names freed while the
	 * probes are paused must not stay pinned. */
	if ((*spec)->role == USDTPROF_ROLE_FORGET_NAMES) {
		forget_names();
		return 0;
	}
	if (READ_ONCE(paused))
		return 0;
	if (per_process && !count_process_hit())
		return 0;
	task = bpf_get_current_task_btf(); /* once: storage, missed switch, steal */
	st = thread_stack(task);
	if (!st)
		return 0;
	st->hit_call = 0; /* set by an identity that gives one (exit_of_top_call) */
	*func = hit_function(ctx, *spec, spec_index, st);
	*now = clock_at_hit(ctx, *spec, st);
	if (st->switched_out)
		place_missed_switch_in(st, task, bpf_get_smp_processor_id(), *now);
	/* Userspace sets `paused` before it reads close_ns from the clock: a hit
	 * whose clock reads later than close_ns sees it set here, so no time
	 * beyond the close is ever charged (a load, no helper). So for one
	 * process's close (closed_processes, then process_close_ns). */
	if (READ_ONCE(paused) || (per_process && process_closed()))
		return 0;
	if (steal_time_from_rq)
		charge_steal(st, rq_of(task));
	return st;
}

#include "attach_chain.bpf.h"

/* Path id of the marker under which calls beyond the tracked depth are counted. */
static __always_inline __u64 truncated_path(struct usdtprof_thread_stack *st)
{
	return path_hash(st->frames[USDTPROF_MAX_DEPTH - 1].path, USDTPROF_FUNC_TRUNCATED);
}

/* Remembers the creating call path of a task, for its TASK_BEGIN. */
static __always_inline void task_create(struct usdtprof_thread_stack *st, __u64 id, __u64 now)
{
	__u64 key, creator;
	__u32 d = st->depth;

	creator = d > 0 && d <= USDTPROF_MAX_DEPTH ? st->frames[(d - 1) & FRAME_MASK].path : 0;
	key = path_hash(st->tgid, id);
	bpf_map_update_elem(&tasks, &key, &creator, BPF_ANY);
	emit(USDTPROF_EV_TASK_CREATE, id, now);
}

#include "dead_frames.bpf.h"

SEC("uprobe")
int usdt_entry(struct pt_regs *ctx)
{
	const struct usdtprof_probe_spec *spec;
	struct usdtprof_thread_stack *st;
	struct usdtprof_frame *f;
	__u64 func, parent_path, key, *creator, now, sp, site;
	__u32 d;

	st = begin_hit(ctx, &spec, &func, &now);
	if (!st)
		return 0;
	if (spec->role == USDTPROF_ROLE_TASK_CREATE) {
		task_create(st, func, now);
		return 0;
	}
	sp = spec->nests ? CTX_LOAD(sp) : 0;
	site = entry_site(ctx, spec->nests);
	d = st->depth;
	if (sp && site)
		d = pop_dead_frames(st, d, sp, site, spec->nests, func, now);
	if (d >= USDTPROF_MAX_DEPTH) {
		/* Deeper calls run inside the deepest frame, which keeps their time;
		 * their exits count them under a [truncated] marker. */
		if (st->overflow++ == 0) {
			struct usdtprof_path_slot marker = {
				.path = truncated_path(st),
				.parent = st->frames[USDTPROF_MAX_DEPTH - 1].path,
				.func = USDTPROF_FUNC_TRUNCATED,
			};
			add_to_map(&marker, 0, st->tgid, 0);
		}
		count_anomaly(USDTPROF_ANOM_DEPTH_OVERFLOW, 1);
		emit(spec->role == USDTPROF_ROLE_TASK_BEGIN ? USDTPROF_EV_TASK_BEGIN : USDTPROF_EV_ENTER, func, now);
		return 0;
	}
	if (d > 0) {
		f = &st->frames[(d - 1) & FRAME_MASK];
		f->self += now - f->resume;
		parent_path = f->path;
	} else {
		st->unknown_self += now - st->idle_since;
		parent_path = thread_root(st);
	}
	if (spec->role == USDTPROF_ROLE_TASK_BEGIN) {
		/* The task's work goes under its creator's path, behind a [task] frame. */
		emit(USDTPROF_EV_TASK_BEGIN, func, now);
		key = path_hash(st->tgid, func);
		creator = bpf_map_lookup_elem(&tasks, &key);
		if (creator)
			parent_path = *creator;
		func = USDTPROF_FUNC_TASK;
	} else {
		emit(USDTPROF_EV_ENTER, func, now);
	}
	f = &st->frames[d & FRAME_MASK];
	f->func = func;
	f->parent = parent_path;
	f->path = path_hash(parent_path ? parent_path : st->tgid, func); /* roots are per process (or thread) */
	f->coarse = 0;
	f->slot_ref = 0;
	if (d > 0 && spec->role != USDTPROF_ROLE_TASK_BEGIN && st->frames[(d - 1) & FRAME_MASK].coarse) {
		/* Below a frame without its own path: in the same [other]. */
		f->path = st->frames[(d - 1) & FRAME_MASK].path;
		f->parent = st->frames[(d - 1) & FRAME_MASK].parent;
		f->coarse = 2;
	} else if (!claim_path(st, f->path, parent_path, func, &f->slot_ref)) {
		/* Claimed at entry, so that a caller always has its slot before
		 * its callees need one: the nearest one that has, here. */
		count_anomaly(USDTPROF_ANOM_AGG_FULL, 1);
		f->path = other_path(parent_path, st->tgid);
		f->coarse = 1;
	}
	if (d == 0 && spec->ident == USDTPROF_IDENT_SQL && !f->coarse)
		bpf_map_update_elem(&statements, &st->tgid, &f->path, BPF_ANY);
	f->start = now;
	f->resume = now;
	f->self = 0;
	f->offcpu = 0;
	f->probe = 0;
	f->sp = site ? sp : 0;
	if (f->sp)
		f->site = site;
	else
		f->call = st->hit_call;
	f->pair = spec->pair;
	st->depth = d + 1;
	return 0;
}

/* The innermost frame a custom pair's entry opened (IDENT_PAIR exits). */
struct pair_ctx {
	struct usdtprof_thread_stack *st;
	__u64 func;
	__u32 pair, depth, found;
};

static long find_pair_frame(__u32 i, void *data)
{
	struct pair_ctx *c = data;
	struct usdtprof_frame *f;

	if (i >= c->depth)
		return 1;
	f = &c->st->frames[(c->depth - 1 - i) & FRAME_MASK];
	if (f->pair != c->pair)
		return 0;
	c->func = f->func;
	c->found = 1;
	return 1;
}

SEC("uprobe")
int usdt_exit(struct pt_regs *ctx)
{
	const struct usdtprof_probe_spec *spec;
	struct usdtprof_thread_stack *st;
	__u64 func, marker, now;
	__u32 d, i;

	st = begin_hit(ctx, &spec, &func, &now);
	if (!st)
		return 0;
	if (st->epoch != flush_epoch) {
		struct pop_ctx c = { .st = st };

		st->epoch = flush_epoch;
		bpf_loop(USDTPROF_PATH_CACHE, flush_slot, &c, 0);
	}
	if (spec->role == USDTPROF_ROLE_TASK_END) {
		__u64 key = path_hash(st->tgid, func);

		emit(USDTPROF_EV_TASK_END, func, now);
		bpf_map_delete_elem(&tasks, &key);
		func = USDTPROF_FUNC_TASK;
	} else if (spec->ident != USDTPROF_IDENT_PAIR) {
		emit(USDTPROF_EV_EXIT, func, now);
	}
	if (st->overflow) {
		st->overflow--;
		marker = truncated_path(st);
		add_to_cache(st, path_hash(marker, func), marker, func, 0, 0, 0, 0, 0, false);
		return 0;
	}
	d = st->depth;
	if (d == 0 && spec->ident == USDTPROF_IDENT_PAIR) {
		/* Opened before the attach: its function is unknown. */
		count_anomaly(USDTPROF_ANOM_EXIT_NO_FRAME, 1);
		return 0;
	}
	if (d == 0) {
		if (windowed)
			count_anomaly(USDTPROF_ANOM_WINDOW_EXITS, 1);
		else
			exit_running_at_attach(st, func, now);
		return 0;
	}
	if (d > USDTPROF_MAX_DEPTH)
		return 0;
	if (spec->ident == USDTPROF_IDENT_PAIR) {
		struct pair_ctx c = { .st = st, .pair = spec->pair, .depth = d };

		bpf_loop(USDTPROF_MAX_DEPTH, find_pair_frame, &c, 0);
		if (!c.found) {
			count_anomaly(USDTPROF_ANOM_EXIT_NO_FRAME, 1);
			return 0;
		}
		func = c.func;
		emit(USDTPROF_EV_EXIT, func, now);
	}
	if (st->frames[(d - 1) & FRAME_MASK].func != func) {
		/* Find the frame this exit belongs to; frames above it missed their exit. */
		for (i = 1; i < USDTPROF_MAX_DEPTH && i < d; i++)
			if (st->frames[(d - 1 - i) & FRAME_MASK].func == func)
				break;
		if (i >= d || i >= USDTPROF_MAX_DEPTH) {
			count_anomaly(USDTPROF_ANOM_EXIT_NO_FRAME, 1);
			return 0;
		}
		count_anomaly(USDTPROF_ANOM_EXIT_MISMATCH, 1);
		/* A pair's exit with calls still open inside its frame. */
		count_pair_mismatch(spec->pair);
		pop_frames(st, d, i, now, 0);
		d -= i;
	}
	pop_frame(st, d, now, 0, true);
	st->depth = d - 1;
	return 0;
}

/* Charges every frame of a stack up to now (or the close) as an open
 * activation and adds the thread's path cache to the map. */
static __always_inline void drain_stack_at(struct usdtprof_thread_stack *st, struct task_struct *t, __u64 close)
{
	struct pop_ctx c = { .st = st };
	__u32 d = st->depth;
	__u64 now = close ? close : bpf_ktime_get_ns();

	if (d > USDTPROF_MAX_DEPTH)
		return;
	/* A thread switched out at the stop is still off-CPU in its top frame,
	 * unless it came back unseen (then it is running on its CPU since). */
	if (d > 0 && st->switched_out) {
		__u32 cpu = t->thread_info.cpu;
		__s64 offset = rq_clock_offset[cpu & (USDTPROF_MAX_CPUS - 1)];
		__u64 arrival = t->sched_info.last_arrival + offset;

		if (offset && arrival > st->switched_out && arrival < now)
			place_missed_switch_in(st, t, cpu, now);
		else
			end_offcpu(st, now);
	}
	pop_frames(st, d, d, now, 1);
	st->depth = 0;
	st->overflow = 0;
	st->sql_text = 0;
	st->idle_since = now;
	/* The probes are detached or going: a request may start unseen. */
	st->names_epoch++;
	/* A function entered before the attach and still running is not
	 * recorded (it has not exited): its time so far ends here too. */
	st->unknown_self = 0;
	st->unknown_offcpu = 0;
	record_attach_chain(st);
	bpf_loop(USDTPROF_PATH_CACHE, flush_slot, &c, 0);
}

/* Up to the close of the recording or the window (close_ns), or now. */
static __always_inline void drain_stack(struct usdtprof_thread_stack *st, struct task_struct *t)
{
	drain_stack_at(st, t, READ_ONCE(close_ns));
}

/* The flag claims the stack, so the thread-exit hook and the stop iterator
 * never flush it twice. */
static __always_inline void flush_stack(struct usdtprof_thread_stack *st, struct task_struct *t)
{
	if (!__sync_lock_test_and_set(&st->flushed, 1))
		drain_stack(st, t);
}

/* exec replaces the program: the frames of the old one end there (as open
 * activations) instead of lasting until the new program exits, and nothing
 * of the old one's carries over: the new program's accounting starts at its
 * first hit, as a new thread's (thread_stack), from the exec at the earliest.
 * Runs in the execing thread, so no probe of it runs meanwhile; it is
 * running (not switched out) and its steal mark is the old program's. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(flush_on_exec, struct task_struct *task)
{
	struct usdtprof_thread_stack *st = bpf_task_storage_get(&stacks, task, 0, 0);

	if (!st)
		return 0;
	/* Even for a flushed stack, whose tgid stays: the old program's range
	 * must never check the new one's strings (empty: every string read). */
	st->text_lo = 0;
	st->text_hi = 0;
	if (st->flushed)
		return 0;
	drain_stack(st, task);
	st->tgid = 0;
	st->idle_since = bpf_ktime_get_ns();
	st->switched_out = 0;
	st->steal_rq = 0;
	st->steal_mark = 0;
	/* The new program's code objects may take the old one's addresses. */
	for (int i = 0; i < USDTPROF_CODE_CACHE; i++)
		st->code_ids[i].code = 0;
	return 0;
}

/* Splits self time into on- and off-CPU: the time a thread spends switched
 * out belongs to its innermost frame (or, with an empty stack, to a function
 * entered before attach). Runs on every context switch of the machine, so it
 * returns after two storage lookups for threads that are not profiled. */
SEC("tp_btf/sched_switch")
int BPF_PROG(track_offcpu, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct usdtprof_thread_stack *out = bpf_task_storage_get(&stacks, prev, 0, 0);
	struct usdtprof_thread_stack *in = bpf_task_storage_get(&stacks, next, 0, 0);
	__u32 cpu;
	__u64 now, rq;

	if (!out && !(in && in->switched_out))
		return 0;
	now = bpf_ktime_get_ns(); /* one clock read serves both sides */
	cpu = bpf_get_smp_processor_id();
	/* Both threads are on this CPU: one runqueue serves the clock offset
	 * and both sides' steal. */
	rq = rq_of(out ? prev : next);
	note_rq_clock(rq, cpu, now);
	if (out) {
		/* Still marked out: the switch that brought it back was not
		 * reported; it has been running here since its arrival. */
		if (out->switched_out)
			place_missed_switch_in(out, prev, cpu, now);
		if (steal_time_from_rq) {
			__u64 close = READ_ONCE(close_ns);

			if (!close || now <= close)
				charge_steal(out, rq);
			out->steal_rq = 0;
		}
		out->switched_out = now;
	}
	if (in && in->switched_out) {
		end_offcpu(in, now);
		if (steal_time_from_rq) {
			in->steal_rq = rq;
			in->steal_mark = steal_clock(rq);
		}
	}
	return 0;
}

/* A thread that exits inside probed frames: its time is kept, not lost with
 * its storage. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(flush_exiting_thread, struct task_struct *task)
{
	struct usdtprof_thread_stack *st = bpf_task_storage_get(&stacks, task, 0, 0);
	__u32 tgid = task->tgid;

	__u32 tid = task->pid;
	char comm[16];

	if (st) {
		flush_stack(st, task);
		if (bpf_probe_read_kernel_str(comm, sizeof(comm), task->comm) > 0)
			bpf_map_update_elem(&thread_comms, &tid, comm, BPF_ANY);
	}
	/* The last thread of a profiled process: the process's CPU time (its
	 * released threads' and this one's), and its final name. */
	if (task->signal->live.counter == 0 && bpf_map_lookup_elem(&process_comms, &tgid)) {
		__sync_fetch_and_add(&exited_cpu_ns, task->signal->sum_sched_runtime + task->se.sum_exec_runtime);
		if (bpf_probe_read_kernel_str(comm, sizeof(comm), task->group_leader->comm) > 0)
			bpf_map_update_elem(&process_comms, &tgid, comm, BPF_EXIST);
	}
	return 0;
}

#include "spans.bpf.h"

/* A span's start or end (record --span): timed per thread, apart from the
 * shadow stack, so spans need not nest with calls. The end reads the clock
 * first, the start last: the probe's own work is outside the span. */
SEC("uprobe")
int usdt_span(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid(), *start, ns;
	struct usdtprof_span_start_key open = {};
	struct usdtprof_span_key key = {};
	const struct usdtprof_probe_spec *spec;
	struct usdtprof_span_stats *s;
	__u32 spec_index;

	spec = probe_spec(ctx, &spec_index);
	if (!spec || READ_ONCE(paused))
		return 0;
	key.tgid = open.tgid = id >> 32;
	open.tid = (__u32)id;
	key.span = open.span = spec->pair;
	s = span_stats_of(&key);
	if (!s)
		return 0;
	start = bpf_map_lookup_elem(&span_starts, &open);
	if (spec->role == USDTPROF_ROLE_SPAN_START) {
		if (start)
			__sync_fetch_and_add(&s->restarted, 1);
		now = bpf_ktime_get_ns();
		if (!READ_ONCE(paused)) {
			bpf_map_update_elem(&span_starts, &open, &now, BPF_ANY);
			emit(USDTPROF_EV_SPAN_START, spec->pair, now);
		}
		return 0;
	}
	if (!start) {
		__sync_fetch_and_add(&s->unstarted, 1);
		return 0;
	}
	ns = now > *start ? now - *start : 0;
	bpf_map_delete_elem(&span_starts, &open);
	__sync_fetch_and_add(&s->count, 1);
	__sync_fetch_and_add(&s->total_ns, ns);
	__sync_fetch_and_add(&s->buckets[span_bucket(ns)], 1);
	span_extreme(&s->min_ns, ns ? ns : 1, true);
	span_extreme(&s->max_ns, ns, false);
	/* `usdtprof trace`: the same times as the stats, so the timeline's
	 * slices add up to the span's total. */
	emit(USDTPROF_EV_SPAN_END, spec->pair, now);
	return 0;
}

/* Holds a USDT semaphore up without probing anything: attached at an
 * address that never runs again (the entry point), e.g. to make CPython 3.11
 * fire the function entries it otherwise skips (see the python preset). */
SEC("uprobe")
int usdt_semaphore(struct pt_regs *ctx)
{
	return 0;
}

/* The stack of the task a task iterator visits, if it has one. */
/* `usdtprof monitor`, when a sampling window closes (probes paused and
 * detached, so no probe runs on any stack): open frames are charged up to
 * the window's close_ns as open activations and every stack starts empty,
 * path caches flushed. */
SEC("iter/task")
int close_window(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct usdtprof_thread_stack *st = task ? bpf_task_storage_get(&stacks, task, 0, 0) : NULL;

	if (st && !st->flushed)
		drain_stack(st, task);
	return 0;
}

/* `usdtprof monitor`, when one process's own window closes (its probes
 * paused by closed_processes and detached; userspace runs this iterator over
 * that process's threads only): as close_window, up to process_close_ns. */
SEC("iter/task")
int close_process(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct usdtprof_thread_stack *st = task ? bpf_task_storage_get(&stacks, task, 0, 0) : NULL;

	if (st && !st->flushed)
		drain_stack_at(st, task, READ_ONCE(process_close_ns));
	return 0;
}

/* Run once by userspace after the probes are detached: frames still open
 * (a main loop, a long request) are counted up to the stop time. */
SEC("iter/task")
int flush_open_frames(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct usdtprof_thread_stack *st = task ? bpf_task_storage_get(&stacks, task, 0, 0) : NULL;

	if (st)
		flush_stack(st, task);
	return 0;
}
