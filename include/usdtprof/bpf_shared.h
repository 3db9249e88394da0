/* Structures shared by the BPF programs (bpf/) and userspace (userspace/).
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
/* Upper bound of the probe_specs array (one entry per attached probe kind). */
#define USDTPROF_MAX_SPECS 256

/* Function ids of synthetic frames (never the address of a name string):
 * the root of functions that were running when probes were attached, and the
 * marker under which calls beyond USDTPROF_MAX_DEPTH are counted. */
#define USDTPROF_FUNC_RUNNING_AT_ATTACH 1
#define USDTPROF_FUNC_TRUNCATED 2
/* Marks work run for a task created on another thread (USDTPROF_TASK_*). */
#define USDTPROF_FUNC_TASK 3

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
};

/* Per attached probe, indexed by the uprobe's BPF cookie. */
struct usdtprof_probe_spec {
	struct usdtprof_arg_spec func; /* the argument that identifies the function */
	__u32 role;                    /* enum usdtprof_role */
	__u32 pad;
};

struct usdtprof_frame {
	__u64 func;   /* function id (native probes: address of its name string) */
	__u64 path;   /* call-path id = hash(parent path, func) */
	__u64 parent; /* parent path id, 0 for a root (for a task: its creator's) */
	__u64 start;  /* entry time, ns */
	__u64 resume; /* when this frame last became the running one */
	__u64 self;   /* exclusive time accumulated so far */
	__u64 offcpu; /* the part of self spent switched out */
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
	struct usdtprof_frame frames[USDTPROF_MAX_DEPTH];
	struct usdtprof_path_slot cache[USDTPROF_PATH_CACHE];
};

/* Aggregation map value, keyed by the __u64 path id. */
struct usdtprof_path_stats {
	__u64 parent;   /* parent path id, 0 for a root */
	__u64 func;
	__u32 tgid;
	__u32 pad;
	__u64 calls;    /* completed and still-open activations */
	__u64 open;     /* activations still running when recording stopped */
	__u64 self_ns;
	__u64 total_ns;
	__u64 self_offcpu_ns; /* part of self_ns spent off-CPU */
};

/* `usdtprof trace`: one ring-buffer record per probe hit. */
enum usdtprof_event_type {
	USDTPROF_EV_ENTER,
	USDTPROF_EV_EXIT,
	USDTPROF_EV_TASK_CREATE, /* func is the task id */
	USDTPROF_EV_TASK_BEGIN,  /* func is the task id */
	USDTPROF_EV_TASK_END,    /* func is the task id */
};

struct usdtprof_event {
	__u64 ts;   /* monotonic ns */
	__u64 func; /* function id, or task id */
	__u32 pid;
	__u32 tid;
	__u32 type; /* enum usdtprof_event_type */
	__u32 pad;
};

enum usdtprof_anomaly {
	USDTPROF_ANOM_EXIT_MISMATCH, /* exit did not match the top frame: frames popped */
	USDTPROF_ANOM_EXIT_NO_FRAME, /* exit with no matching frame on the stack */
	USDTPROF_ANOM_DEPTH_OVERFLOW,/* entry beyond USDTPROF_MAX_DEPTH */
	USDTPROF_ANOM_AGG_FULL,      /* aggregation map full: a path was dropped */
	USDTPROF_ANOM_DROPPED_NS,    /* time carried by dropped paths */
	USDTPROF_ANOM_NO_STORAGE,    /* per-thread stack could not be allocated */
	USDTPROF_ANOM_LOST_EVENTS,   /* trace: ring buffer full, events lost */
	USDTPROF_ANOM_COUNT,
};

#endif
