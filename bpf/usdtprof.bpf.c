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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, USDTPROF_MAX_SPECS);
	__type(key, __u32);
	__type(value, struct usdtprof_probe_spec);
} probe_specs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct usdtprof_thread_stack);
} stacks SEC(".maps");

/* Sized by userspace before load (record --max-paths). Allocated as paths
 * come (no preallocation): a large table costs kernel memory only for the
 * paths a recording makes (docs/design.md, "Call-path table"). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct usdtprof_path_stats);
} paths SEC(".maps");

/* The [other] children (USDTPROF_FUNC_OTHER) of paths whose callees found
 * no slot in `paths`: at most one per path there (and one root per
 * process), so when sized as `paths` plus room for the roots it never
 * fills before it; sized by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct usdtprof_path_stats);
} other_paths SEC(".maps");

/* A new path's value (path_stats): per CPU, zero but for the fields set
 * before each insertion. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct usdtprof_path_stats);
} path_blank SEC(".maps");

/* Tasks created and not yet ended: hash(tgid, task id) -> creator's path. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} tasks SEC(".maps");

/* Custom pairs' frames popped by an exit that was not theirs, or whose exit
 * popped frames above them: pair tag -> count (they do not nest with calls). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} pair_mismatches SEC(".maps");

/* Spans (usdt_span): when each thread's open span started, and each
 * process's ended spans. LRU: starts a thread never ends (it exited inside
 * one) cannot fill the table; those left at the stop are counted as open. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct usdtprof_span_start_key);
	__type(value, __u64);
} span_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct usdtprof_span_key);
	__type(value, struct usdtprof_span_stats);
} span_stats SEC(".maps");

/* All zeroes: a process's first span stats are created from it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct usdtprof_span_stats);
} span_zero SEC(".maps");

/* Names of runtime functions (IDENT_PTRS, IDENT_SQL), captured the first
 * time each process shows each function. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct usdtprof_name_key);
	__type(value, struct usdtprof_name);
} names SEC(".maps");

/* The command name of each process with a probed thread, taken at its
 * first thread's first event: processes that are gone by the time
 * userspace reads the profile keep their name. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, char[16]);
} process_comms SEC(".maps");

/* Each process's title as its argument area showed it at its first event
 * (PostgreSQL writes its process titles there: "postgres: parallel worker
 * for PID 1234"), for processes gone before userspace reads /proc. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, char[USDTPROF_TITLE_LEN]);
} process_titles SEC(".maps");

/* The path of each process's latest statement (a root frame named by its
 * query text, IDENT_SQL), and of its leader's statement for each PostgreSQL
 * parallel worker, taken at the worker's first event (when its leader is in
 * the statement that launched it): userspace hangs the worker's frames there. */
struct path_by_pid {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
};
struct path_by_pid statements SEC(".maps");
struct path_by_pid worker_statements SEC(".maps");

/* How many paths and names each process holds, for its share of those
 * shared tables (path_share, name_share). */
struct process_usage {
	__u32 paths;
	__u32 names;
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct process_usage);
} process_usage SEC(".maps");

/* The name of each probed thread when it exited, by tid: names set after
 * the launch (pthread_setname_np, prctl) outlive the thread for `trace`. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, char[16]);
} thread_comms SEC(".maps");

/* Per-CPU room for a name being captured and a query text being hashed:
 * both are beyond the 512-byte BPF stack. */
struct scratch {
	struct usdtprof_name name;
	char sql[USDTPROF_SQL_MAX];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* `usdtprof trace` only; sized by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

/* Set before load: with it false the verifier drops every event branch, so
 * plain recording pays nothing for the trace mode. */
const volatile bool trace_events = false;

__u64 anomalies[USDTPROF_ANOM_COUNT];
/* Set by userspace when recording stops and when a `monitor` sampling window
 * closes: from then on the probes do nothing (while their detachment waits
 * for a grace period). */
__u64 paused;
/* The logical end of the recording or of the sampling window (monotonic ns),
 * which userspace reads from the clock after setting `paused`, 0 while
 * recording: open frames are charged up to it and off-CPU time ends at it,
 * however long the detachment and the flush take after it. */
__u64 close_ns;
/* Set by userspace before the first probe is attached (monotonic ns). */
__u64 start_ns;
/* `usdtprof monitor`: the CPU time of profiled processes that have exited,
 * which /proc no longer shows, for the overhead budget. */
__u64 exited_cpu_ns;
/* `usdtprof monitor`: bumped at each interval; a thread whose cache was
 * flushed in an older epoch adds it to the paths map at its next exit, so
 * periodic reads of the map miss nothing for long. */
__u64 flush_epoch;
/* Set by userspace when several processes share the tables (--binary): the
 * paths and names one process may hold, so that one cannot fill them and
 * make the others' drop. 0: no limit. */
__u32 path_share;
__u32 name_share;
/* Set once a sampling window has closed: frames open at its end were
 * counted then, so exits found without a frame are not counted again. */
__u64 windowed;

#define FRAME_MASK (USDTPROF_MAX_DEPTH - 1)
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))

static __always_inline void count_anomaly(enum usdtprof_anomaly a, __u64 n)
{
	__sync_fetch_and_add(&anomalies[a], n);
}

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

static __always_inline __u64 path_hash(__u64 parent, __u64 func)
{
	__u64 h = parent ^ (func * 0x9E3779B97F4A7C15ULL);

	h ^= h >> 32;
	h *= 0xD6E8FEB86659FD93ULL;
	h ^= h >> 32;
	return h;
}

/* Out of line: runtime probes read several arguments, native ones one. */
static __noinline __u64 read_arg_slow(struct pt_regs *ctx, const struct usdtprof_arg_spec *arg)
{
	return read_arg(ctx, arg);
}

static __noinline __u64 sql_hash(struct pt_regs *ctx, const struct usdtprof_arg_spec *arg)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	long n;

	if (!s)
		return 0;
	n = bpf_probe_read_user_str(s->sql, sizeof(s->sql), (void *)read_arg(ctx, arg));
	if (n <= 0)
		return 0;
	return sql_shape_hash(s->sql, n);
}

struct content_ctx {
	const char *text;
	__u64 hash;
};

static long content_step(__u32 i, void *data)
{
	struct content_ctx *c = data;

	c->hash = (c->hash ^ (__u8)c->text[i & (USDTPROF_SQL_MAX - 1)]) * FNV_PRIME;
	return 0;
}

/* FNV-1a of the NUL-terminated string at addr (its first USDTPROF_CONTENT_MAX bytes). */
static __noinline __u64 content_hash(__u64 addr)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct content_ctx c = { .hash = FNV_OFFSET };
	long n;

	if (!s)
		return 0;
	n = bpf_probe_read_user_str(s->sql, USDTPROF_CONTENT_MAX, (void *)addr);
	if (n <= 1)
		return FNV_OFFSET;
	c.text = s->sql;
	bpf_loop(n - 1, content_step, &c, 0);
	return c.hash;
}

/* The 8 bytes before a string: where a runtime keeps its length (PHP's
 * zend_string), and what a literal of the same text lacks. 0 if unreadable. */
static __always_inline __u64 string_prefix(__u64 addr)
{
	__u64 prefix = 0;

	if (bpf_probe_read_user(&prefix, sizeof(prefix), (void *)(addr - sizeof(prefix))))
		return 0;
	return prefix;
}

/* An identity argument: its value, or the hash of the string it points to
 * (and of the 8 bytes before it). */
static __always_inline __u64 ident_arg(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec, int i)
{
	__u64 v = read_arg_slow(ctx, &spec->args[i]);

	if (!(spec->content_mask & (1u << i)))
		return v;
	if (spec->content_mask & USDTPROF_CONTENT_PREFIXED(i))
		return path_hash(content_hash(v), string_prefix(v));
	return content_hash(v);
}

static __always_inline __u64 read_user_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* The owner of the method running on the execution context ec
 * (USDTPROF_DERIVED_OWNER), 0 when what is found is no method entry. */
static __always_inline __u64 method_owner(const struct usdtprof_derived *d, __u64 ec)
{
	__u64 frame, ep, me, flags;

	if (!ec || !(frame = read_user_u64(ec + d->object)) || !(ep = read_user_u64(frame + d->ep)) ||
	    !(me = read_user_u64(ep + d->me)))
		return 0;
	flags = read_user_u64(me);
	if ((flags & d->imemo_mask) == d->imemo_svar) {
		me = read_user_u64(me + d->svar_me);
		flags = me ? read_user_u64(me) : 0;
	}
	if ((flags & d->imemo_mask) != d->imemo_ment)
		return 0;
	return read_user_u64(me + d->owner);
}

/* USDTPROF_DERIVED_OWNER: whether the method the probe names is its class's
 * singleton method; 0 when neither register leads to a method entry whose
 * owner is the class or its singleton class. */
static __always_inline __u64 owner_verdict(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec)
{
	const struct usdtprof_derived *d = &spec->derived;
	__u64 klass = read_arg_slow(ctx, &spec->args[d->proof_arg & (USDTPROF_MAX_IDENT_ARGS - 1)]);
	__u64 singleton, owner;

	if (!klass)
		return 0;
	singleton = read_user_u64(klass + d->value);
	owner = method_owner(d, reg_value(ctx, d->reg));
	if (!owner || (owner != klass && owner != singleton))
		owner = method_owner(d, reg_value(ctx, d->reg2));
	if (owner && owner == singleton)
		return USDTPROF_OWNER_SINGLETON;
	if (owner && owner == klass)
		return USDTPROF_OWNER_CLASS;
	return 0;
}

/* The derived identity of a hit (spec->derived), 0 when the spec has none
 * or the object reached does not prove to be the one the arguments came
 * from (another build keeps it elsewhere, a string not in its compact form). */
static __noinline __u64 derived_value(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec)
{
	const struct usdtprof_derived *d = &spec->derived;
	__u64 object, proof, value;

	if (!d->used)
		return 0;
	if (d->kind == USDTPROF_DERIVED_OWNER)
		return owner_verdict(ctx, spec);
	if (bpf_probe_read_user(&object, sizeof(object), (void *)(reg_value(ctx, d->reg) + d->object)) ||
	    bpf_probe_read_user(&proof, sizeof(proof), (void *)(object + d->proof)))
		return 0;
	if (proof + d->text != read_arg_slow(ctx, &spec->args[d->proof_arg & (USDTPROF_MAX_IDENT_ARGS - 1)]))
		return 0;
	if (bpf_probe_read_user(&value, sizeof(value), (void *)(object + d->value)))
		return 0;
	return value;
}

/* The derived string object's text, when it keeps its text inline. */
static __always_inline void capture_derived(const struct usdtprof_derived *d, __u64 derived, char *text)
{
	__u8 flags = 0;

	if (!derived || bpf_probe_read_user(&flags, sizeof(flags), (void *)(derived + d->flags)) ||
	    (flags & d->flag_mask) != d->flag_mask)
		return;
	bpf_probe_read_user_str(text, USDTPROF_NAME_LEN, (void *)(derived + d->text));
}

static __always_inline void capture_part(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
					 const struct usdtprof_name_part *part, __u64 derived,
					 struct usdtprof_name *n, int i)
{
	__u64 len;
	void *src;

	n->text[i][0] = 0;
	n->num[i] = 0;
	if (part->type == USDTPROF_PART_NONE)
		return;
	if (part->type == USDTPROF_PART_DERIVED) {
		capture_derived(&spec->derived, derived, n->text[i]);
		return;
	}
	if (part->type == USDTPROF_PART_INT) {
		n->num[i] = read_arg_slow(ctx, &part->arg);
		return;
	}
	src = (void *)read_arg_slow(ctx, &part->arg);
	if (part->type == USDTPROF_PART_STR || part->type == USDTPROF_PART_STR_PREFIXED ||
	    part->type == USDTPROF_PART_STR_VERDICT) {
		bpf_probe_read_user_str(n->text[i], USDTPROF_NAME_LEN, src);
		if (part->type == USDTPROF_PART_STR_PREFIXED)
			n->num[i] = string_prefix((__u64)src);
		if (part->type == USDTPROF_PART_STR_VERDICT)
			n->num[i] = derived;
		return;
	}
	len = read_arg_slow(ctx, &part->len);
	if (len > USDTPROF_NAME_LEN - 1)
		len = USDTPROF_NAME_LEN - 1;
	if (bpf_probe_read_user(n->text[i], len, src))
		len = 0;
	n->text[i][len] = 0;
}

/* The usage of tgid when the tables are shared, NULL when they are not.
 * *full: the process may add no more (its share is used, or it cannot be
 * counted). */
static __always_inline struct process_usage *usage_of(__u32 tgid, bool *full)
{
	struct process_usage zero = {}, *u;

	*full = false;
	if (!path_share && !name_share)
		return 0;
	u = bpf_map_lookup_elem(&process_usage, &tgid);
	if (!u) {
		bpf_map_update_elem(&process_usage, &tgid, &zero, BPF_NOEXIST);
		u = bpf_map_lookup_elem(&process_usage, &tgid);
	}
	*full = !u;
	return u;
}

/* The first time a process shows a function, its name parts are read and
 * kept: the strings may be gone by the time userspace reads the profile. */
static __noinline void capture_name(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec, __u32 spec_index,
				    __u64 func, __u64 derived)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct usdtprof_name_key key = { .func = func, .tgid = tgid };
	struct process_usage *u;
	__u32 zero = 0;
	struct scratch *s;
	bool full;

	if (bpf_map_lookup_elem(&names, &key))
		return;
	u = usage_of(tgid, &full);
	if (full || (u && name_share && u->names >= name_share))
		return;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return;
	s->name.spec = spec_index;
	s->name.pad = 0;
	capture_part(ctx, spec, &spec->parts[0], derived, &s->name, 0);
	capture_part(ctx, spec, &spec->parts[1], derived, &s->name, 1);
	capture_part(ctx, spec, &spec->parts[2], derived, &s->name, 2);
	capture_part(ctx, spec, &spec->parts[3], derived, &s->name, 3);
	if (bpf_map_update_elem(&names, &key, &s->name, BPF_NOEXIST) == 0 && u)
		__sync_fetch_and_add(&u->names, 1);
}

/* The function id of a runtime probe's hit, its name captured on first sight. */
static __noinline __u64 runtime_function(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
					 __u32 spec_index)
{
	__u64 h, derived = 0;

	if (spec->ident == USDTPROF_IDENT_CONST)
		return spec->const_func;
	if (spec->ident == USDTPROF_IDENT_SQL) {
		h = sql_hash(ctx, &spec->args[0]);
	} else {
		h = ident_arg(ctx, spec, 0);
		if (spec->nargs > 1)
			h = path_hash(h, ident_arg(ctx, spec, 1));
		if (spec->nargs > 2)
			h = path_hash(h, ident_arg(ctx, spec, 2));
		if (spec->nargs > 3)
			h = path_hash(h, ident_arg(ctx, spec, 3));
		derived = derived_value(ctx, spec);
		if (derived)
			h = path_hash(h, derived);
	}
	/* Ids below 16 are the synthetic frames'. */
	if (h < 16)
		h += 16;
	capture_name(ctx, spec, spec_index, h, derived);
	return h;
}

/* The totals of a path, created (zero) if needed: [other] children in
 * other_paths, every other path in `paths` within the process's share. NULL
 * when it finds no slot. Another CPU may create it first: then EEXIST and the
 * lookup finds it. */
static __always_inline struct usdtprof_path_stats *path_stats(__u64 path, __u64 parent, __u64 func, __u32 tgid)
{
	void *map = func == USDTPROF_FUNC_OTHER ? (void *)&other_paths : (void *)&paths;
	struct usdtprof_path_stats *s = bpf_map_lookup_elem(map, &path), *init;
	struct process_usage *u;
	__u32 zero = 0;
	bool full;

	if (s)
		return s;
	/* The new path's value, beyond the 512-byte stack: only these three
	 * fields of this CPU's blank are ever written. */
	init = bpf_map_lookup_elem(&path_blank, &zero);
	if (!init)
		return 0;
	init->parent = parent;
	init->func = func;
	init->tgid = tgid;
	if (func == USDTPROF_FUNC_OTHER) {
		bpf_map_update_elem(&other_paths, &path, init, BPF_NOEXIST);
		return bpf_map_lookup_elem(&other_paths, &path);
	}
	/* Beyond its share, a process's new paths find no slot, as in a full table. */
	u = usage_of(tgid, &full);
	if (!full && !(u && path_share && u->paths >= path_share) &&
	    bpf_map_update_elem(&paths, &path, init, BPF_NOEXIST) == 0 && u)
		__sync_fetch_and_add(&u->paths, 1);
	return bpf_map_lookup_elem(&paths, &path);
}

/* The path id of the [other] child of parent (0: of the process's roots). */
static __always_inline __u64 other_path(__u64 parent, __u32 tgid)
{
	return path_hash(parent ? parent : tgid, USDTPROF_FUNC_OTHER);
}

/* Lowers (or raises) *at to v; a few tries against other threads' updates. */
static __always_inline void span_extreme(__u64 *at, __u64 v, bool lower)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = READ_ONCE(*at);

		if (lower ? old && old <= v : old >= v)
			return;
		if (__sync_val_compare_and_swap(at, old, v) == old)
			return;
	}
}

/* The histogram bucket of a duration (USDTPROF_DIST_BUCKETS): its highest
 * set bit. A global function: verified once, apart from its callers, so its
 * branches add no states to the exit program's. */
__noinline __u32 usdtprof_dist_bucket(__u64 ns)
{
	__u32 m = 0;

	if (ns >> 32) { m += 32; ns >>= 32; }
	if (ns >> 16) { m += 16; ns >>= 16; }
	if (ns >> 8) { m += 8; ns >>= 8; }
	if (ns >> 4) { m += 4; ns >>= 4; }
	if (ns >> 2) { m += 2; ns >>= 2; }
	if (ns >> 1) { m += 1; }
	return m < USDTPROF_DIST_BUCKETS ? m : USDTPROF_DIST_BUCKETS - 1;
}

struct dist_ctx {
	struct usdtprof_path_stats *s;
	const struct usdtprof_path_dist *d;
};

static long add_bucket(__u32 i, void *data)
{
	struct dist_ctx *c = data;
	__u16 n;

	if (i >= USDTPROF_DIST_BUCKETS)
		return 1;
	n = c->d->buckets[i];
	if (n)
		__sync_fetch_and_add(&c->s->buckets[i], n);
	return 0;
}

/* Adds totals to a path, creating it if needed; a path that finds no slot
 * (its frame was not claimed at entry: the attach chain, [truncated]
 * markers, or a path deleted meanwhile) goes to its parent's [other] child.
 * Atomic: threads of a process on other CPUs share paths. */
static __always_inline void add_to_map(const struct usdtprof_path_slot *t, const struct usdtprof_path_dist *d,
				       __u32 tgid, __u64 open)
{
	struct usdtprof_path_stats *s = path_stats(t->path, t->parent, t->func, tgid);

	if (!s && t->func != USDTPROF_FUNC_OTHER) {
		count_anomaly(USDTPROF_ANOM_AGG_FULL, 1);
		s = path_stats(other_path(t->parent, tgid), t->parent, USDTPROF_FUNC_OTHER, tgid);
	}
	if (!s) {
		count_anomaly(USDTPROF_ANOM_DROPPED_NS, t->self_ns);
		return;
	}
	__sync_fetch_and_add(&s->calls, t->calls);
	__sync_fetch_and_add(&s->self_ns, t->self_ns);
	__sync_fetch_and_add(&s->total_ns, t->total_ns);
	if (t->self_offcpu_ns)
		__sync_fetch_and_add(&s->self_offcpu_ns, t->self_offcpu_ns);
	if (open)
		__sync_fetch_and_add(&s->open, open);
	/* A slot's durations (none when no call in it was timed, max 0). */
	if (d && d->max_ns) {
		struct dist_ctx c = { .s = s, .d = d };

		span_extreme(&s->min_ns, d->min_ns, true);
		span_extreme(&s->max_ns, d->max_ns, false);
		bpf_loop(USDTPROF_DIST_BUCKETS, add_bucket, &c, 0);
	}
}

/* Whether a frame entering path has a slot: its callees need one to hang
 * under. The thread's path cache holds only claimed paths, so a loop over
 * known paths pays no lookup. */
static __always_inline bool claim_path(struct usdtprof_thread_stack *st, __u64 path, __u64 parent, __u64 func)
{
	if (st->cache[path & (USDTPROF_PATH_CACHE - 1)].path == path)
		return true;
	return path_stats(path, parent, func, st->tgid) != 0;
}

/* A completed call goes to the thread's own path cache: no hashing, no
 * atomics, only the thread writes it. A slot holding another path is first
 * added to the map. */
static __always_inline void add_to_cache(struct usdtprof_thread_stack *st, __u64 path, __u64 parent,
					 __u64 func, __u64 self, __u64 total, __u64 offcpu, bool timed)
{
	__u32 i = path & (USDTPROF_PATH_CACHE - 1);
	struct usdtprof_path_slot *slot = &st->cache[i];
	struct usdtprof_path_dist *dist = &st->dist[i];

	/* Also before a 16-bit bucket count could wrap. */
	if (slot->path != path || slot->calls >= USDTPROF_DIST_SLOT_MAX) {
		if (slot->calls)
			add_to_map(slot, dist, st->tgid, 0);
		slot->path = path;
		slot->parent = parent;
		slot->func = func;
		slot->calls = 0;
		slot->self_ns = 0;
		slot->total_ns = 0;
		slot->self_offcpu_ns = 0;
		__builtin_memset(dist, 0, sizeof(*dist));
	}
	slot->calls++;
	slot->self_ns += self;
	slot->total_ns += total;
	slot->self_offcpu_ns += offcpu;
	if (timed) {
		__u32 b = usdtprof_dist_bucket(total);

		if (b < USDTPROF_DIST_BUCKETS)
			dist->buckets[b]++;
		if (!dist->min_ns || total < dist->min_ns)
			dist->min_ns = total;
		if (total > dist->max_ns)
			dist->max_ns = total;
	}
}

/* Pops frame d-1 of a stack d deep at time `now`: charges it, records it,
 * resumes its parent. The caller owns st->depth. Open frames (flush) go
 * straight to the map. */
static __always_inline void pop_frame(struct usdtprof_thread_stack *st, __u32 d, __u64 now,
				      __u64 open, bool timed)
{
	struct usdtprof_frame *f, *parent = 0;
	__u64 self, total, end, func;

	if (d == 0 || d > USDTPROF_MAX_DEPTH)
		return;
	f = &st->frames[(d - 1) & FRAME_MASK];
	if (d > 1)
		parent = &st->frames[(d - 2) & FRAME_MASK];
	/* A flush at close_ns never comes before a frame's last resume (hits
	 * after the close charge nothing); should it, the frame ends at that
	 * resume, so its total still covers its self time and its children's. */
	end = now > f->resume ? now : f->resume;
	self = f->self + (end - f->resume);
	total = end - f->start;
	if (parent)
		parent->resume = end;
	else
		st->idle_since = end;
	/* Inside an [other] frame, the frame's time is already within its
	 * caller's inclusive time. */
	func = f->coarse ? USDTPROF_FUNC_OTHER : f->func;
	if (f->coarse == 2)
		total = 0;
	if (open) {
		struct usdtprof_path_slot t = {
			.path = f->path, .parent = f->parent, .func = func,
			.calls = 1, .self_ns = self, .total_ns = total, .self_offcpu_ns = f->offcpu,
		};
		add_to_map(&t, 0, st->tgid, 1);
		return;
	}
	/* A duration only from the frame's own exit: frames popped without
	 * theirs ended at some unknown time before now. */
	add_to_cache(st, f->path, f->parent, func, self, total, f->offcpu, timed && f->coarse != 2);
}

struct pop_ctx {
	struct usdtprof_thread_stack *st;
	__u64 now;
	__u32 depth;
	__u32 open;
};

static __always_inline void count_pair_mismatch(__u32 pair)
{
	__u64 one = 1, *n;

	if (!pair)
		return;
	n = bpf_map_lookup_elem(&pair_mismatches, &pair);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&pair_mismatches, &pair, &one, BPF_NOEXIST);
}

static long pop_one(__u32 i, void *data)
{
	struct pop_ctx *c = data;
	__u32 d = c->depth - i;

	/* Popped without its exit (open: still running at the stop). */
	if (!c->open && d > 0 && d <= USDTPROF_MAX_DEPTH)
		count_pair_mismatch((__u32)c->st->frames[(d - 1) & FRAME_MASK].pair);

	pop_frame(c->st, c->depth - i, c->now, c->open, false);
	return 0;
}

/* Pops the top n frames of a stack d deep. */
static __always_inline void pop_frames(struct usdtprof_thread_stack *st, __u32 d, __u32 n,
				       __u64 now, __u32 open)
{
	struct pop_ctx c = { .st = st, .depth = d, .now = now, .open = open };

	bpf_loop(n, pop_one, &c, 0);
}

static long flush_slot(__u32 i, void *data)
{
	struct usdtprof_thread_stack *st = ((struct pop_ctx *)data)->st;
	struct usdtprof_path_slot *slot = &st->cache[i & (USDTPROF_PATH_CACHE - 1)];

	if (slot->calls)
		add_to_map(slot, &st->dist[i & (USDTPROF_PATH_CACHE - 1)], st->tgid, 0);
	slot->path = 0;
	slot->calls = 0;
	return 0;
}

static __always_inline const struct usdtprof_probe_spec *probe_spec(struct pt_regs *ctx, __u32 *idx)
{
	*idx = bpf_get_attach_cookie(ctx);
	return bpf_map_lookup_elem(&probe_specs, idx);
}

/* The hit's function id (or task id). Native ids are one argument. */
static __always_inline __u64 hit_function(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
					  __u32 spec_index, struct usdtprof_thread_stack *st)
{
	if (spec->ident == USDTPROF_IDENT_NATIVE)
		return read_arg(ctx, &spec->args[0]);
	if (spec->ident == USDTPROF_IDENT_PAIR)
		return 0; /* its frame's: usdt_exit finds it */
	return runtime_function(ctx, spec, spec_index);
}

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

/* Off-CPU accounting. The sched_switch hook sees a thread leave and come
 * back; the kernel does not report every switch, though (seen on kernel
 * 6.18 under PVM: the switches away from some host-agent threads never
 * reach the tracepoint), so a thread can come back unseen. The scheduler
 * still stamps its arrival (sched_info.last_arrival, on the runqueue's
 * clock), which places the unseen return exactly. */

/* Per CPU: bpf_ktime_get_ns() minus the runqueue clock, as last measured in
 * the switch hook (where the runqueue clock has just been updated). The two
 * clocks run at the same rate, so an older offset still converts. */
#define USDTPROF_MAX_CPUS 1024 /* a power of two */
__s64 rq_clock_offset[USDTPROF_MAX_CPUS];
/* Switches back in that the kernel did not report, placed by arrival time. */
__u64 missed_switch_ins;

static __always_inline void note_rq_clock(struct task_struct *t, __u32 cpu, __u64 now)
{
	struct rq *rq = t->se.cfs_rq ? t->se.cfs_rq->rq : 0;
	__u64 clock = rq ? rq->clock : 0;

	if (clock)
		rq_clock_offset[cpu & (USDTPROF_MAX_CPUS - 1)] = (__s64)(now - clock);
}

/* Time away ends: charged to the innermost frame, up to the close (stop or
 * window) like self time, so a frame the iterator charges later never has
 * more off-CPU than self time. */
static __always_inline void end_offcpu(struct usdtprof_thread_stack *st, __u64 at)
{
	__u64 close = READ_ONCE(close_ns);

	if (close && at > close)
		at = close;
	if (at > st->switched_out) {
		if (st->depth > 0 && st->depth <= USDTPROF_MAX_DEPTH)
			st->frames[(st->depth - 1) & FRAME_MASK].offcpu += at - st->switched_out;
		else
			st->unknown_offcpu += at - st->switched_out;
	}
	st->switched_out = 0;
}

/* A thread marked out that is running (it hits a probe, or leaves its CPU
 * again) came back unseen, on this CPU, at its last arrival. With no
 * offset measured on this CPU yet, its time away is not charged. */
static __always_inline void place_missed_switch_in(struct usdtprof_thread_stack *st, struct task_struct *t,
						   __u32 cpu, __u64 now)
{
	__s64 offset = rq_clock_offset[cpu & (USDTPROF_MAX_CPUS - 1)];
	__u64 arrival = t->sched_info.last_arrival + offset;

	__sync_fetch_and_add(&missed_switch_ins, 1);
	if (!offset || arrival <= st->switched_out)
		arrival = st->switched_out;
	end_offcpu(st, arrival < now ? arrival : now);
}

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

/* The calling thread's stack, created on its first event. */
static __always_inline struct usdtprof_thread_stack *thread_stack(void)
{
	struct usdtprof_thread_stack *st = bpf_task_storage_get(
		&stacks, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!st) {
		count_anomaly(USDTPROF_ANOM_NO_STORAGE, 1);
		return 0;
	}
	if (!st->tgid) {
		struct task_struct *task = bpf_get_current_task_btf();
		char comm[16];

		st->tgid = bpf_get_current_pid_tgid() >> 32;
		st->idle_since = start_ns;
		if (!bpf_map_lookup_elem(&process_comms, &st->tgid)) {
			if (bpf_probe_read_kernel_str(comm, sizeof(comm), task->group_leader->comm) > 0)
				bpf_map_update_elem(&process_comms, &st->tgid, comm, BPF_NOEXIST);
			remember_title(st->tgid);
		}
	}
	return st;
}

/* What every hit does first: its probe's spec, the thread's stack, the
 * function (or task id), then the clock. The clock is read last, so creating
 * a thread's stack, capturing a name or hashing a query text is charged to
 * nobody. NULL when the probe is to do nothing. */
static __always_inline struct usdtprof_thread_stack *
begin_hit(struct pt_regs *ctx, const struct usdtprof_probe_spec **spec, __u64 *func, __u64 *now)
{
	struct usdtprof_thread_stack *st;
	__u32 spec_index;

	*spec = probe_spec(ctx, &spec_index);
	if (!*spec || READ_ONCE(paused))
		return 0;
	st = thread_stack();
	if (!st)
		return 0;
	*func = hit_function(ctx, *spec, spec_index, st);
	*now = bpf_ktime_get_ns();
	if (st->switched_out)
		place_missed_switch_in(st, bpf_get_current_task_btf(), bpf_get_smp_processor_id(), *now);
	/* Userspace sets `paused` before it reads close_ns from the clock: a hit
	 * whose clock reads later than close_ns sees it set here, so no time
	 * beyond the close is ever charged (a load, no helper). */
	if (READ_ONCE(paused))
		return 0;
	return st;
}

struct chain_ctx {
	struct usdtprof_thread_stack *st;
	__u64 parent, total;
	__u32 n;
};

static long record_chain_frame(__u32 i, void *data)
{
	struct chain_ctx *c = data;
	struct usdtprof_attach_frame *f;
	struct usdtprof_path_slot slot = {};

	if (i >= c->n)
		return 1;
	f = &c->st->attach_chain[(c->n - 1 - i) & (USDTPROF_ATTACH_CHAIN - 1)];
	slot.path = path_hash(c->parent, f->func);
	slot.parent = c->parent;
	slot.func = f->func;
	slot.calls = 1;
	slot.self_ns = f->self;
	slot.total_ns = c->total;
	slot.self_offcpu_ns = f->offcpu;
	add_to_map(&slot, 0, c->st->tgid, 0);
	c->parent = slot.path;
	c->total -= f->self < c->total ? f->self : c->total;
	return 0;
}

/* Records the thread's attach chain under its [running at attach] root,
 * outermost first, each frame's total its own self time plus its callee's
 * total: the tree adds up, and a thread's recorded time never exceeds the
 * time it was recorded. */
static __always_inline void record_attach_chain(struct usdtprof_thread_stack *st)
{
	struct chain_ctx c = { .st = st, .n = st->chain_len };
	struct usdtprof_path_slot root = {
		.path = path_hash(st->tgid, USDTPROF_FUNC_RUNNING_AT_ATTACH),
		.func = USDTPROF_FUNC_RUNNING_AT_ATTACH,
	};
	__u32 i;

	if (c.n == 0 || c.n > USDTPROF_ATTACH_CHAIN)
		return;
	for (i = 0; i < USDTPROF_ATTACH_CHAIN && i < c.n; i++)
		root.total_ns += st->attach_chain[i].self;
	c.total = root.total_ns;
	c.parent = root.path;
	add_to_map(&root, 0, st->tgid, 0);
	bpf_loop(USDTPROF_ATTACH_CHAIN, record_chain_frame, &c, 0);
	st->chain_len = 0;
}

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

/* NESTS_SITE: a frame entered at site S with stack pointer P is proved gone
 * by a later entry at the same site S whose stack pointer lies above P (the
 * code at S runs in a frame above the one that held the frame: that one has
 * returned, even when S is in an out-of-line helper such as
 * usdtprof::Scope's constructor), or at P with the same function (the same
 * code entered again from the same frame: not a recursion, which lies
 * below). Other sites prove nothing: a site in an out-of-line helper records
 * a stack pointer below the frame it times, which a callee of that frame can
 * lie above.
 *
 * NESTS_CALLER (HotSpot): only an entry of the same function from the same
 * code at the same stack pointer proves a frame gone (a call from the same
 * frame again). A higher stack pointer proves nothing: a JVM moves live
 * frames (on-stack replacement swaps an interpreted frame for a smaller
 * compiled one, whose callees lie above the old frame's entry), and C1
 * inlines a callee, its probe called from the caller's frame at the
 * caller's stack pointer (a recursion inlined once included), from other
 * code. */
struct dead_ctx {
	struct usdtprof_thread_stack *st;
	__u64 sp, site, func;
	__u32 depth, dead, caller;
};

static long find_dead(__u32 i, void *data)
{
	struct dead_ctx *c = data;
	struct usdtprof_frame *f;

	if (i >= c->depth)
		return 1;
	f = &c->st->frames[(c->depth - 1 - i) & FRAME_MASK];
	if (!f->sp || f->site != c->site)
		return 0;
	if (c->sp == f->sp ? f->func == c->func : c->sp > f->sp && !c->caller)
		c->dead = i + 1; /* the outermost proof wins: frames above it are its callees */
	return 0;
}

/* Before an entry of a probe that nests on the native stack: frames left
 * without their exit (longjmp, an exception, an early return) that the
 * entry proves gone are popped now, charged up to now, with one
 * exit_mismatch for the repair. Returns the depth left. The search runs only
 * when the entry's stack pointer is not below the top frame's (a callee's
 * always is). */
static __always_inline __u32 pop_dead_frames(struct usdtprof_thread_stack *st, __u32 d, __u64 sp, __u64 site,
					     __u32 nests, __u64 func, __u64 now)
{
	struct dead_ctx c = { .st = st, .sp = sp, .site = site, .func = func, .depth = d,
			      .caller = nests == USDTPROF_NESTS_CALLER };
	struct usdtprof_frame *top;

	if (d == 0 || d > USDTPROF_MAX_DEPTH || st->overflow)
		return d;
	top = &st->frames[(d - 1) & FRAME_MASK];
	if (!top->sp || sp < top->sp)
		return d;
	bpf_loop(USDTPROF_MAX_DEPTH, find_dead, &c, 0);
	if (c.dead == 0 || c.dead > d)
		return d;
	count_anomaly(USDTPROF_ANOM_EXIT_MISMATCH, 1);
	pop_frames(st, d, c.dead, now, 0);
	st->depth = d - c.dead;
	return d - c.dead;
}

/* What tells an entry's code apart (see find_dead): the probe's address, or
 * for NESTS_CALLER the return address of the runtime's helper, read through
 * its frame pointer (with bit 63 set); 0 if that cannot be read. */
static __always_inline __u64 entry_site(struct pt_regs *ctx, __u32 nests)
{
	__u64 bp, sp, ret = 0;

	if (nests != USDTPROF_NESTS_CALLER)
		return CTX_LOAD(ip);
	bp = CTX_LOAD(bp);
	sp = CTX_LOAD(sp);
	/* A frame pointer points into the helper's own (small) frame. */
	if (bp < sp || bp - sp > 4096 || bpf_probe_read_user(&ret, sizeof(ret), (void *)(bp + 8)) || !ret)
		return 0;
	return ret | (1ULL << 63);
}

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
		parent_path = 0;
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
	f->path = path_hash(parent_path ? parent_path : st->tgid, func); /* roots are per process */
	f->coarse = 0;
	if (d > 0 && spec->role != USDTPROF_ROLE_TASK_BEGIN && st->frames[(d - 1) & FRAME_MASK].coarse) {
		/* Below a frame without its own path: in the same [other]. */
		f->path = st->frames[(d - 1) & FRAME_MASK].path;
		f->parent = st->frames[(d - 1) & FRAME_MASK].parent;
		f->coarse = 2;
	} else if (!claim_path(st, f->path, parent_path, func)) {
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
	f->sp = site ? sp : 0;
	f->site = site;
	f->pair = spec->pair;
	st->depth = d + 1;
	return 0;
}

/* The exit of a function entered before the probes were attached: it has
 * been the innermost probed frame whenever the stack was empty since the
 * previous such exit, whose caller it is. Kept in the thread's attach chain
 * until the stack is flushed (a full chain is recorded first and restarts). */
static __always_inline void exit_running_at_attach(struct usdtprof_thread_stack *st, __u64 func,
						   __u64 now)
{
	struct usdtprof_attach_frame *c;
	__u32 n = st->chain_len;

	if (n >= USDTPROF_ATTACH_CHAIN) {
		record_attach_chain(st);
		n = 0;
	}
	c = &st->attach_chain[n & (USDTPROF_ATTACH_CHAIN - 1)];
	c->func = func;
	c->self = st->unknown_self + (now - st->idle_since);
	c->offcpu = st->unknown_offcpu;
	st->chain_len = n + 1;
	st->unknown_self = 0;
	st->unknown_offcpu = 0;
	st->idle_since = now;
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
		add_to_cache(st, path_hash(marker, func), marker, func, 0, 0, 0, false);
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
static __always_inline void drain_stack(struct usdtprof_thread_stack *st, struct task_struct *t)
{
	struct pop_ctx c = { .st = st };
	__u32 d = st->depth;
	__u64 close = READ_ONCE(close_ns), now = close ? close : bpf_ktime_get_ns();

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
	st->idle_since = now;
	record_attach_chain(st);
	bpf_loop(USDTPROF_PATH_CACHE, flush_slot, &c, 0);
}

/* The flag claims the stack, so the thread-exit hook and the stop iterator
 * never flush it twice. */
static __always_inline void flush_stack(struct usdtprof_thread_stack *st, struct task_struct *t)
{
	if (!__sync_lock_test_and_set(&st->flushed, 1))
		drain_stack(st, t);
}

/* exec replaces the program: the frames of the old one end there (as open
 * activations) instead of lasting until the new program exits. Runs in the
 * execing thread, so no probe of it runs meanwhile. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(flush_on_exec, struct task_struct *task)
{
	struct usdtprof_thread_stack *st = bpf_task_storage_get(&stacks, task, 0, 0);

	if (st && !st->flushed)
		drain_stack(st, task);
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
	__u64 now;

	if (!out && !(in && in->switched_out))
		return 0;
	now = bpf_ktime_get_ns(); /* one clock read serves both sides */
	cpu = bpf_get_smp_processor_id();
	note_rq_clock(out ? prev : next, cpu, now);
	if (out) {
		/* Still marked out: the switch that brought it back was not
		 * reported; it has been running here since its arrival. */
		if (out->switched_out)
			place_missed_switch_in(out, prev, cpu, now);
		out->switched_out = now;
	}
	if (in && in->switched_out)
		end_offcpu(in, now);
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

static __always_inline __u32 span_bucket(__u64 ns)
{
	__u64 v = ns;
	__u32 m = 0;

	if (ns < 4)
		return (__u32)ns;
	if (v >> 32) { m += 32; v >>= 32; }
	if (v >> 16) { m += 16; v >>= 16; }
	if (v >> 8) { m += 8; v >>= 8; }
	if (v >> 4) { m += 4; v >>= 4; }
	if (v >> 2) { m += 2; v >>= 2; }
	if (v >> 1) { m += 1; }
	return ((m << 2) | (__u32)((ns >> (m - 2)) & 3)) & (USDTPROF_SPAN_BUCKETS - 1);
}

static __always_inline struct usdtprof_span_stats *span_stats_of(struct usdtprof_span_key *key)
{
	struct usdtprof_span_stats *s = bpf_map_lookup_elem(&span_stats, key);
	__u32 zero = 0;
	void *blank;

	if (s)
		return s;
	blank = bpf_map_lookup_elem(&span_zero, &zero);
	if (!blank)
		return 0;
	bpf_map_update_elem(&span_stats, key, blank, BPF_NOEXIST);
	return bpf_map_lookup_elem(&span_stats, key);
}

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
		if (!READ_ONCE(paused))
			bpf_map_update_elem(&span_starts, &open, &now, BPF_ANY);
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
