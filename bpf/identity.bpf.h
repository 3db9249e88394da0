/* SPDX-License-Identifier: GPL-2.0 */
/* Which probe fired and which function it names: native ids are an argument;
 * runtime functions are keyed by their arguments' values or content (hashes
 * of strings, of a query's shape, a derived object's field), and their names
 * captured the first time each process shows them. */
#ifndef USDTPROF_IDENTITY_BPF_H
#define USDTPROF_IDENTITY_BPF_H

#include "maps.bpf.h"
#include "args.bpf.h"
#include "hash.bpf.h"
#include "content.bpf.h"
#include "sql.bpf.h"

static __noinline __u64 sql_hash(__u64 text)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	long n;

	if (!s)
		return 0;
	n = bpf_probe_read_user_str(s->sql, sizeof(s->sql), (void *)text);
	if (n <= 0)
		return 0;
	return sql_shape_hash(s->sql, n);
}

/* FNV-1a of the NUL-terminated string at addr (its first USDTPROF_CONTENT_MAX
 * bytes); with anon, of a text starting with '#' ("#<Class:0x...>", Ruby's
 * name of a class without one) without its addresses' digits. Global, so
 * the verifier checks it once, not once per state of each caller: its loop
 * step takes several characters. */
__noinline __u64 content_hash(__u64 addr, __u32 anon)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	long n;

	if (!s)
		return 0;
	n = bpf_probe_read_user_str(s->sql, USDTPROF_CONTENT_MAX, (void *)addr);
	return content_text_hash(s->sql, n, anon);
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
		return path_hash(content_hash(v, false), string_prefix(v));
	return content_hash(v, spec->content_mask & USDTPROF_CONTENT_ANON(i));
}

static __always_inline __u64 read_user_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* The first `owner` + 8 bytes of an object (a method entry or a special-
 * variable slot: both keep their flags first), in one read; false when the
 * offsets are not within 40 bytes (no method entry of Ruby 3.1's layout). */
static __always_inline bool read_entry(const struct usdtprof_derived *d, __u64 at, __u64 *w)
{
	__u32 n = d->owner;

	if (n > 32 || d->svar_me < 0 || d->svar_me > n)
		return false;
	return !bpf_probe_read_user(w, n + 8, (void *)at);
}

/* The owner of the method entry me (USDTPROF_DERIVED_OWNER), or of the one
 * a special-variable slot in its place holds; 0 when it is no method entry. */
static __always_inline __u64 entry_owner(const struct usdtprof_derived *d, __u64 me)
{
	__u64 w[5] = {};
	__u32 svar_me = d->svar_me >> 3, owner = d->owner >> 3;

	if (!me || svar_me > 4 || owner > 4 || !read_entry(d, me, w))
		return 0;
	if ((w[0] & d->imemo_mask) == d->imemo_svar) {
		me = w[svar_me];
		if (!me || !read_entry(d, me, w))
			return 0;
	}
	if ((w[0] & d->imemo_mask) != d->imemo_ment)
		return 0;
	return w[owner];
}

/* The owner of the method running on the execution context ec, 0 when what
 * is found is no method entry. */
static __always_inline __u64 method_owner(const struct usdtprof_derived *d, __u64 ec)
{
	__u64 frame, ep;

	if (!ec || !(frame = read_user_u64(ec + d->object)) || !(ep = read_user_u64(frame + d->ep)))
		return 0;
	return entry_owner(d, read_user_u64(ep + d->me));
}

/* USDTPROF_DERIVED_OWNER: whether the method the probe names is its class's
 * singleton method, given the class and its singleton class; 0 when what
 * the site leads to (d->from: through the execution context in either
 * register, or a method entry or execution context in a register or stack
 * slot chosen for this site) is no method entry whose owner is the class or
 * its singleton class. */
static __always_inline __u64 owner_verdict_of(struct pt_regs *ctx, const struct usdtprof_derived *d, __u64 klass,
					      __u64 singleton)
{
	__u64 owner, base;

	if (!klass)
		return 0;
	base = reg_value(ctx, d->reg);
	if (d->from == USDTPROF_FROM_SLOT_ENTRY || d->from == USDTPROF_FROM_SLOT_EC)
		base = read_user_u64(base + d->slot);
	if (d->from == USDTPROF_FROM_ENTRY || d->from == USDTPROF_FROM_SLOT_ENTRY) {
		owner = entry_owner(d, base);
	} else {
		owner = method_owner(d, base);
		if (d->from == USDTPROF_FROM_EC && d->reg2 != d->reg && (!owner || (owner != klass && owner != singleton)))
			owner = method_owner(d, reg_value(ctx, d->reg2));
	}
	if (owner && owner == singleton)
		return USDTPROF_OWNER_SINGLETON;
	if (owner && owner == klass)
		return USDTPROF_OWNER_CLASS;
	return 0;
}

/* owner_verdict_of, the class read from args[proof_arg]. */
static __always_inline __u64 owner_verdict(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec)
{
	const struct usdtprof_derived *d = &spec->derived;
	__u64 klass = read_arg_slow(ctx, &spec->args[d->proof_arg & (USDTPROF_MAX_IDENT_ARGS - 1)]);

	if (!klass)
		return 0;
	return owner_verdict_of(ctx, d, klass, read_user_u64(klass + d->value));
}

/* The derived identity of a hit (spec->derived): its value, 0 when the spec
 * has none or the object reached does not prove to be the one the arguments
 * came from (another build keeps it elsewhere, a string not in its compact
 * form); the object's first line where the spec reads one; and the caller's
 * function id where the object's code flags have none of function_flags. */
struct derived_hit {
	__u64 value;
	__u64 line;
	__u64 caller;
	__u64 func_qualname; /* 0 unless the function's name object is not the code's */
	__u64 made_up;       /* made_up_name_hash's, for a spec that reads a function object */
	__u64 ident;         /* owner_identity's: the id before the verdict; 0: not found so */
	__u64 whole;         /* owner_identity's at an exit of the top frame's call: its id */
};

/* A spec with d->func_qualname: the object's pointer and the function
 * object running it, from the base in one read. */
static __always_inline int code_and_function(struct pt_regs *ctx, const struct usdtprof_derived *d, __u64 *object,
					     __u64 *func)
{
	__u64 words[8] = {}; /* 48 bytes read, a power of two to index */
	__u32 at = (__u32)(d->object - d->func) / 8;

	if (bpf_probe_read_user(words, 6 * sizeof(words[0]), (void *)(reg_value(ctx, d->reg) + d->func)))
		return -1;
	*object = words[at & 7];
	*func = words[0];
	return 0;
}

/* The function object's qualified name when it is not the code's own (the
 * code's qualname at `code_qualname`) and the function runs that code. */
static __always_inline __u64 renamed_qualname(const struct usdtprof_derived *d, __u64 func, __u64 object,
					      __u64 code_qualname)
{
	__u64 named[2]; /* func_qualname, then func_code */

	if (!func || bpf_probe_read_user(named, sizeof(named), (void *)(func + d->func_qualname)))
		return 0;
	return named[1] == object && named[0] != code_qualname ? named[0] : 0;
}

/* A field of the derived object's window, at off bytes into the object; 0
 * when it is not within the window. */
static __always_inline __u64 window_u64(const __u8 *w, __s32 off, __s32 window)
{
	__u32 i = (__u32)(off - window);

	if (i > USDTPROF_DERIVED_WINDOW - sizeof(__u64))
		return 0;
	return *(const __u64 *)(w + i);
}

static __always_inline __u32 window_u32(const __u8 *w, __s32 off, __s32 window)
{
	__u32 i = (__u32)(off - window);

	if (i > USDTPROF_DERIVED_WINDOW - sizeof(__u32))
		return 0;
	return *(const __u32 *)(w + i);
}

/* The function id of the frame a hit's function was called from: the
 * thread's top frame at an entry, the one below it at an exit (the exit's
 * own frame on top); 0 at the root or below a synthetic frame. */
static __always_inline __u64 caller_function(const struct usdtprof_probe_spec *spec,
					     const struct usdtprof_thread_stack *st)
{
	__u32 d = st->depth, below = spec->role == USDTPROF_ROLE_EXIT ? 2 : 1;
	__u64 func;

	if (d < below || d > USDTPROF_MAX_DEPTH)
		return 0;
	func = st->frames[(d - below) & FRAME_MASK].func;
	return func < 16 ? 0 : func;
}

/* Whether a file name (its first 8 bytes) is one made up for exec()'d or
 * eval()'d text ("<string>", "<timeit-src>"), not a frozen module's. */
static __always_inline bool made_up_file(const char *f)
{
	return f[0] == '<' && !(f[1] == 'f' && f[2] == 'r' && f[3] == 'o' && f[4] == 'z' && f[5] == 'e' &&
				f[6] == 'n' && f[7] == ' ');
}

/* Code of a made-up file ("<string>", not "<frozen ...>": exec()'d or
 * eval()'d text) is made and freed as the program runs, and the allocator
 * gives a new code object, function and name the addresses of the ones
 * freed last: `exec(f"def f{i}(): ...")` in a loop gave f7 the id of f3,
 * every pointer hashed being the same. Such code is keyed by its name's
 * text too (the one captured: the function's where it was renamed), up to
 * 48 bytes; 0 for other code, or a name not in the inline form. file: the
 * probe's file argument. */
static __noinline __u64 made_up_name_hash(const struct usdtprof_probe_spec *spec, const struct derived_hit *derived,
					  __u64 file)
{
	const struct usdtprof_derived *d = &spec->derived;
	__u64 name = derived->func_qualname ?: derived->value, h = 0, *w;
	__u32 zero = 0;
	struct scratch *s;
	char f[8];
	int i;

	if (!name || bpf_probe_read_user(f, sizeof(f), (void *)file) || !made_up_file(f))
		return 0;
	s = bpf_map_lookup_elem(&scratch, &zero);
	/* The string's state byte and, 16 bytes on, its text (CPython's compact ASCII). */
	if (!s || d->text - d->flags != 16 ||
	    bpf_probe_read_user(s->window, 64, (void *)(name + d->flags)) ||
	    (s->window[0] & d->flag_mask) != d->flag_mask)
		return 0;
	w = (__u64 *)(s->window + 16);
	for (i = 0; i < 6; i++)
		h = path_hash(h, w[i]);
	return h ?: 1;
}

/* Global (verified once, on its own): verified in each caller's context, its
 * branches multiplied the entry and exit programs' states, and their load
 * took ~0.5 s (idle) to ~2.5 s (loaded) more at every start. Returns 0. */
__noinline int derived_value(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
			      const struct usdtprof_thread_stack *st, struct derived_hit *hit)
{
	const struct usdtprof_derived *d;
	__u32 zero = 0;
	struct scratch *s;
	__u64 object, func = 0;
	__s32 line = 0;

	if (!spec || !st || !hit)
		return 0;
	d = &spec->derived;
	hit->value = 0;
	hit->line = 0;
	hit->caller = 0;
	hit->func_qualname = 0;
	hit->made_up = 0;
	hit->ident = 0;
	if (!d->used)
		return 0;
	if (d->kind == USDTPROF_DERIVED_OWNER) {
		hit->value = owner_verdict(ctx, spec);
		return 0;
	}
	if (d->func_qualname) {
		/* Read by known_code, into the thread's slot for the code. */
		if (st->code_slot >= USDTPROF_CODE_CACHE)
			return 0;
		object = st->code_hit.code;
		func = st->code_hit.func;
	} else if (bpf_probe_read_user(&object, sizeof(object), (void *)(reg_value(ctx, d->reg) + d->object))) {
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s || !object || bpf_probe_read_user(s->window, sizeof(s->window), (void *)(object + d->window)))
		return 0;
	if (window_u64(s->window, d->proof, d->window) + d->text !=
	    read_arg_slow(ctx, &spec->args[d->proof_arg & (USDTPROF_MAX_IDENT_ARGS - 1)]))
		return 0;
	hit->value = window_u64(s->window, d->value, d->window);
	hit->func_qualname = renamed_qualname(d, func, object, hit->value);
	if (d->first_line)
		line = (__s32)window_u32(s->window, d->first_line, d->window);
	hit->line = line > 0 ? line : 0;
	if (d->code_flags && !(window_u32(s->window, d->code_flags, d->window) & d->function_flags))
		hit->caller = caller_function(spec, st);
	/* Last: it reads into the scratch window too. */
	if (d->func_qualname)
		hit->made_up = made_up_name_hash(spec, hit, read_arg_slow(ctx, &spec->args[0]));
	return 0;
}

/* Marks a class serial in a code_ids slot: no code object's function
 * pointer (CPython's use of the slots) has the top bit set. */
#define OWNER_SERIAL_TAG (1ull << 63)

/* A class name's hash (content_hash), and whether a thread may keep it for
 * its class: a name that starts with neither '#' (a class without a name,
 * or inside one: "#<Class:0x...>", which becomes "Foo" once assigned to a
 * constant) nor '<' ("<unknown>"). Ruby 3.1 never changes a class's name
 * otherwise: `__classpath__`, once set, stays. */
static __always_inline __u64 class_name_hash(__u64 name, bool anon, bool *keep)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	__u64 h;

	*keep = false;
	if (!s)
		return 0;
	/* A class without a name, in one fixed-size read (it fails only for
	 * a text near the end of its page: then hashed as any other). */
	if (anon && !bpf_probe_read_user(s->sql, ANON_NAME_READ, (void *)name) && anonymous_name_hash(s->sql, &h))
		return h;
	h = content_hash(name, anon);
	if (h == FNV_OFFSET)
		return h; /* unreadable or empty */
	*keep = s->sql[0] != '#' && s->sql[0] != '<';
	return h;
}

/* Whether a hit is an exit whose call (st->hit_call) is its thread's top
 * frame's, as its entry showed it: then *func is that frame's function id,
 * nothing more read. Ruby's signature is the class and the method name's pointer, the
 * same at a call's entry and exit (the class's name is not: Ruby makes it
 * anew, and a class without one can get one meanwhile); only a method of
 * the same name of the class's singleton (Util.twice beside Util#twice),
 * whose entry was not seen, could show another's. PHP's is every argument
 * (function, class, file, line: the same at the return), its strings alive
 * while the call is. CPython's is its frame's address, file and name
 * (known_code). A thread past the tracked depth has no frame for the
 * call. */
static __always_inline bool exit_of_top_call(const struct usdtprof_probe_spec *spec,
					     struct usdtprof_thread_stack *st, __u64 *func)
{
	__u32 d = st->depth;
	const struct usdtprof_frame *top;

	if (spec->role != USDTPROF_ROLE_EXIT || d == 0 || d > USDTPROF_MAX_DEPTH || st->overflow)
		return false;
	top = &st->frames[(d - 1) & FRAME_MASK];
	if (top->sp || !top->call || top->call != st->hit_call)
		return false;
	*func = top->func;
	return true;
}

/* USDTPROF_DERIVED_OWNER with its arguments together (usdtprof_owner_args_together)
 * and a class serial: the hit's id before the verdict (hit->ident, 0 when
 * not found so: the caller hashes as before) and the verdict (hit->value),
 * in six user-memory reads where a known class's hit made eleven and read
 * and hashed its name: the arguments in one read, the class's first 40
 * bytes (its singleton class and serial), the execution context's way to
 * the method entry (three) and the entry's flags and owner (one). A thread
 * keeps each class's name hash in its code_ids slots, keyed by the class's
 * address and serial: a class's serial is never another's (Ruby counts
 * them up), so a class freed and another made at its address misses.
 * Global: verified once, on its own. Returns 0. */
__noinline int owner_identity(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
			      struct usdtprof_thread_stack *st, struct derived_hit *hit)
{
	const struct usdtprof_derived *d;
	__u64 args[5] = {}, cls[5] = {}, klass, singleton, serial, name_hash;
	struct usdtprof_code_id *slot;
	__u32 k, n, value, serial_at;
	bool keep;

	if (!spec || !st || !hit)
		return 0;
	hit->ident = 0;
	hit->value = 0;
	hit->whole = 0;
	d = &spec->derived;
	if (!usdtprof_owner_args_together(spec))
		return 0;
	k = d->klass;
	value = d->value;
	serial_at = d->class_serial;
	if (k < 16 || k > 32 || value > 32 || serial_at > 32)
		return 0;
	n = value > serial_at ? value : serial_at;
	if (bpf_probe_read_user(args, k + 8, (void *)(reg_value(ctx, spec->args[0].reg) + spec->args[0].offset)))
		return 0;
	klass = args[k >> 3];
	if (!klass)
		return 0;
	st->hit_call = path_hash(klass, args[1]) | 1;
	if (exit_of_top_call(spec, st, &hit->whole))
		return 0;
	if (bpf_probe_read_user(cls, n + 8, (void *)klass))
		return 0;
	singleton = cls[value >> 3];
	serial = cls[serial_at >> 3] | OWNER_SERIAL_TAG;
	slot = &st->code_ids[((klass >> 3) ^ (klass >> 11)) & (USDTPROF_CODE_CACHE - 1)];
	if (slot->code == klass && slot->func == serial) {
		name_hash = slot->id;
	} else {
		name_hash = class_name_hash(args[0], spec->content_mask & USDTPROF_CONTENT_ANON(0), &keep);
		if (keep) {
			slot->code = klass;
			slot->func = serial;
			slot->name = 0;
			slot->id = name_hash;
		}
	}
	hit->value = owner_verdict_of(ctx, d, klass, singleton);
	hit->ident = path_hash(name_hash, args[1]);
	return 0;
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
					 const struct usdtprof_name_part *part, const struct derived_hit *derived,
					 struct usdtprof_name *n, int i)
{
	__u64 len;
	void *src;

	n->text[i][0] = 0;
	n->num[i] = 0;
	if (part->type == USDTPROF_PART_NONE)
		return;
	if (part->type == USDTPROF_PART_DERIVED) {
		capture_derived(&spec->derived,
				derived->func_qualname && made_up_file(n->text[0]) ? derived->func_qualname : derived->value,
				n->text[i]);
		n->num[i] = derived->line;
		return;
	}
	if (part->type == USDTPROF_PART_INT) {
		n->num[i] = read_arg_slow(ctx, &part->arg);
		return;
	}
	src = (void *)read_arg_slow(ctx, &part->arg);
	if (part->type == USDTPROF_PART_STR || part->type == USDTPROF_PART_STR_PREFIXED ||
	    part->type == USDTPROF_PART_STR_VERDICT || part->type == USDTPROF_PART_STR_CALLER) {
		bpf_probe_read_user_str(n->text[i], USDTPROF_NAME_LEN, src);
		if (part->type == USDTPROF_PART_STR_PREFIXED)
			n->num[i] = string_prefix((__u64)src);
		if (part->type == USDTPROF_PART_STR_VERDICT)
			n->num[i] = derived->value;
		if (part->type == USDTPROF_PART_STR_CALLER)
			n->num[i] = derived->caller;
		return;
	}
	len = read_arg_slow(ctx, &part->len);
	if (len > USDTPROF_NAME_LEN - 1)
		len = USDTPROF_NAME_LEN - 1;
	if (bpf_probe_read_user(n->text[i], len, src))
		len = 0;
	n->text[i][len] = 0;
}

/* The first time a process shows a function, its name parts are read and
 * kept: the strings may be gone by the time userspace reads the profile.
 * True when the name is kept (now or before). */
static __noinline bool capture_name(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec, __u32 spec_index,
				    __u64 func, const struct derived_hit *derived)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct usdtprof_name_key key = { .func = func, .tgid = tgid };
	struct process_usage *u;
	__u32 zero = 0;
	struct scratch *s;
	bool full;

	if (bpf_map_lookup_elem(&names, &key))
		return true;
	u = usage_of(tgid, &full);
	if (full || (u && name_share && u->names >= name_share))
		return false;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return false;
	s->name.spec = spec_index;
	s->name.pad = 0;
	capture_part(ctx, spec, &spec->parts[0], derived, &s->name, 0);
	capture_part(ctx, spec, &spec->parts[1], derived, &s->name, 1);
	capture_part(ctx, spec, &spec->parts[2], derived, &s->name, 2);
	capture_part(ctx, spec, &spec->parts[3], derived, &s->name, 3);
	if (bpf_map_update_elem(&names, &key, &s->name, BPF_NOEXIST))
		return false;
	if (u)
		__sync_fetch_and_add(&u->names, 1);
	return true;
}

/* The id of the function a hit's identity arguments name (and its derived
 * value), from their values and the content of the strings they point to. */
static __always_inline __u64 hash_ident_args(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec)
{
	__u64 h = ident_arg(ctx, spec, 0);

	if (spec->nargs > 1)
		h = path_hash(h, ident_arg(ctx, spec, 1));
	if (spec->nargs > 2)
		h = path_hash(h, ident_arg(ctx, spec, 2));
	if (spec->nargs > 3)
		h = path_hash(h, ident_arg(ctx, spec, 3));
	return h;
}

/* A PHP hit's arguments other than the function name (args[0], the slot's
 * code), mixed: the slot's func. */
static __always_inline __u64 ident_args_mix(const struct ident_cache_key *key)
{
	return path_hash(path_hash(path_hash(key->content_mask, key->args[1]), key->args[2]), key->args[3]);
}

static __always_inline __u32 ident_slot_index(__u64 args_mix, __u64 name)
{
	return (path_hash(args_mix, name) >> 32) & (USDTPROF_CODE_CACHE - 1);
}

/* Text bytes a string check reads (after the 24 before the string). */
#define CHECK_TEXT 24

/* IS_STR_INTERNED (GC_IMMUTABLE, 1 << 6) in a zend_string's gc.u.type_info,
 * the upper half of its first word (PHP 7.3 and later). */
#define ZEND_STR_INTERNED (1ull << (32 + 6))

/* The 24 bytes before a string (a zend_string's flags, hash h and length) and
 * its first CHECK_TEXT bytes, in one read, mixed into *digest by FNV-1a's
 * step on 64-bit words (for a given word a bijection: two reads that differ
 * in one word never mix alike); the text's bytes from its length on are left
 * out (what follows a short string is other memory, which changes). False
 * when the digest proves nothing: unreadable, or a zero hash (PHP has not
 * computed it: methods' names) on a text longer than the bytes read. A zero
 * first byte is an empty literal ("", no class): read-only, it proves
 * itself. Sets bit in *interned (unless NULL) when PHP has interned it
 * (freed only when its request ends). */
static __always_inline bool string_digest(__u64 addr, __u64 *digest, __u32 *interned, int bit)
{
	__u64 w[3 + CHECK_TEXT / 8] = {}, len, c = FNV_OFFSET;
	int k;

	if (bpf_probe_read_user(w, sizeof(w), (void *)(addr - 24)))
		return false;
	len = w[2];
	for (k = 0; k < CHECK_TEXT / 8; k++) {
		__u64 t = w[3 + k];

		if (len <= 8 * k)
			t = 0;
		else if (len < 8 * k + 8)
			t &= (1ull << (8 * (len - 8 * k))) - 1;
		c = (c ^ t) * FNV_PRIME;
	}
	*digest = (((c ^ w[1]) * FNV_PRIME) ^ len) * FNV_PRIME;
	if (interned)
		*interned |= (__u32)((w[0] & ZEND_STR_INTERNED) >> (32 + 6)) << bit;
	return w[1] || !(__u8)w[3] || len <= CHECK_TEXT;
}

/* Whether a string lies within [lo, hi), the thread's program's code and
 * read-only data up to its last (data) segment (a literal: "", "main"),
 * which cannot change until an exec (which empties the thread's slots and
 * range): for the thread's slots its address is its check, nothing read. */
static __always_inline bool in_text(__u64 addr, __u64 lo, __u64 hi)
{
	return addr - 24 >= lo && addr < hi && addr + CHECK_TEXT <= hi;
}

/* A thread's slot for a PHP function keeps in its code's top byte which of
 * the strings it pinned (USDTPROF_CONTENT_PINNED): user addresses are below
 * 2^47, so a pinned slot never matches an unpinned lookup, nor CPython's or
 * Ruby's. */
#define PIN_SHIFT 56
#define PIN_ADDRESS ((1ull << PIN_SHIFT) - 1)

/* The digests of a hit's content-keyed strings (into st->ident_digest),
 * but of those within the program's text or in pins. False when one proves
 * nothing; st->ident_interned: the strings read that PHP has interned.
 * Global (verified once, on its own), as slot_check: verified at each of
 * their calls, the entry program passed the verifier's million instructions. */
__noinline int read_digests(const struct usdtprof_probe_spec *spec, struct usdtprof_thread_stack *st,
			    const struct ident_cache_key *key, __u32 pins)
{
	bool proves = true;
	int i;

	if (!spec || !st || !key)
		return 0;
	st->ident_interned = 0;
	for (i = 0; i < USDTPROF_MAX_IDENT_ARGS; i++) {
		if (i >= spec->nargs)
			break;
		if (!(spec->content_mask & (1u << i)) || (pins & (1u << i)))
			continue;
		st->ident_digest[i] = 0;
		if (in_text(key->args[i], st->text_lo, st->text_hi))
			continue;
		if (!string_digest(key->args[i], &st->ident_digest[i], &st->ident_interned, i))
			proves = false;
	}
	return proves;
}

/* A thread slot's check: each content-keyed string within the program's
 * text or pinned by its address, the others by their digest (read_digests);
 * pinned ones only while the thread's names_epoch stays. */
__noinline __u64 slot_check(const struct usdtprof_probe_spec *spec, const struct usdtprof_thread_stack *st,
			    const struct ident_cache_key *key, __u32 pins)
{
	__u64 c;
	int i;

	if (!spec || !st || !key)
		return 0;
	c = pins ? path_hash(FNV_OFFSET, st->names_epoch) : FNV_OFFSET;
	for (i = 0; i < USDTPROF_MAX_IDENT_ARGS; i++) {
		if (i >= spec->nargs)
			break;
		if (!(spec->content_mask & (1u << i)))
			continue;
		if ((pins & (1u << i)) || in_text(key->args[i], st->text_lo, st->text_hi))
			c = (c ^ key->args[i]) * FNV_PRIME;
		else
			c = (c ^ st->ident_digest[i]) * FNV_PRIME;
	}
	return c;
}

/* A known function's id from the thread's slot that pinned some of its
 * strings, reading only the others; 0 when the slot does not hold it. */
static __always_inline __u64 pinned_slot_id(const struct usdtprof_probe_spec *spec, struct usdtprof_thread_stack *st,
					    const struct ident_cache_key *key, __u64 args_mix)
{
	const struct usdtprof_code_id *slot = &st->code_ids[ident_slot_index(args_mix, key->args[0])];
	__u32 pins = slot->code >> PIN_SHIFT;

	if (!pins || (slot->code & PIN_ADDRESS) != key->args[0] || slot->func != args_mix || !slot->id)
		return 0;
	if (!read_digests(spec, st, key, pins) || slot_check(spec, st, key, pins) != slot->name)
		return 0;
	return slot->id;
}

/* USDTPROF_CONTENT_CACHED: hash_ident_args() through the thread's code_ids
 * slots, then the process's cache, both keyed by the arguments' values and
 * checked against the words read around each string (string_digest, 64 bits
 * as ids are): a name freed and its address reused for another text shows
 * other bytes, a miss. A thread's slot (code: the function name's address;
 * func: the other arguments, mixed; name: the check; id) costs no process
 * id and no map lookup, and reads no literal of the thread's program (its
 * range kept in the thread's stack since its first hit in the program)
 * nor, with USDTPROF_CONTENT_PINNED, a string PHP had interned when the
 * slot was filled (pinned_slot_id); the process's cache outlives an exec, so
 * its check takes every string's digest: read once for both levels,
 * literals read only on a slot's miss. */
static __noinline __u64 cached_ident_args(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
					  struct usdtprof_thread_stack *st, bool *whole)
{
	struct ident_cache_key key = { .content_mask = spec->content_mask };
	struct ident_cache_value seen = {}, *known;
	struct usdtprof_code_id *slot;
	bool cacheable, process_cacheable;
	__u64 args_mix, *digest = st->ident_digest;
	__u32 pins;
	int i;

	/* The call's signature: the arguments in registers (PHP's function,
	 * file and line; its class is on the stack, a read), the same at its
	 * return (the line too: where the function starts), the strings alive
	 * until then. A return needs no more. */
	for (i = 0; i < USDTPROF_MAX_IDENT_ARGS; i++) {
		if (i >= spec->nargs)
			break;
		if (spec->args[i].kind != USDTPROF_ARG_REG_DEREF)
			key.args[i] = read_arg_slow(ctx, &spec->args[i]);
	}
	st->hit_call = path_hash(ident_args_mix(&key), key.args[0]) | 1;
	*whole = exit_of_top_call(spec, st, &seen.func);
	if (*whole)
		return seen.func;
	for (i = 0; i < USDTPROF_MAX_IDENT_ARGS; i++) {
		if (i >= spec->nargs)
			break;
		if (spec->args[i].kind == USDTPROF_ARG_REG_DEREF)
			key.args[i] = read_arg_slow(ctx, &spec->args[i]);
	}
	args_mix = ident_args_mix(&key);
	seen.func = pinned_slot_id(spec, st, &key, args_mix);
	if (seen.func)
		return seen.func;
	cacheable = read_digests(spec, st, &key, 0);
	slot = &st->code_ids[ident_slot_index(args_mix, key.args[0])];
	if (cacheable && slot->code == key.args[0] && slot->code && slot->func == args_mix &&
	    slot->name == slot_check(spec, st, &key, 0) && slot->id)
		return slot->id;
	/* The literals' digests too (the others' were taken above). */
	process_cacheable = cacheable;
	seen.check = FNV_OFFSET;
	for (i = 0; i < USDTPROF_MAX_IDENT_ARGS; i++) {
		if (i >= spec->nargs)
			break;
		if (!(spec->content_mask & (1u << i)))
			continue;
		if (in_text(key.args[i], st->text_lo, st->text_hi) && !string_digest(key.args[i], &digest[i], NULL, 0))
			process_cacheable = false;
		seen.check = (seen.check ^ digest[i]) * FNV_PRIME;
	}
	key.tgid = bpf_get_current_pid_tgid() >> 32;
	known = process_cacheable ? bpf_map_lookup_elem(&ident_cache, &key) : 0;
	if (known && known->check == seen.check) {
		seen.func = known->func;
	} else {
		seen.func = hash_ident_args(ctx, spec);
		if (process_cacheable)
			bpf_map_update_elem(&ident_cache, &key, &seen, BPF_ANY);
	}
	if (cacheable) {
		/* slot_check takes literals by their addresses, as before their
		 * digests were taken. Mixed again: kept across the calls above,
		 * they took the stack over its 512 bytes. */
		pins = (spec->content_mask & USDTPROF_CONTENT_PINNED) ? st->ident_interned & 0xf : 0;
		args_mix = ident_args_mix(&key);
		slot = &st->code_ids[ident_slot_index(args_mix, key.args[0])];
		slot->code = key.args[0] | ((__u64)pins << PIN_SHIFT);
		slot->func = args_mix;
		slot->name = slot_check(spec, st, &key, pins);
		slot->id = seen.func;
	}
	return seen.func;
}

/* A query's statement id. PostgreSQL passes query__done the text pointer its
 * query__start had, and the text does not change in between: a done passing
 * the pointer of the thread's latest start, not yet taken by another done,
 * takes that start's id without reading and hashing the text again (~1 us a
 * query). Starts nest only through the protocol's messages, which never
 * share a pointer while both are open; an exec or a window's close clears it. */
static __always_inline __u64 sql_statement(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
					   struct usdtprof_thread_stack *st, bool *known)
{
	__u64 text = read_arg(ctx, &spec->args[0]), h;

	*known = false;
	if (spec->role == USDTPROF_ROLE_EXIT && text && st->sql_text == text && !sql_rehash) {
		st->sql_text = 0;
		*known = true;
		return st->sql_func;
	}
	h = sql_hash(text);
	if (h < 16)
		h += 16;
	if (spec->role == USDTPROF_ROLE_ENTRY) {
		st->sql_text = text;
		st->sql_func = h;
	}
	return h;
}

/* A spec that reads a function object (CPython's): the frame's code and
 * function objects, read once here into the thread's slot for the code
 * (st->code_hit, where derived_value takes them; st->code_slot, the
 * slot of the code's address bits). The slot's id is the code's when it
 * holds this code, run by this function object, with this name argument
 * (an interned string, alive with the code): then nothing more is read or
 * hashed. Otherwise runtime_function gives the slot to it once its id is
 * known, if it can be cached. The id, 0 for none. An exit of the top
 * frame's call takes that frame's id (exit_of_top_call): the call's
 * signature is the frame's address with the file and name arguments, all
 * in registers and the same at the return. No two live frames share an
 * address: another call could show it only after the frame's own return
 * went unseen, its entry unseen too, and its code's file and name the
 * same strings. */
static __noinline __u64 known_code(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
				   struct usdtprof_thread_stack *st)
{
	const struct usdtprof_derived *d = &spec->derived;
	struct usdtprof_code_id *slot;
	__u64 name, object = 0, func = 0;
	__u32 i;

	st->code_slot = USDTPROF_CODE_CACHE; /* none */
	if (!d->used || d->kind != USDTPROF_DERIVED_STRING || !d->func_qualname)
		return 0;
	name = read_arg_slow(ctx, &spec->args[d->proof_arg & (USDTPROF_MAX_IDENT_ARGS - 1)]);
	st->hit_call = path_hash(path_hash(reg_value(ctx, d->reg), read_arg_slow(ctx, &spec->args[0])), name) | 1;
	if (exit_of_top_call(spec, st, &func))
		return func;
	if (code_and_function(ctx, d, &object, &func) || !object)
		return 0;
	i = ((object >> 4) ^ (object >> 12)) & (USDTPROF_CODE_CACHE - 1);
	slot = &st->code_ids[i];
	st->code_slot = i;
	if (slot->code == object && slot->func == func && slot->name == name && slot->id)
		return slot->id;
	st->code_hit.code = object;
	st->code_hit.func = func;
	st->code_hit.name = name;
	return 0;
}

/* The function id of a runtime probe's hit, its name captured on first sight. */
static __noinline __u64 runtime_function(struct pt_regs *ctx, const struct usdtprof_probe_spec *spec,
					 __u32 spec_index, struct usdtprof_thread_stack *st)
{
	struct derived_hit derived = {};
	__u64 h, *seen;
	bool known;

	if (spec->ident == USDTPROF_IDENT_CONST)
		return spec->const_func;
	if (spec->ident == USDTPROF_IDENT_SQL) {
		h = sql_statement(ctx, spec, st, &known);
		if (known)
			return h;
	} else if ((spec->content_mask & USDTPROF_CONTENT_CACHED) && !spec->derived.used) {
		/* Its arguments' values and strings, through the thread's cache (PHP's). */
		h = cached_ident_args(ctx, spec, st, &known);
		if (known)
			return h;
	} else {
		h = known_code(ctx, spec, st);
		if (h)
			return h;
		/* Checked here too: a call of the global function costs every
		 * other runtime's hit (Java's, a --pair's) for nothing. */
		if (usdtprof_owner_args_together(spec))
			owner_identity(ctx, spec, st, &derived);
		if (derived.whole)
			return derived.whole;
		if (derived.ident) {
			h = derived.ident;
		} else {
			h = hash_ident_args(ctx, spec);
			derived_value(ctx, spec, st, &derived);
		}
		if (derived.value)
			h = path_hash(h, derived.value);
		/* Two code objects of one qualified name (a module's top-level
		 * lambdas, all "<lambda>") start on different lines. */
		if (derived.line)
			h = path_hash(h, derived.line);
		/* exec()'d code nested in exec()'d code: one file, name and
		 * line ("<string>:<module>", 1), apart by the caller. */
		if (derived.caller)
			h = path_hash(h, derived.caller);
		/* Methods that exec()'d text made and dataclasses or namedtuple
		 * renamed: one code name ("<lambda>") for each class's. */
		if (derived.func_qualname)
			h = path_hash(h, derived.func_qualname);
		if (derived.made_up)
			h = path_hash(h, derived.made_up);
	}
	/* Ids below 16 are the synthetic frames'. */
	if (h < 16)
		h += 16;
	/* A thread remembers the ids whose names it found kept, so that a hit
	 * of a function it has seen costs no lookup of `names`. Names are only
	 * deleted with their process (whose threads are gone then) or with
	 * usdtprof's own calibration thread's (whose stack goes with them). */
	seen = &st->named[h & (USDTPROF_NAMED_CACHE - 1)];
	if (*seen != h && capture_name(ctx, spec, spec_index, h, &derived))
		*seen = h;
	/* Keyed by the code alone: not code keyed by its caller, nor a hit
	 * whose code did not prove, nor a made-up file's (its addresses are
	 * reused by other code). */
	if (*seen == h && derived.value && !derived.caller && !derived.made_up &&
	    st->code_slot < USDTPROF_CODE_CACHE) {
		struct usdtprof_code_id *slot = &st->code_ids[st->code_slot];

		slot->code = st->code_hit.code;
		slot->func = st->code_hit.func;
		slot->name = st->code_hit.name;
		slot->id = h;
	}
	return h;
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
	return runtime_function(ctx, spec, spec_index, st);
}

#endif /* USDTPROF_IDENTITY_BPF_H */
