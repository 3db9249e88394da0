// The kernel's call-path records, turned into profile nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "target/naming.h"
#include "target/probe_roles.h"
#include "profile/profile.h"
#include "base/result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

// Whether a parent id is, with record --per-thread, the root id of a thread
// of tgid (USDTPROF_THREAD_ROOT), which no path of the table has; its tid.
inline bool is_thread_root(uint64_t parent, uint32_t tgid)
{
	return (parent >> 32) == (USDTPROF_THREAD_ROOT(tgid, 0) >> 32);
}
inline uint32_t thread_root_tid(uint64_t parent) { return uint32_t(parent); }

// A call path as the kernel counted it (usdtprof_path_stats), its histogram
// kept sparse: ~112 bytes a path instead of 408. At record's stop a million
// paths were 408 MB of records, which the kernel had to zero on first touch
// (most of the read's CPU) and which alone passed the 300 MB goal.
struct PathStats {
	uint64_t parent = 0; // parent path id, 0 for a root (a thread root's id with --per-thread)
	uint64_t func = 0;
	uint32_t tgid = 0;
	uint64_t calls = 0, open = 0, self_ns = 0, total_ns = 0, self_offcpu_ns = 0;
	uint64_t probe_ns = 0; // the part of self_ns probe hits took, measured in band
	uint64_t min_ns = 0, max_ns = 0;
	Buckets buckets; // the kernel's nonzero buckets, in bucket order
};
PathStats path_stats_of(const usdtprof_path_stats &s);
usdtprof_path_stats kernel_stats_of(const PathStats &s);

struct PathRecord {
	uint64_t path = 0;
	PathStats stats;
	uint32_t slot = USDTPROF_NO_SLOT; // its slot in the kernel's table, if read from there
};

// A path's durations as the kernel keeps them.
Distribution distribution_of(const PathStats &s);

// The kernel's call paths as read, a column per field, in the order read:
// each path's counts already in the profile node it becomes (its pid the
// tgid; its parent and function set when add_call_paths places it) and its
// durations in its Distribution (the kernel's min and max as they are, its
// nonzero buckets), so that the read's memory is the profile's: at a
// million paths a PathRecord per path (112 bytes) and then the profile's
// node and durations (104) were ~220 MB touched for the first time, at up
// to 2.3 s per GB on this host (docs/benchmarks.md, "Reading a million call
// paths from the kernel"). 128 bytes a path.
struct PathColumns {
	std::vector<uint64_t> path, parent, func; // the path's id, its parent's (0 for a root), its function id
	// Its slot in the kernel's table (Engine::delete_paths frees it): USDTPROF_NO_SLOT for
	// an [other] path, or one not read from the kernel.
	std::vector<uint32_t> slot;
	std::vector<PathNode> nodes;
	std::vector<Distribution> dists;

	size_t size() const { return path.size(); }
	bool empty() const { return path.empty(); }
	uint32_t tgid(size_t i) const { return uint32_t(nodes[i].pid); }
	// Room for n paths (and a few nodes more: add_call_paths' labels),
	// reserved and not touched, in the pages fresh memory is cheaper in here
	// (reserve_fresh).
	void reserve(size_t n);
	void clear();
	void append(uint64_t id, const usdtprof_path_stats &s, uint32_t slot = USDTPROF_NO_SLOT);
	void append(const PathRecord &r);
	// Only the first n paths.
	void truncate(size_t n);
	// Keeps the paths keep(i) is true of, in order.
	void keep_if(const std::function<bool(size_t)> &keep);
	PathStats stats(size_t i) const;
	std::vector<PathRecord> records() const;
	static PathColumns of(const std::vector<PathRecord> &records);
};

// Appends the records to profile.nodes, parents before children (the tree is
// rebuilt from each record's parent path id), each distinct function id
// resolved once by function_name() (functions with the same name and location
// are one; profile.locations is filled when any has a location), a Java
// lambda's hidden class then named by the method it calls (JavaLambdaNames). A
// record whose parent is missing (dropped when the map was full) goes under a
// "[parent dropped]" root of its process.
// The roots of a process in process_roots hang under one frame of the name
// given there (process_root_label, presets.h), one call, as long as they;
// that frame is a child of the path label_parents gives the process, when
// it is among the records (a PostgreSQL parallel worker's leader's statement,
// Engine::read_worker_statements), its total not added to that path's: the
// worker ran beside its leader, whose statement's time stays its own.
// A root whose parent is a thread's root id (record --per-thread) hangs
// under one frame for that thread, "NAME (tid N)" (NAME from thread_name,
// none when it has none), no call (as a process's root in --per-process), as
// long as its roots (itself where the process's roots would be);
// Profile::thread_nodes lists those frames.
// Returns how many distinct functions had their name or location cut.
// The paths' nodes and durations become the profile's (the columns' nodes
// and dists are left empty, their ids as they were): each node placed in
// the order read, then all of them put in parents-first order in place.
using ThreadNamer = std::function<std::string(uint32_t tgid, uint32_t tid)>;
size_t add_call_paths(Profile &profile, PathColumns &paths, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots = {},
		      const std::map<uint32_t, uint64_t> &label_parents = {},
		      const ThreadNamer &thread_name = {});
// The same from records (copied into columns first).
size_t add_call_paths(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots = {},
		      const std::map<uint32_t, uint64_t> &label_parents = {},
		      const ThreadNamer &thread_name = {});

} // namespace usdtprof
