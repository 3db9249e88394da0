/* Structures shared by the BPF programs (bpf/) and userspace (userspace/),
 * and the rules both sides must apply alike (usdtprof_owner_args_together).
 * Only fixed-size __u32/__u64 fields: both sides must agree on the layout. */
#ifndef USDTPROF_BPF_SHARED_H
#define USDTPROF_BPF_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Shadow stack depth per thread. A power of two so an index can be masked. */
#define USDTPROF_MAX_DEPTH 128
/* Per-thread cache of path totals, direct-mapped by path id; a power of two. */
#define USDTPROF_PATH_CACHE 64
/* Runtime function ids whose names a thread found captured (direct-mapped). */
#define USDTPROF_NAMED_CACHE 64
#define USDTPROF_CODE_CACHE 128 /* a power of two */
/* Upper bound of the probe_specs array (one entry per attached probe kind). */
#define USDTPROF_MAX_SPECS 256

/* Function ids of synthetic frames (never the address of a name string):
 * the root of functions that were running when probes were attached, and the
 * marker under which calls beyond USDTPROF_MAX_DEPTH are counted. */
#define USDTPROF_FUNC_RUNNING_AT_ATTACH 1
#define USDTPROF_FUNC_TRUNCATED 2
/* Marks work run for a task created on another thread (USDTPROF_TASK_*). */
#define USDTPROF_FUNC_TASK 3
/* Calls whose own call path found no slot in the paths table (full, or the
 * process's share used): charged to this child of the nearest caller that
 * has one, so no time is lost, only the detail below it. */
#define USDTPROF_FUNC_OTHER 4

/* x86-64 registers a USDT argument can live in; the BPF side maps each to
 * its struct pt_regs field. */
enum usdtprof_reg {
	USDTPROF_REG_AX, USDTPROF_REG_BX, USDTPROF_REG_CX, USDTPROF_REG_DX,
	USDTPROF_REG_SI, USDTPROF_REG_DI, USDTPROF_REG_BP, USDTPROF_REG_SP,
	USDTPROF_REG_R8, USDTPROF_REG_R9, USDTPROF_REG_R10, USDTPROF_REG_R11,
	USDTPROF_REG_R12, USDTPROF_REG_R13, USDTPROF_REG_R14, USDTPROF_REG_R15,
	USDTPROF_REG_IP,
};

enum usdtprof_arg_kind {
	USDTPROF_ARG_CONST,     /* value = offset */
	USDTPROF_ARG_REG,       /* value = reg */
	USDTPROF_ARG_REG_DEREF, /* value = *(reg + offset), read from user memory */
};

/* Where a probe argument lives, decoded from its USDT argument spec. */
struct usdtprof_arg_spec {
	__s64 offset;   /* constant value, or displacement for REG_DEREF */
	__u32 kind;     /* enum usdtprof_arg_kind */
	__u32 reg;      /* enum usdtprof_reg */
	__u32 size;     /* 1, 2, 4 or 8 bytes */
	__u32 is_signed;
};

/* The entry program serves ENTRY, TASK_CREATE and TASK_BEGIN; the exit
 * program EXIT and TASK_END. */
enum usdtprof_role {
	USDTPROF_ROLE_ENTRY,
	USDTPROF_ROLE_EXIT,
	USDTPROF_ROLE_TASK_CREATE, /* argument: task id */
	USDTPROF_ROLE_TASK_BEGIN,  /* argument: task id */
	USDTPROF_ROLE_TASK_END,    /* argument: task id */
	/* record --span: the start and an end of an interval timed per thread
	 * beside the call tree (usdt_span); spec->pair is the span's id. */
	USDTPROF_ROLE_SPAN_START,
	USDTPROF_ROLE_SPAN_END,
	/* Where the runtime may free the names its calls were pinned by
	 * (USDTPROF_CONTENT_PINNED): PHP's request start. The hitting thread's
	 * pins go (names_epoch); nothing else is done or recorded. */
	USDTPROF_ROLE_FORGET_NAMES,
};

/* How a probe's arguments identify its function. */
enum usdtprof_ident {
	USDTPROF_IDENT_NATIVE, /* func = args[0]: the address of a NUL-terminated name
				  in the binary (our header), or a task id; userspace
				  reads names from the process */
	USDTPROF_IDENT_CONST,  /* func = const_func: a probe pair that is one frame
				  (e.g. PostgreSQL's query__plan__start/done) */
	USDTPROF_IDENT_PTRS,   /* func = hash(args[0..nargs)): pointers to strings the
				  runtime keeps alive and unique (interned names), or,
				  for the args in content_mask, the strings' contents */
	USDTPROF_IDENT_SQL,    /* func = hash of the text at args[0] with literals
				  replaced by placeholders: one frame per statement shape */
	USDTPROF_IDENT_PAIR,   /* an exit of a custom pair: its frame is the innermost
				  one its pair's entry opened (spec->pair), whatever
				  the exit's arguments say */
};

/* How a probe's calls nest on the native stack (usdtprof_probe_spec.nests):
 * what a frame's stack pointer at entry can prove (bpf/usdtprof.bpf.c,
 * find_dead). */
enum usdtprof_nests {
	USDTPROF_NESTS_NONE,
	USDTPROF_NESTS_SITE,   /* our header: the probe sits in the function it
				  times; frames keep the probe's address */
	USDTPROF_NESTS_CALLER, /* the probe sits in a runtime's helper that keeps
				  a frame pointer, called by the code of the
				  function entered (HotSpot's dtrace_method_entry):
				  frames keep that code's address, the helper's
				  return address */
};

/* Identity arguments hashed together, and name parts captured per function. */
#define USDTPROF_MAX_IDENT_ARGS 4 /* a power of two: an index can be masked */
#define USDTPROF_NAME_PARTS 4
#define USDTPROF_NAME_LEN 192 /* per captured string, with its NUL */
/* Bytes of a process's title kept (process_titles), with its NUL. */
#define USDTPROF_TITLE_LEN 64
/* Bytes of a string a content identity covers. */
#define USDTPROF_CONTENT_MAX 256
/* Bytes of a query text the SQL identity covers. */
#define USDTPROF_SQL_MAX 1024

enum usdtprof_part_type {
	USDTPROF_PART_NONE,
	USDTPROF_PART_STR,     /* NUL-terminated string at arg */
	USDTPROF_PART_STR_LEN, /* string at arg, length in len (not NUL-terminated) */
	USDTPROF_PART_INT,     /* arg's value */
	USDTPROF_PART_STR_PREFIXED, /* as PART_STR; num = the 8 bytes before the string
				       (a runtime's length field, e.g. PHP's zend_string) */
	USDTPROF_PART_DERIVED,  /* the text of the derived string object (see
				   usdtprof_derived), empty when there is none;
				   num = the object's first line, 0 unread */
	USDTPROF_PART_STR_VERDICT, /* as PART_STR; num = the derived value (a
				      USDTPROF_DERIVED_OWNER verdict) */
	USDTPROF_PART_STR_CALLER, /* as PART_STR; num = the caller's function id
				     the function is keyed by (usdtprof_derived's
				     code_flags), 0 when it is not */
};

/* Bytes of a USDTPROF_DERIVED_STRING object read in one piece (usdtprof_derived.window). */
#define USDTPROF_DERIVED_WINDOW 96

/* What a usdtprof_derived reads. */
enum usdtprof_derived_kind {
	USDTPROF_DERIVED_STRING, /* a string object, proved by its text (CPython) */
	USDTPROF_DERIVED_OWNER,  /* a method's owner, compared with the class the
				    arguments name: a verdict (Ruby) */
};

/* USDTPROF_DERIVED_OWNER's verdicts: the method is the named class's
 * singleton method (Foo.m), or its own or its module's (Foo#m). 0: unproved. */
#define USDTPROF_OWNER_SINGLETON 1
#define USDTPROF_OWNER_CLASS 2

/* Where a USDTPROF_DERIVED_OWNER finds the method entry (usdtprof_derived.from). */
enum usdtprof_owner_from {
	USDTPROF_FROM_EC,         /* reg, else reg2, holds the execution context:
				     its frame's method entry */
	USDTPROF_FROM_ENTRY,      /* reg holds the method entry */
	USDTPROF_FROM_SLOT_ENTRY, /* the method entry is at reg + slot */
	USDTPROF_FROM_SLOT_EC,    /* the execution context is at reg + slot */
};

/* An identity a probe's arguments lack but the runtime keeps beside them:
 * a string object read from a register through the object the arguments
 * were taken from, trusted only when that object proves to be it (one of
 * its string objects holds its text where args[proof_arg] points). CPython
 * 3.11: the frame in a register, its code object (f_code), whose co_name's
 * text is the function name argument; the value is co_qualname. Hashed into
 * the function id, its text captured by a PART_DERIVED; 0 (not hashed) when
 * the proof fails. */
struct usdtprof_derived {
	__u32 used;      /* 0: no derived identity */
	__u32 reg;       /* enum usdtprof_reg: holds the base */
	__s32 object;    /* offset in the base of the object's pointer */
	__s32 proof;     /* offset in the object of the proving string object */
	__u32 proof_arg; /* index in args[] of the argument it must prove */
	__s32 value;     /* offset in the object of the derived string object */
	__s32 text;      /* offset of a string object's text from its start */
	__s32 flags;     /* offset of a byte in a string object: its text is there */
	__u32 flag_mask; /* only when that byte has all these bits (CPython: compact ascii) */
	__u32 kind;      /* enum usdtprof_derived_kind */
	/* USDTPROF_DERIVED_OWNER (Ruby 3.1): the method the probe reports is
	 * found through the thread's execution context, in reg or else reg2:
	 * its frame at `object`, the frame's environment at `ep`, the method
	 * entry at `me` from there (or, when a special-variable slot took its
	 * place, at `svar_me` in that slot), its owner at `owner`; objects
	 * whose flags say they are no method entry (`imemo_mask`/`imemo_ment`,
	 * `imemo_svar`) prove nothing. args[proof_arg] is the class the probe
	 * names (userspace places it: `klass` bytes past arg 0's address);
	 * the owner is that class (USDTPROF_OWNER_CLASS) or its singleton
	 * class, the class's own class at `value` (USDTPROF_OWNER_SINGLETON). */
	__u32 reg2;
	__s32 ep, me, svar_me, owner;
	__s32 klass;
	__u32 imemo_mask, imemo_ment, imemo_svar;
	/* What reg leads to (enum usdtprof_owner_from): the execution context
	 * (above), or, chosen per site (a C method's probes fire outside its
	 * frame, where its caller still holds its method entry), the method
	 * entry itself, in reg or in the stack slot at reg + slot, or the
	 * execution context in that slot. */
	__u32 from;
	__s32 slot;
	/* USDTPROF_DERIVED_STRING: offset in the object of its first line (a
	 * 32-bit int; CPython: co_firstlineno), hashed into the function id and
	 * captured as the PART_DERIVED's number; 0: not read. */
	__s32 first_line;
	/* USDTPROF_DERIVED_STRING: proof, value, first_line and code_flags are
	 * read in one piece, USDTPROF_DERIVED_WINDOW bytes from `window` (each
	 * within them). code_flags: offset in the object of a 32-bit flags word
	 * (CPython: co_flags), 0: not read; code without any of function_flags
	 * (CPython: CO_NEWLOCALS, i.e. a module's or exec()'d code, a class
	 * body) is keyed by its caller's function id too: nested exec()'d code
	 * objects pass one file, name and first line ("<string>", "<module>",
	 * 1), and are apart by who runs them. */
	__s32 window;
	__s32 code_flags;
	__u32 function_flags;
	/* USDTPROF_DERIVED_STRING: the function object running the code (CPython:
	 * the frame's f_func, `func` bytes into the base, which must lie within
	 * 40 bytes before the object's pointer), whose qualified name object is
	 * `func_qualname` bytes in, its code object's pointer 8 bytes after it
	 * (the proof: the frame's code). Where that name is another object than
	 * the code's (set after the code was made: dataclasses' and namedtuple's
	 * exec()'d methods, all "__create_fn__.<locals>.__init__" or "<lambda>"
	 * in file "<string>"), it is hashed into the function id, and captured
	 * instead of the code's for a file named like "<string>". 0: not read. */
	__s32 func;
	__s32 func_qualname;
	/* USDTPROF_DERIVED_OWNER: offset in the class (args[proof_arg]) of a
	 * number no other class of the process ever has, given at its making
	 * (Ruby 3.1's class serial): a thread keeps the hash of a class's name
	 * by its address and that number (code_ids), so a known class's name is
	 * not read again. 0: the name is read and hashed at every hit. */
	__s32 class_serial;
	__u32 pad_derived;
};

struct usdtprof_name_part {
	struct usdtprof_arg_spec arg;
	struct usdtprof_arg_spec len;
	__u32 type; /* enum usdtprof_part_type */
	__u32 pad;
};

/* usdtprof_probe_spec.inband: the clock reads a probe of our header passes.
 * Headers before 2026-12-05 passed three and left the reads' own cost to the
 * calibration; later ones pass the cost of the read after the last probe too,
 * measured by a second read right after it (docs/design.md). */
#define USDTPROF_INBAND_OLD 3
#define USDTPROF_INBAND 4

/* Per attached probe, indexed by the uprobe's BPF cookie. Runtime probes
 * (IDENT_PTRS, IDENT_SQL) capture their name parts the first time a process
 * shows a function, so names survive the process. */
struct usdtprof_probe_spec {
	struct usdtprof_arg_spec args[USDTPROF_MAX_IDENT_ARGS];
	struct usdtprof_name_part parts[USDTPROF_NAME_PARTS];
	__u64 const_func;
	__u32 role;  /* enum usdtprof_role */
	__u32 ident; /* enum usdtprof_ident */
	__u32 nargs; /* identity arguments used (IDENT_PTRS) */
	__u32 content_mask; /* IDENT_PTRS: bit i set: args[i] is hashed by content;
			       bit USDTPROF_CONTENT_PREFIXED(i) also: with the 8
			       bytes before the string (see PART_STR_PREFIXED) */
	__u32 nests;        /* enum usdtprof_nests: frames keep their entry's
			       stack pointer and site, which can prove them gone */
	__u32 pair;         /* a custom pair's entry and exit: its tag (non-zero),
			       kept in the frames it opens; a span's start and
			       ends: the span's id; 0 otherwise */
	struct usdtprof_derived derived; /* IDENT_PTRS */
	__u32 nop5_site;    /* userspace only: its sites are attached at a 5-byte nop,
			       which the kernel may turn into a call: a cheaper hit,
			       calibrated apart (a spec never mixes the two) */
	__u32 inband;       /* how many clock reads the probe passes (our header's), in
			       clock_args: 0, USDTPROF_INBAND_OLD or USDTPROF_INBAND */
	/* inband: the program's CLOCK_MONOTONIC read right before this hit, its
	 * reads before and after its previous probe, and (USDTPROF_INBAND) what
	 * that last read took itself (include/usdtprof/usdtprof.h) */
	struct usdtprof_arg_spec clock_args[4];
};

#define USDTPROF_CONTENT_PREFIXED(i) (1u << (16 + (i)))
/* content_mask: a content-keyed argument whose text starts with '#' is
 * hashed without the hex digits after each ":0x" (Ruby's names of anonymous
 * classes and modules, "#<Class:0x00007f...>": one identity for all). */
#define USDTPROF_CONTENT_ANON(i) (1u << (24 + (i)))
/* content_mask: the content-keyed arguments' identity is cached per thread
 * (code_ids) and per process by their addresses, checked at each hit against
 * the 16 bytes before each string (PHP's zend_string keeps its hash and length
 * there) and its first 24: a string reused at the same address for other
 * text shows other bytes. */
#define USDTPROF_CONTENT_CACHED (1u << 31)
/* content_mask, with USDTPROF_CONTENT_CACHED: a string PHP has interned
 * (IS_STR_INTERNED in its zend_string's flags) is never freed until the
 * request ends, so a thread's slot pins it: later hits take it by its
 * address, unread, until the thread's names_epoch moves (a
 * USDTPROF_ROLE_FORGET_NAMES hit, or its stack drained: probes detached).
 * Set only where the file has the probe of that role. */
#define USDTPROF_CONTENT_PINNED (1u << 30)

/* A function's captured name, keyed by (process, function id). */
struct usdtprof_name_key {
	__u64 func;
	__u32 tgid;
	__u32 pad;
};

struct usdtprof_name {
	__u32 spec; /* the probe spec that captured it: which parts mean what */
	__u32 pad;
	__s64 num[USDTPROF_NAME_PARTS];                    /* PART_INT values */
	char text[USDTPROF_NAME_PARTS][USDTPROF_NAME_LEN]; /* strings, NUL-terminated */
};

struct usdtprof_frame {
	__u64 func;   /* function id (native probes: address of its name string) */
	__u64 path;   /* call-path id = hash(parent path, func) */
	__u64 parent; /* parent path id, 0 for a root (for a task: its creator's) */
	__u64 start;  /* entry time, ns */
	__u64 resume; /* when this frame last became the running one */
	__u64 self;   /* exclusive time accumulated so far */
	__u64 offcpu; /* the part of self spent switched out */
	__u64 sp;     /* stack pointer at the entry probe; 0 if the probe does
			 not nest on the native stack */
	union {
		__u64 site; /* with sp: address of the entry probe (NESTS_SITE),
			       or of the code that called the runtime's helper
			       with bit 63 set (NESTS_CALLER), so the two never
			       compare equal */
		__u64 call; /* without (a probe that does not nest): the call's
			       signature (the thread's hit_call at the entry),
			       which its exit shows again; 0: none */
	};
	__u64 probe;  /* the part of self that probe hits took, measured in band */
	__u32 pair;   /* the custom pair that opened it (spec->pair), 0 if none */
	__u32 coarse; /* 0: recorded under its own path; 1: its path found no
			 slot, it is recorded as its caller's [other] child;
			 2: called inside such a frame, recorded in that same
			 [other] (calls and self time, no inclusive time again) */
	__u64 slot_ref; /* its path's slot as claimed at the entry (slot_ref in
			   paths.bpf.h), for its exit's cache slot; 0: none */
};

/* Durations (inclusive, of completed calls) per path: a log2 histogram of
 * USDTPROF_DIST_BUCKETS buckets. Bucket b holds durations d with
 * 2^b <= d < 2^(b+1) ns; bucket 0 also holds 0 ns; the last bucket holds
 * everything from 2^(USDTPROF_DIST_BUCKETS-1) ns (~9 minutes) up. */
#define USDTPROF_DIST_BUCKETS 40
/* A cache slot's counts are 16 bits: the slot is added to the map before
 * its calls reach this. */
#define USDTPROF_DIST_SLOT_MAX 65535

/* A path's durations accumulated by one thread, beside its usdtprof_path_slot. */
struct usdtprof_path_dist {
	__u64 min_ns; /* 0: no timed call yet */
	__u64 max_ns;
	__u16 buckets[USDTPROF_DIST_BUCKETS];
};

/* A path's totals accumulated by one thread, not yet added to the paths map. */
struct usdtprof_path_slot {
	__u64 path;   /* 0: empty */
	__u64 parent;
	__u64 func;
	__u64 calls;
	__u64 self_ns;
	__u64 total_ns;
	__u64 self_offcpu_ns;
	__u64 probe_ns;
	__u64 slot_ref; /* the path's slot in the table, so that adding these
			   totals needs no lookup of the path (slot_ref in
			   paths.bpf.h); 0: unknown */
};

/* Frames entered before the probes were attached, as their exits show them:
 * the first exit is the innermost frame, each later one its caller. Kept per
 * thread and recorded nested (outermost first) when the thread's stack is
 * flushed, since a frame's callers are known only after its exit. */
#define USDTPROF_ATTACH_CHAIN 16
struct usdtprof_attach_frame {
	__u64 func;
	__u64 self;   /* time it was the innermost frame */
	__u64 offcpu; /* the part of self spent switched out */
};

struct usdtprof_code_id {
	__u64 code, func, name, id;
};

struct usdtprof_thread_stack {
	__u32 depth;    /* frames in use */
	__u32 overflow; /* calls entered beyond USDTPROF_MAX_DEPTH, not yet exited */
	__u32 tgid;     /* 0 until the thread's first event */
	__u32 flushed;  /* claimed by the thread-exit hook or the stop iterator */
	/* While the shadow stack is empty, a function entered before attach may be
	 * running: the time since the stack last emptied, and before that. */
	__u64 idle_since;
	__u64 unknown_self;
	__u64 unknown_offcpu;
	__u64 switched_out; /* when the thread last left its CPU, 0 while running */
	/* The hypervisor's steal clock of the thread's CPU at its last hit or
	 * switch in, and that CPU's runqueue (0: no mark, as while it is out). */
	__u64 steal_mark;
	__u64 steal_rq;
	__u64 epoch;        /* the flush_epoch its path cache was last flushed in */
	__u32 chain_len;    /* entries of attach_chain in use */
	__u32 tid;          /* record --per-thread: the thread's id, set at its first event; else 0 */
	/* The latest query__start's text pointer and statement id (IDENT_SQL),
	 * until a query__done passing the same pointer takes the id without
	 * reading and hashing the text again; 0 when none is pending. */
	__u64 sql_text;
	__u64 sql_func;
	/* This hit's call signature (Ruby's, owner_identity: the class and the
	 * method name's pointer; PHP's, cached_ident_args: every argument;
	 * CPython's, known_code: the frame, file and name pointers),
	 * kept by an entry's frame (its `call`): an exit showing its top
	 * frame's takes that frame's function id, nothing more read
	 * (exit_of_top_call); 0: none. */
	__u64 hit_call;
	/* The thread's last hit of a probe that passes clock reads (inband): the
	 * program's read before it, and the clock in its program (the point that
	 * divides its cost between two frames); clock_before 0: none, or another
	 * probe came since. */
	__u64 clock_before;
	__u64 clock_at;
	struct usdtprof_attach_frame attach_chain[USDTPROF_ATTACH_CHAIN]; /* innermost first */
	struct usdtprof_frame frames[USDTPROF_MAX_DEPTH];
	struct usdtprof_path_slot cache[USDTPROF_PATH_CACHE];
	struct usdtprof_path_dist dist[USDTPROF_PATH_CACHE]; /* beside cache[i] */
	/* Function ids this thread found in `names` (slot: the id's low bits), so
	 * that a known function's hit skips the map's lookup; 0 is no id. */
	__u64 named[USDTPROF_NAMED_CACHE];
	/* A derived identity read through a frame (CPython's): the id of a code
	 * object run by a function object, with the probe's name argument, once
	 * its name is kept (slot: the code's address bits); code 0 is none.
	 * Ruby's (USDTPROF_DERIVED_OWNER, owner_identity): a class's address
	 * (code), its serial with the top bit set (func) and its name's hash (id). */
	struct usdtprof_code_id code_ids[USDTPROF_CODE_CACHE];
	/* This hit's code, function and name argument (known_code), which
	 * derived_value reads on; they take the slot only once their id is
	 * known and cacheable, so code that never is (a made-up file's, code
	 * keyed by its caller) does not evict the code cached there. */
	struct usdtprof_code_id code_hit;
	__u32 code_slot; /* this hit's slot (known_code); USDTPROF_CODE_CACHE: none */
	__u32 names_epoch; /* USDTPROF_CONTENT_PINNED: moves when pinned names may go */
	/* This hit's strings PHP has interned, bit i for argument i (read_digests),
	 * kept here: as a value, each of its 16 forms took a path of its own
	 * through the verifier. */
	__u32 ident_interned;
	__u32 pad_ident;
	/* The program's code and read-only data, [start_code, start_data) of
	 * its mm, read at the thread's first hit in its program (the first
	 * after an exec: flush_on_exec empties it and restarts the thread's
	 * accounting); an empty range while unknown. USDTPROF_CONTENT_CACHED's
	 * thread slots take a string within it by its address (cached_ident_args). */
	__u64 text_lo;
	__u64 text_hi;
	/* This hit's strings' digests (cached_ident_args), kept here for a
	 * slot's miss instead of on the BPF stack, which has no room left. */
	__u64 ident_digest[USDTPROF_MAX_IDENT_ARGS];
};

/* record --per-thread: the parent id of a thread's roots, an id no path has
 * (a path id is a hash; one with this bit set is a thread root when no path
 * of the table has it): the process and the thread, recoverable by
 * userspace. Without --per-thread roots have parent 0. */
#define USDTPROF_THREAD_ROOT_BIT (1ULL << 63)
#define USDTPROF_THREAD_ROOT(tgid, tid) (USDTPROF_THREAD_ROOT_BIT | ((__u64)(tgid) << 32) | (__u32)(tid))

/* The call-path table's totals live in slots of path_chunks, arrays of
 * 2^USDTPROF_PATH_CHUNK_BITS slots that userspace adds as the table fills
 * (docs/design.md, "Call-path table"); the `paths` hash maps a path id to
 * its slot. */
#define USDTPROF_PATH_CHUNK_BITS 13
#define USDTPROF_PATH_CHUNK (1U << USDTPROF_PATH_CHUNK_BITS)
/* No slot (take_slot). */
#define USDTPROF_NO_SLOT 0xffffffffU

/* A path's totals: a slot of path_chunks, or an [other] path's value in
 * other_paths (keyed by the __u64 path id). */
struct usdtprof_path_stats {
	__u64 parent;   /* parent path id, 0 for a root (a thread root's id with --per-thread) */
	__u64 func;
	__u32 tgid;
	__u32 pad;
	__u64 calls;    /* completed and still-open activations */
	__u64 open;     /* activations still running when recording stopped */
	__u64 self_ns;
	__u64 total_ns;
	__u64 self_offcpu_ns; /* part of self_ns spent off-CPU */
	/* Part of self_ns that probe hits took, measured in band (the program's
	 * clock reads around each hit of our header's probes); 0 for others. */
	__u64 probe_ns;
	/* Inclusive durations of the completed calls that were timed (not open
	 * ones, not those of frames entered before the attach, not [truncated]
	 * markers, not calls inside an [other] frame): their extremes (0, 0
	 * when none) and histogram (USDTPROF_DIST_BUCKETS). */
	__u64 min_ns;
	__u64 max_ns;
	__u64 buckets[USDTPROF_DIST_BUCKETS];
	/* In a slot: the path's id, set once its `paths` entry is in; 0 in a
	 * free slot (a path id is a hash: never 0 in practice). */
	__u64 path;
};

/* `usdtprof trace`: one ring-buffer record per probe hit. */
enum usdtprof_event_type {
	USDTPROF_EV_ENTER,
	USDTPROF_EV_EXIT,
	USDTPROF_EV_TASK_CREATE, /* func is the task id */
	USDTPROF_EV_TASK_BEGIN,  /* func is the task id */
	USDTPROF_EV_TASK_END,    /* func is the task id */
	USDTPROF_EV_SPAN_START,  /* record --span: func is the span's id; ts as the span's start */
	USDTPROF_EV_SPAN_END,    /* a started span's end: func is the span's id */
};

struct usdtprof_event {
	__u64 ts;   /* monotonic ns */
	__u64 func; /* function id, or task id */
	__u32 pid;
	__u32 tid;
	__u32 type; /* enum usdtprof_event_type */
	__u32 pad;
};

/* Spans (record --span): intervals from a START probe to an END probe on one
 * thread, which need not nest with calls (a GC cycle, a transaction). Their
 * durations go into a histogram of USDTPROF_SPAN_BUCKETS buckets, four per
 * power of two: below 4 ns bucket i holds i ns; above, with m the highest
 * set bit of the duration, bucket 4m + (the two bits below it). */
#define USDTPROF_SPAN_BUCKETS 256

struct usdtprof_span_key {
	__u32 tgid;
	__u32 span; /* the span's id, from 1 */
};

/* A span started and not yet ended, per thread. */
struct usdtprof_span_start_key {
	__u32 tgid;
	__u32 tid;
	__u32 span;
	__u32 pad;
};

struct usdtprof_span_stats {
	__u64 count;     /* spans ended */
	__u64 total_ns;
	__u64 min_ns;    /* 0 until the first end */
	__u64 max_ns;
	__u64 restarted; /* starts on a thread with one open: that one is dropped */
	__u64 unstarted; /* ends on a thread with none open (started before the attach) */
	__u64 buckets[USDTPROF_SPAN_BUCKETS];
};

enum usdtprof_anomaly {
	USDTPROF_ANOM_EXIT_MISMATCH, /* exit did not match the top frame: frames popped */
	USDTPROF_ANOM_EXIT_NO_FRAME, /* exit with no matching frame on the stack */
	USDTPROF_ANOM_DEPTH_OVERFLOW,/* entry beyond USDTPROF_MAX_DEPTH */
	USDTPROF_ANOM_AGG_FULL,      /* a call's path found no slot in the paths table:
					charged to its caller's [other] child */
	USDTPROF_ANOM_DROPPED_NS,    /* time of calls that found no slot even
					for an [other] child: lost */
	USDTPROF_ANOM_NO_STORAGE,    /* per-thread stack could not be allocated */
	USDTPROF_ANOM_LOST_EVENTS,   /* trace: ring buffer full, events lost */
	USDTPROF_ANOM_WINDOW_EXITS,  /* monitor: exits of frames entered before a
					sampling window opened (not counted again) */
	USDTPROF_ANOM_AGG_LATE,      /* of agg_full, the calls that found no slot
					because the table's next chunk was not
					yet added (the table was not full) */
	USDTPROF_ANOM_COUNT,
};

/* Whether a spec's class name (arg 0, hashed by content), method name (arg
 * 1, by value) and class (args[proof_arg], derived.klass bytes past arg 0)
 * are 8-byte values at one register's address plus offsets, as Ruby 3.1's
 * probes pass its ruby_dtrace_method_hook_args. Then the BPF programs read
 * the three in one read and keep class names' hashes per thread
 * (owner_identity), and the calibration passes its arguments the same way
 * so that it times that path. One function for both sides, so they cannot
 * disagree; the index is masked for the verifier. */
static inline __attribute__((always_inline)) bool
usdtprof_owner_args_together(const struct usdtprof_probe_spec *spec)
{
	const struct usdtprof_derived *d = &spec->derived;
	const struct usdtprof_arg_spec *name = &spec->args[0], *method = &spec->args[1];
	const struct usdtprof_arg_spec *klass = &spec->args[d->proof_arg & (USDTPROF_MAX_IDENT_ARGS - 1)];
	__u32 content = spec->content_mask & ~USDTPROF_CONTENT_ANON(0);

	return d->used && d->kind == USDTPROF_DERIVED_OWNER && d->class_serial > 0 && spec->nargs == 2 &&
	       content == 1 && name->kind == USDTPROF_ARG_REG_DEREF && method->kind == USDTPROF_ARG_REG_DEREF &&
	       klass->kind == USDTPROF_ARG_REG_DEREF && name->size == 8 && method->size == 8 && klass->size == 8 &&
	       method->reg == name->reg && klass->reg == name->reg && method->offset == name->offset + 8 &&
	       klass->offset == name->offset + d->klass;
}

#endif
