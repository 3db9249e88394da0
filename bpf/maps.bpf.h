/* SPDX-License-Identifier: GPL-2.0 */
/* The engine's maps and globals (what userspace sizes, sets and reads), the
 * anomaly counters, and each process's share of the shared tables. */
#ifndef USDTPROF_MAPS_BPF_H
#define USDTPROF_MAPS_BPF_H

/* Processes with a budget share of their own: monitor --max-processes at most. */
#define USDTPROF_MAX_FAIR_PROCESSES 4096

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

/* The call-path table (docs/design.md, "Call-path table"): each path's
 * slot, by path id. Sized by userspace before load (record --max-paths),
 * which it holds exactly. Allocated as paths come (no preallocation). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
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

/* (After the maps above: clang 14 gives a map-in-map's inner value type
 * only a forward declaration in BTF when that is where it first sees it.)
 *
 * The slots: chunk slot >> USDTPROF_PATH_CHUNK_BITS of path_chunks, added
 * by userspace ahead of the table's fill (a large table costs kernel memory
 * only for the chunks a recording fills). Arrays, so that userspace reads a
 * million totals in batches several times faster than a hash's. */
struct path_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, USDTPROF_PATH_CHUNK);
	__type(key, __u32);
	__type(value, struct usdtprof_path_stats);
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 8); /* sized by userspace: --max-paths' chunks */
	__type(key, __u32);
	__array(values, struct path_chunk);
} path_chunks SEC(".maps");

/* Slots freed by userspace (deleted paths, zeroed), a ring of free_ring
 * slot numbers, two to an element (an array's elements are 8 bytes apart:
 * userspace maps it as an array of __u32): number i % free_ring is the i-th
 * given (free_given, by userspace), taken by take_slot (free_taken). As
 * many as path_chunks' slots, so the ring never wraps onto a slot not yet
 * taken. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, USDTPROF_PATH_CHUNK / 2);
	__type(key, __u32);
	__type(value, __u64);
} free_slots SEC(".maps");

/* Wakes userspace's grower (engine/path_slots.cpp) when the slots taken
 * reach grow_at, where the table wants its next chunk: it sleeps until
 * then, however long the table stays as it is. One small record a wake. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} grow_wake SEC(".maps");

/* Each CPU's slot taken and not used (give_back_slot): slot + 1, 0 for none. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} spare_slot SEC(".maps");

/* Totals on their way to the map that no thread's cache holds (an open
 * frame's, pop_frame; the attach chain's), beyond the 512-byte stack the
 * exit program's calls share: one at a time. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct usdtprof_path_slot);
} scratch_slot SEC(".maps");

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

/* USDTPROF_CONTENT_CACHED: a content-keyed function's id by the addresses of
 * its identity arguments, so that a hit of a known function reads 40 bytes
 * per string instead of hashing it (identity.bpf.h, cached_ident_args): the
 * second level, behind each thread's code_ids slots. LRU: it only saves work. */
struct ident_cache_key {
	__u64 args[USDTPROF_MAX_IDENT_ARGS];
	__u32 tgid;
	__u32 content_mask; /* an entry and its exit share it */
};
struct ident_cache_value {
	__u64 func;
	__u64 check; /* the words read around the strings, mixed (string_check) */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ident_cache_key);
	__type(value, struct ident_cache_value);
} ident_cache SEC(".maps");

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

/* `usdtprof monitor` of several processes (-p A,B, --all): the probe hits
 * of each process, by tgid, for its share of the budget (per_process). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, USDTPROF_MAX_FAIR_PROCESSES);
	__type(key, __u32);
	__type(value, __u64);
} process_hits SEC(".maps");
/* The processes whose own sampling window is closed while others' stay
 * open: their probes do nothing from then on (while their detachment waits
 * for a grace period), as all do while `paused`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, USDTPROF_MAX_FAIR_PROCESSES);
	__type(key, __u32);
	__type(value, __u64);
} closed_processes SEC(".maps");

/* `usdtprof monitor --all`: when the probes of a process found after the
 * start (a new process, or one's new program after an exec) were attached
 * (monotonic ns, written just before the attach): a function running then
 * is charged from there, not from start_ns (see begin_accounting). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} process_attached SEC(".maps");

/* The name of each probed thread when it exited, by tid: names set after
 * the launch (pthread_setname_np, prctl) outlive the thread for `trace`. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, char[16]);
} thread_comms SEC(".maps");

/* Per-CPU room for a name being captured and a query text being hashed
 * (both beyond the 512-byte BPF stack), and a derived object's fields. */
struct scratch {
	struct usdtprof_name name;
	char sql[USDTPROF_SQL_MAX];
	__u8 window[USDTPROF_DERIVED_WINDOW]; /* a derived object's fields, read in one piece */
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
/* Benchmarks only (USDTPROF_BENCH_NO_DURATIONS=1): no duration distributions,
 * to measure what they cost per hit; false, the verifier drops its branches. */
const volatile bool durations_off = false;
/* Benchmarks only (USDTPROF_BENCH_SQL_REHASH=1): a query__done hashes its
 * text again, as before its start's id was kept for it (docs/benchmarks.md). */
const volatile bool sql_rehash = false;
/* record --per-thread: each thread's roots hang under a root of its own
 * (USDTPROF_THREAD_ROOT); false, the verifier drops its branches. */
const volatile bool per_thread = false;
/* `monitor` of several processes (-p A,B, --all): each hit is counted per
 * process (process_hits) and looks whether its process's window is closed.
 * Set before load; false, the verifier drops both, so a single target pays
 * nothing for them (docs/benchmarks.md, "Per-process hit counts"). */
const volatile bool per_process = false;

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
/* The slots (path_chunks): never-used ones are taken in order, up to
 * slots_ready, what userspace's chunks hold; freed ones come back through
 * free_slots, given by userspace (free_given) and taken here (free_taken). */
__u32 slots_made;
__u32 slots_ready;
/* Set by userspace: the slots_made at which to wake it to add a chunk (see
 * grow_wake); 0 once the table has all its chunks. */
__u32 grow_at;
/* The slot numbers free_slots holds, set by userspace before load. */
const volatile __u32 free_ring = USDTPROF_PATH_CHUNK;
__u64 free_given;
__u64 free_taken;
/* Bumped by userspace each time it frees slots, after their paths left the
 * hash and before it waits for the programs (PathSlots::free): a slot number
 * a thread kept under an older generation may now be another path's. */
__u32 slot_generation;
/* Set by userspace when several processes share the tables (--binary): the
 * paths and names one process may hold, so that one cannot fill them and
 * make the others' drop. 0: no limit. */
__u32 path_share;
__u32 name_share;
/* The entries of closed_processes: while 0, no hit looks there. */
__u32 processes_closed;
/* The close time (monotonic ns) of the process window the close_process
 * iterator closes. */
__u64 process_close_ns;
/* Set once a sampling window has closed: frames open at its end were
 * counted then, so exits found without a frame are not counted again. */
__u64 windowed;

#define FRAME_MASK (USDTPROF_MAX_DEPTH - 1)
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))

static __always_inline void count_anomaly(enum usdtprof_anomaly a, __u64 n)
{
	__sync_fetch_and_add(&anomalies[a], n);
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

#endif /* USDTPROF_MAPS_BPF_H */
