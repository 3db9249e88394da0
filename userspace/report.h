// Reports over a profile: the calling-context tree, per-function summaries,
// text and JSON rendering, folded stacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "profile.h"
#include "result.h"

namespace usdtprof {

// Calling-context tree: profile paths merged by their name path across
// processes (and across different ids that resolve to the same name).
struct TreeNode {
	std::string name;
	uint32_t parent = kNoParent;     // index in CallTree::nodes; kNoParent for roots
	std::vector<uint32_t> children;
	uint64_t calls = 0, open = 0, self_ns = 0, total_ns = 0;
	uint64_t self_offcpu_ns = 0;     // the part of self_ns spent switched out
	uint64_t uncertain_ns = 0;       // compensation's spread over these calls (PathNode)
};

struct CallTree {
	std::vector<TreeNode> nodes;     // parents before children
	std::vector<uint32_t> roots;
	uint64_t total_self_ns = 0;      // sum of all self times: the 100% of percentages
};

CallTree build_call_tree(const Profile &profile);
// The profile with one root per process, "comm (pid N)", above its paths:
// reports and exports then keep processes apart (--per-process).
Profile split_by_process(const Profile &profile);
// Names from root to node.
std::vector<std::string> stack_of(const CallTree &tree, uint32_t node);

struct FunctionSummary {
	std::string name;
	uint64_t calls = 0, open = 0, self_ns = 0, self_offcpu_ns = 0;
	uint64_t total_ns = 0;   // inclusive, each outermost activation counted once
	bool recursive = false;  // seen inside an activation of itself
	uint64_t uncertain_ns = 0; // compensation's spread over these calls
};

// A compensated self time within the calibration's spread is not precise.
inline bool uncertain(uint64_t self_ns, uint64_t uncertain_ns) { return uncertain_ns && self_ns <= uncertain_ns; }

std::vector<FunctionSummary> summarize_functions(const CallTree &tree);

// Which self time text reports, sorting and folded weights use: all of it,
// the on-CPU part or the off-CPU part. Inclusive times stay wall-clock.
enum class TimeMode { Wall, Cpu, Offcpu };
Result<TimeMode> parse_time_mode(const std::string &mode);
// The tree with each node's self_ns replaced by the chosen part.
CallTree with_self_time(CallTree tree, TimeMode mode);

enum class SortKey { Self, Total, Calls, Avg, Name };
enum class ReportFormat { Text, Json };

struct ReportOptions {
	bool tree = false;
	SortKey sort = SortKey::Self;
	size_t limit = 0;            // 0: no limit
	double min_percent = 0.5;    // --tree prunes nodes whose total is below this share
	ReportFormat format = ReportFormat::Text;
	TimeMode time = TimeMode::Wall; // text reports; JSON always has every part
	bool raw = false;            // times as measured, probe overhead included (compensation.h)
};

Result<SortKey> parse_sort_key(const std::string &key);
std::string render_report(const Profile &profile, const ReportOptions &options);

// Brendan Gregg's folded stacks: "root;...;leaf WEIGHT" per path, weight =
// exclusive time in integer microseconds.
std::string render_folded(const CallTree &tree);
// Escapes a name for one folded frame (';', '%' and control characters).
std::string escape_folded_frame(const std::string &name);

// "int ns::Cls<T>::run(int) const" -> "ns::Cls<T>::run"; other names
// unchanged. Applied when recording to the names of native probes.
std::string simplify_function_name(const std::string &name);

} // namespace usdtprof
