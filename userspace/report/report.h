// Reports over a profile: the calling-context tree, per-function summaries,
// time domains and the report's options. Rendering is in the formats'
// table (formats.h) and the views' table (views.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "base/result.h"

namespace usdtprof {

// Which time self and inclusive times are in: wall-clock, its on-CPU part or
// its off-CPU part (--time).
enum class TimeMode { Wall, Cpu, Offcpu };

// Calling-context tree: profile paths merged by their name path across
// processes (and across different ids that resolve to the same name).
//
// Inclusive time is derived, never measured: a node's total_ns is its
// self_ns plus its children's total_ns, the sum of the self times of its
// subtree, in the tree's time domain. Work a task ran on another thread sits
// under its creator ("creator;[task];work") and so counts in the creator's
// and its ancestors' totals, not in the totals of the frames its worker
// thread had open (their self time never included it). A child is never
// larger than its parent, and pprof's cum, flame-graph widths and the
// reports agree (docs/report-json.md "Inclusive time").
struct TreeNode {
	uint32_t name = 0;               // index in CallTree::names
	uint32_t parent = kNoParent;     // index in CallTree::nodes; kNoParent for roots
	uint64_t calls = 0, open = 0;
	uint64_t self_ns = 0, total_ns = 0; // in CallTree::time
	// The on- and off-CPU parts of the wall-clock self time, whatever CallTree::time is.
	uint64_t self_oncpu_ns = 0, self_offcpu_ns = 0;
	uint64_t uncertain_ns = 0;       // compensation's spread over these calls (PathNode)
};

// Names are held once (a million paths share ten thousand names) and
// children as one array (child_ids, each node's run starting at
// child_begin[node]): no allocation per node.
struct CallTree {
	std::vector<std::string> names;  // each frame name once; TreeNode::name indexes it
	std::vector<TreeNode> nodes;     // parents before children
	std::vector<uint32_t> roots;
	std::vector<uint32_t> child_begin; // nodes.size() + 1 offsets into child_ids
	std::vector<uint32_t> child_ids;   // each node's children in order of first appearance
	uint64_t total_self_ns = 0;      // sum of all self times: the 100% of percentages
	// Per node, the durations of its calls (wall-clock; compensated when the
	// profile was: compensation.h), when the profile carries them
	// (Profile::distributions); else empty.
	std::vector<Distribution> dists;
	TimeMode time = TimeMode::Wall;

	const std::string &name(uint32_t node) const { return names[nodes[node].name]; }
	std::span<const uint32_t> children(uint32_t node) const
	{
		return {child_ids.data() + child_begin[node], child_ids.data() + child_begin[node + 1]};
	}
};

// In wall-clock time; see with_self_time() for the others.
CallTree build_call_tree(const Profile &profile);
// The same, and in tree_index each profile node's tree node (for refill_times).
CallTree build_call_tree(const Profile &profile, std::vector<uint32_t> &tree_index);
// The tree's counts and times (wall-clock) again from profile, whose shape
// (nodes, parents, functions) is the one the tree was built from with
// tree_index, only its times and durations changed (compensation): the tree's
// shape is kept, not built again.
void refill_times(CallTree &tree, const Profile &profile, const std::vector<uint32_t> &tree_index);
// Adds each profile node's counts and times into its tree node, then sums the subtrees.
void add_times(CallTree &tree, const Profile &profile, const std::vector<uint32_t> &tree_index);
// Sets every total_ns to the sum of the self times of its subtree, and
// total_self_ns to the sum of all self times.
void sum_subtrees(CallTree &tree);
// The profile with one root per process, "comm (pid N)", above its paths:
// reports and exports then keep processes apart (--per-process).
Profile split_by_process(const Profile &profile);
// The profile of one process only.
Profile only_process(const Profile &profile, int32_t pid);
// A thread of a per-thread profile (record --per-thread, report --per-thread):
// its frame's name split into the thread's name ("" when it had none) and
// tid, and the profile of its paths: those below its frame, up to any thread
// frame below it (a PostgreSQL parallel worker's, under its leader's
// statement), which is a thread of its own; the frame itself left out, so
// its children are the roots.
struct ThreadProfile {
	std::string name;
	uint32_t tid = 0;
	int32_t pid = 0;
	Profile profile;
};
// One per Profile::thread_nodes, in their order; empty when it has none.
std::vector<ThreadProfile> split_by_thread(const Profile &profile);
// A thread's frame, "NAME (tid N)": its name ("" for none) and tid into t.
void split_thread_frame(const std::string &frame, ThreadProfile &t);
// Names from root to node.
std::vector<std::string> stack_of(const CallTree &tree, uint32_t node);

struct FunctionSummary {
	std::string name;
	uint64_t calls = 0, open = 0, self_ns = 0;
	uint64_t self_oncpu_ns = 0, self_offcpu_ns = 0; // parts of the wall-clock self time
	uint64_t total_ns = 0;   // inclusive, each outermost activation counted once
	bool recursive = false;  // seen inside an activation of itself
	uint64_t uncertain_ns = 0; // compensation's spread over these calls
	Distribution dist{};       // every call's own duration (CallTree::dists)
};

// A compensated self time within the calibration's spread is not precise.
inline bool uncertain(uint64_t self_ns, uint64_t uncertain_ns) { return uncertain_ns && self_ns <= uncertain_ns; }

// In order of first appearance in the tree; without durations, each
// FunctionSummary::dist left empty (where only times are wanted). nested:
// nested_activations(tree) when the caller has it (the same shape summed
// twice), else computed here.
std::vector<FunctionSummary> summarize_functions(const CallTree &tree, bool durations = true,
						 const std::vector<bool> *nested = nullptr);
// Per node: whether an ancestor has its name (an inner activation of a
// recursion, whose time is inside the outer one's).
std::vector<bool> nested_activations(const CallTree &tree);

Result<TimeMode> parse_time_mode(const std::string &mode);
const char *time_mode_name(TimeMode mode); // "wall", "cpu", "offcpu"
// The tree in another time domain: each self_ns is the chosen part of the
// wall-clock self time, and totals, total_self_ns and so percentages and
// averages are sums of those (on-CPU inclusive time of a subtree is the sum of
// its on-CPU self times).
CallTree with_self_time(CallTree tree, TimeMode mode);

enum class SortKey { Self, Total, Calls, Avg, Name };

// What every format of a profile (formats.h) is given besides the profile.
struct ReportOptions {
	std::string view = "flat";   // a row of views.h's table: flat, tree, ...
	SortKey sort = SortKey::Self;
	size_t limit = 0;            // 0: no limit
	double min_percent = 0.5;    // the tree prunes nodes whose total is below this share
	TimeMode time = TimeMode::Wall; // the time domain of self, total, avg and percentages
	bool raw = false;            // times as measured, probe overhead included (compensation.h)
	bool per_process = false;    // processes apart: one table each (flat text), else one root each
	// Threads apart (a profile of record --per-thread, Profile::thread_nodes):
	// one function table each (flat text, JSON's "threads").
	bool per_thread = false;
};

// "1.23 ms": about three significant digits, in the largest unit that keeps
// the value >= 1.
std::string human_ns(uint64_t ns);

Result<SortKey> parse_sort_key(const std::string &key);

// Brendan Gregg's folded stacks: "root;...;leaf WEIGHT" per path with
// exclusive time, weight = that time in nanoseconds (exact: the weights add
// up to total_self_ns), depth first; "" when no path has time.
std::string render_folded(const CallTree &tree);
class Sink;
// The same into out, line by line.
void write_folded(const CallTree &tree, Sink &out);
// Escapes a name for one folded frame (';', '%' and control characters).
std::string escape_folded_frame(const std::string &name);


} // namespace usdtprof
