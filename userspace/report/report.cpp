// Reports' model: the profile's per-process paths merged into one
// calling-context tree by name, per-function summaries, time domains, and the
// pieces the report's formats and views share (report_text.h). The formats
// are in formats.cpp's table, the views in views.cpp's.
#include "report/report.h"
#include "report/report_text.h"

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/huge_pages.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

void sort_functions(std::vector<FunctionSummary> &fs, SortKey key)
{
	auto number = [key](const FunctionSummary &f) -> uint64_t {
		switch (key) {
		case SortKey::Self: return f.self_ns;
		case SortKey::Total: return f.total_ns;
		case SortKey::Calls: return f.calls;
		case SortKey::Avg: return average(f);
		case SortKey::Name: break;
		}
		return 0;
	};
	std::sort(fs.begin(), fs.end(), [&](const FunctionSummary &a, const FunctionSummary &b) {
		if (number(a) != number(b))
			return number(a) > number(b);
		return a.name < b.name;
	});
}

} // namespace


std::string human_ns(uint64_t ns)
{
	if (ns < 1000)
		return std::to_string(ns) + " ns";
	// Thresholds sit at 999.5 so that rounding never prints "1000 us".
	const char *unit = ns < 999'500 ? "us" : ns < 999'500'000 ? "ms" : "s";
	double v = static_cast<double>(ns) / (ns < 999'500 ? 1e3 : ns < 999'500'000 ? 1e6 : 1e9);
	char buf[48];
	snprintf(buf, sizeof buf, v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s" : "%.0f %s", v, unit);
	return buf;
}

double percent(uint64_t part, uint64_t whole) { return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0; }

std::string duration_cells(const CallTree &tree, const Distribution *d, uint64_t call_spread_ns)
{
	if (tree.dists.empty())
		return "";
	if (!d)
		return line(" %10s %10s %10s %10s", "min", "p50", "p99", "max");
	if (d->empty())
		return line(" %10s %10s %10s %10s", "-", "-", "-", "-");
	return line(" %10s %10s %10s %10s", time_text(d->min_ns, call_spread_ns).c_str(),
		    time_text(dist_quantile(*d, 0.5), call_spread_ns).c_str(),
		    time_text(dist_quantile(*d, 0.99), call_spread_ns).c_str(), time_text(d->max_ns, call_spread_ns).c_str());
}

uint64_t call_spread(uint64_t uncertain_ns, uint64_t calls) { return calls ? (uncertain_ns + calls - 1) / calls : 0; }

std::string open_marker(uint64_t open) { return open ? " (" + std::to_string(open) + " open)" : ""; }

uint64_t average(const FunctionSummary &f) { return f.calls ? f.total_ns / f.calls : 0; }

uint64_t total_calls(const CallTree &tree)
{
	uint64_t calls = 0;
	for (const TreeNode &n : tree.nodes)
		calls += n.calls;
	return calls;
}

std::string line(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return buf;
}

// A monitor interval probed for only part of its time says so: its counts are
// as measured, not scaled up.
std::string sampled_line(const Profile &profile)
{
	if (profile.sampled_fraction >= 1)
		return "";
	return line("sampled: probes attached for %.1f%% of the recording; counts and times are not scaled\n",
		    profile.sampled_fraction * 100);
}

std::string container_lines(const Profile &profile)
{
	std::string out;
	for (const ProfileProcess &p : profile.processes) {
		if (!p.ns_pid && p.container_id.empty())
			continue;
		std::string what;
		if (p.ns_pid)
			what = "pid " + std::to_string(p.ns_pid) + " in its pid namespace";
		if (!p.container_id.empty())
			what += (what.empty() ? "" : ", ") + p.container_runtime + " container " + p.container_id.substr(0, 12);
		out += "process " + (p.comm.empty() ? "" : escape_text(p.comm) + " ") + "(pid " + std::to_string(p.pid) +
		       "): " + what + "\n";
	}
	return out;
}

std::string lost_paths_line(const Profile &profile, const CallTree &tree)
{
	auto full = profile.anomalies.find("agg_full");
	if (full == profile.anomalies.end() || !full->second)
		return "";
	auto other = std::find(tree.names.begin(), tree.names.end(), "[other]");
	uint64_t other_ns = 0;
	for (const TreeNode &n : tree.nodes)
		if (n.name == uint32_t(other - tree.names.begin()))
			other_ns += n.self_ns;
	// Calls that came while the table was still growing (agg_late): a
	// larger table would not have kept them.
	auto late = profile.anomalies.find("agg_late");
	uint64_t late_calls = late == profile.anomalies.end() ? 0 : late->second;
	std::string growing = late_calls ? line(" (%llu of its %llu calls came while the table was still growing, not full)",
						(unsigned long long)late_calls, (unsigned long long)full->second)
					 : "";
	return line("lost paths: %.1f%% of the recorded time (%s) lost its full call path: the call-path table was "
		    "full, so those calls are charged to [other] under the nearest caller that kept its own%s; record with a "
		    "larger --max-paths to keep them\n",
		    percent(other_ns, tree.total_self_ns), human_ns(other_ns).c_str(), growing.c_str());
}

// "~" before a time within the calibration's spread.
std::string time_text(uint64_t ns, uint64_t uncertain_ns)
{
	return (uncertain(ns, uncertain_ns) ? "~" : "") + human_ns(ns);
}

// Largest total first, then by name: the order of the tree views.
std::vector<uint32_t> by_total(const CallTree &tree, std::vector<uint32_t> group)
{
	std::sort(group.begin(), group.end(), [&](uint32_t a, uint32_t b) {
		const TreeNode &x = tree.nodes[a], &y = tree.nodes[b];
		return x.total_ns != y.total_ns ? x.total_ns > y.total_ns : tree.names[x.name] < tree.names[y.name];
	});
	return group;
}

bool below_min_percent(const CallTree &tree, uint32_t node, const ReportOptions &options)
{
	return tree.total_self_ns && percent(tree.nodes[node].total_ns, tree.total_self_ns) < options.min_percent;
}

// Sorted by options.sort, cut to options.limit; also returns how many were cut.
std::pair<std::vector<FunctionSummary>, size_t> ranked_functions(const CallTree &tree, const ReportOptions &options,
								   const std::vector<bool> *nested)
{
	std::vector<FunctionSummary> fs = summarize_functions(tree, true, nested);
	// Synthetic frames ([running at attach], [truncated]) are never called.
	std::erase_if(fs, [](const FunctionSummary &f) { return f.calls == 0; });
	sort_functions(fs, options.sort);
	size_t cut = 0;
	if (options.limit && fs.size() > options.limit) {
		cut = fs.size() - options.limit;
		fs.resize(options.limit);
	}
	return {std::move(fs), cut};
}

Profile split_by_process(const Profile &profile)
{
	Profile out = profile;
	out.nodes.clear();
	out.dists.clear();
	std::map<int32_t, std::string> comm;
	for (const ProfileProcess &p : profile.processes)
		comm[p.pid] = p.comm;
	std::map<int32_t, uint32_t> root_of;
	std::vector<uint32_t> moved(profile.nodes.size());
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		PathNode n = profile.nodes[i];
		if (n.parent == kNoParent || n.parent >= i) {
			auto [it, added] = root_of.try_emplace(n.pid, uint32_t(out.nodes.size()));
			if (added) {
				PathNode root;
				root.pid = n.pid;
				root.function = uint32_t(out.functions.size());
				std::string name = comm[n.pid];
				out.functions.push_back((name.empty() ? "" : name + " ") + "(pid " + std::to_string(n.pid) + ")");
				if (!out.locations.empty())
					out.locations.push_back("");
				add_node(out, root);
			}
			PathNode &root = out.nodes[it->second];
			root.total_ns += n.total_ns;
			n.parent = it->second;
		} else {
			n.parent = moved[n.parent];
		}
		moved[i] = uint32_t(out.nodes.size());
		add_node(out, n, node_dist(profile, i));
	}
	out.thread_nodes = moved_thread_nodes(profile.thread_nodes, moved);
	return out;
}

Profile only_process(const Profile &profile, int32_t pid)
{
	Profile out = profile;
	out.nodes.clear();
	out.dists.clear();
	std::erase_if(out.processes, [&](const ProfileProcess &p) { return p.pid != pid; });
	std::erase_if(out.spans, [&](const ProfileSpan &s) { return s.pid != pid; });
	std::vector<uint32_t> moved(profile.nodes.size(), kNoParent);
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		PathNode n = profile.nodes[i];
		if (n.pid != pid)
			continue;
		n.parent = n.parent < i ? moved[n.parent] : kNoParent;
		moved[i] = uint32_t(out.nodes.size());
		add_node(out, n, node_dist(profile, i));
	}
	out.thread_nodes = moved_thread_nodes(profile.thread_nodes, moved);
	return out;
}

// "NAME (tid N)" (call_paths.cpp's thread_parent): the last " (tid N)" is
// ours, whatever the thread named itself.
void split_thread_frame(const std::string &frame, ThreadProfile &t)
{
	size_t at = frame.rfind("(tid ");
	if (at == std::string::npos)
		return;
	t.name = frame.substr(0, at ? at - 1 : 0);
	t.tid = uint32_t(strtoul(frame.c_str() + at + 5, nullptr, 10));
}

std::vector<ThreadProfile> split_by_thread(const Profile &profile)
{
	std::vector<ThreadProfile> out;
	Profile base = profile;
	base.nodes.clear();
	base.dists.clear();
	base.thread_nodes.clear();
	base.per_thread = false;
	base.spans.clear(); // per process, not per thread
	// Per node: its thread (an index into out), or none above it.
	constexpr uint32_t kNone = UINT32_MAX;
	std::vector<uint32_t> thread_of(profile.nodes.size(), kNone), moved(profile.nodes.size(), kNoParent);
	auto frame = profile.thread_nodes.begin();
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		const PathNode &n = profile.nodes[i];
		bool has_parent = n.parent < i;
		if (frame != profile.thread_nodes.end() && *frame == i) {
			frame++;
			ThreadProfile &t = out.emplace_back();
			split_thread_frame(n.function < profile.functions.size() ? profile.functions[n.function] : "", t);
			t.pid = n.pid;
			t.profile = base;
			std::erase_if(t.profile.processes, [&](const ProfileProcess &p) { return p.pid != n.pid; });
			thread_of[i] = uint32_t(out.size() - 1);
			continue;
		}
		thread_of[i] = has_parent ? thread_of[n.parent] : kNone;
		if (thread_of[i] == kNone)
			continue;
		PathNode copy = n;
		Profile &into = out[thread_of[i]].profile;
		copy.parent = moved[n.parent]; // none for the thread's frame: a root
		moved[i] = uint32_t(into.nodes.size());
		add_node(into, copy, node_dist(profile, i));
	}
	return out;
}

namespace {

// (tree parent, name id) -> tree node, by open addressing in one flat array
// of 8-byte slots: the node and 32 bits of its key's hash, the key itself
// read from the node (made before it is added) only when the hashes match.
// A node-based map's allocation per path was most of build_call_tree's time
// at a million paths; slots holding the key too (12 bytes) were 24 MB there.
class ChildIndex {
public:
	ChildIndex(size_t entries, const std::vector<TreeNode> &nodes) : nodes_(nodes)
	{
		size_t slots = 16;
		while (slots < 2 * entries)
			slots *= 2;
		slots_ = huge_vector<Slot>(slots, Slot{kEmpty, 0});
		mask_ = slots - 1;
	}
	// The node of (parent, name), or made_node if it had none (then added:
	// the caller makes nodes[made_node] with that parent and name).
	std::pair<uint32_t, bool> find_or_add(uint32_t parent, uint32_t name, uint32_t made_node)
	{
		uint64_t hash = (uint64_t(parent) << 32 | name) * 0x9E3779B97F4A7C15ull;
		uint32_t tag = uint32_t(hash >> 32);
		for (size_t i = hash >> 20 & mask_;; i = (i + 1) & mask_) {
			Slot &s = slots_[i];
			if (s.node == kEmpty) {
				s = {made_node, tag};
				return {made_node, true};
			}
			if (s.tag == tag && nodes_[s.node].name == name && nodes_[s.node].parent == parent)
				return {s.node, false};
		}
	}

private:
	static constexpr uint32_t kEmpty = UINT32_MAX; // no node index is UINT32_MAX
	struct Slot {
		uint32_t node, tag;
	};
	const std::vector<TreeNode> &nodes_;
	std::vector<Slot> slots_;
	size_t mask_ = 0;
};

// Fills child_begin and child_ids from the nodes' parents: children in
// index order, which is their order of first appearance. Each node's run is
// counted at child_begin[node], summed into its end, then filled from the
// end by the children in reverse order: each end comes down to its run's
// start (no cursor array beside it).
void index_children(CallTree &tree)
{
	size_t n = tree.nodes.size();
	tree.child_begin = huge_vector<uint32_t>(n + 1, 0);
	std::vector<uint32_t> &begin = tree.child_begin;
	for (const TreeNode &node : tree.nodes)
		if (node.parent != kNoParent)
			begin[node.parent]++;
	for (size_t i = 1; i < n; i++)
		begin[i] += begin[i - 1];
	begin[n] = n ? begin[n - 1] : 0;
	tree.child_ids = huge_vector<uint32_t>(begin[n], 0);
	for (uint32_t i = uint32_t(n); i-- > 0;)
		if (tree.nodes[i].parent != kNoParent)
			tree.child_ids[--begin[tree.nodes[i].parent]] = i;
}

} // namespace

CallTree build_call_tree(const Profile &profile)
{
	std::vector<uint32_t> tree_index;
	CallTree tree = build_call_tree(profile, tree_index);
	return tree;
}

CallTree build_call_tree(const Profile &profile, std::vector<uint32_t> &tree_index)
{
	CallTree tree;
	// Functions of the same name are one frame: each name gets one id.
	const std::string unknown = "<unknown>";
	std::unordered_map<std::string_view, uint32_t> name_ids;
	std::vector<uint32_t> name_of(profile.functions.size() + 1);
	for (size_t f = 0; f <= profile.functions.size(); f++) {
		const std::string &name = f < profile.functions.size() ? profile.functions[f] : unknown;
		auto [it, added] = name_ids.try_emplace(name, uint32_t(tree.names.size()));
		if (added)
			tree.names.push_back(name);
		name_of[f] = it->second;
	}
	// Each path's tree node, made as a path first needs it into an array
	// reserved at the paths' number (not grown: copying 64 MB of nodes was a
	// third of this at a million paths; the part a merged tree leaves unused
	// is never touched), with its name and parent; then the sums.
	tree_index = huge_vector<uint32_t>(profile.nodes.size());
	reserve_huge(tree.nodes, profile.nodes.size());
	{
		ChildIndex by_name(profile.nodes.size(), tree.nodes);
		for (size_t i = 0; i < profile.nodes.size(); i++) {
			const PathNode &pn = profile.nodes[i];
			// Parents come first in a valid profile; anything else is treated as a root.
			uint32_t parent = pn.parent < i ? tree_index[pn.parent] : kNoParent;
			uint32_t name = name_of[std::min<size_t>(pn.function, profile.functions.size())];
			auto [node, added] = by_name.find_or_add(parent, name, uint32_t(tree.nodes.size()));
			if (added) {
				tree.nodes.push_back({.name = name, .parent = parent});
				if (parent == kNoParent)
					tree.roots.push_back(node);
			}
			tree_index[i] = node;
		}
	}
	if (profile.distributions) {
		tree.dists = huge_vector<Distribution>(tree.nodes.size());
		for (size_t i = 0; i < profile.nodes.size(); i++)
			add_distribution(tree.dists[tree_index[i]], node_dist(profile, i));
	}
	add_times(tree, profile, tree_index);
	index_children(tree);
	return tree;
}

// Each profile node's counts and times added into its tree node, then the subtrees' sums.
void add_times(CallTree &tree, const Profile &profile, const std::vector<uint32_t> &tree_index)
{
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		const PathNode &pn = profile.nodes[i];
		TreeNode &n = tree.nodes[tree_index[i]];
		n.calls += pn.calls;
		n.open += pn.open;
		uint64_t offcpu = std::min(pn.self_offcpu_ns, pn.self_ns);
		n.self_ns += pn.self_ns;
		n.self_oncpu_ns += pn.self_ns - offcpu;
		n.self_offcpu_ns += offcpu;
		n.uncertain_ns += pn.uncertain_ns;
	}
	sum_subtrees(tree);
}

void refill_times(CallTree &tree, const Profile &profile, const std::vector<uint32_t> &tree_index)
{
	for (TreeNode &n : tree.nodes)
		n = {.name = n.name, .parent = n.parent};
	tree.time = TimeMode::Wall;
	if (!tree.dists.empty()) {
		for (Distribution &d : tree.dists)
			d = {};
		for (size_t i = 0; i < profile.nodes.size(); i++)
			add_distribution(tree.dists[tree_index[i]], node_dist(profile, i));
	}
	add_times(tree, profile, tree_index);
}

void sum_subtrees(CallTree &tree)
{
	tree.total_self_ns = 0;
	for (TreeNode &n : tree.nodes) {
		n.total_ns = n.self_ns;
		tree.total_self_ns += n.self_ns;
	}
	// Children come after their parents: add each finished subtree upwards.
	for (size_t i = tree.nodes.size(); i-- > 0;)
		if (tree.nodes[i].parent != kNoParent)
			tree.nodes[tree.nodes[i].parent].total_ns += tree.nodes[i].total_ns;
}

std::vector<std::string> stack_of(const CallTree &tree, uint32_t node)
{
	std::vector<std::string> stack;
	for (uint32_t i = node; i != kNoParent; i = tree.nodes[i].parent)
		stack.push_back(tree.name(i));
	std::reverse(stack.begin(), stack.end());
	return stack;
}

std::vector<bool> nested_activations(const CallTree &tree)
{
	// Depth first, counting each name's activations on the current stack:
	// one pass, whatever the depth (no walk up the ancestors per node).
	std::vector<bool> nested(tree.nodes.size());
	std::vector<uint32_t> open(tree.names.size());
	std::vector<std::pair<uint32_t, bool>> todo; // node, leaving it
	for (auto root = tree.roots.rbegin(); root != tree.roots.rend(); ++root)
		todo.push_back({*root, false});
	while (!todo.empty()) {
		auto [i, leaving] = todo.back();
		todo.pop_back();
		uint32_t name = tree.nodes[i].name;
		if (leaving) {
			open[name]--;
			continue;
		}
		nested[i] = open[name] > 0;
		open[name]++;
		todo.push_back({i, true});
		for (uint32_t c : tree.children(i))
			todo.push_back({c, false});
	}
	return nested;
}

std::vector<FunctionSummary> summarize_functions(const CallTree &tree, bool durations,
						 const std::vector<bool> *shared_nested)
{
	std::vector<bool> own_nested;
	if (!shared_nested)
		own_nested = nested_activations(tree);
	const std::vector<bool> &nested = shared_nested ? *shared_nested : own_nested;
	std::vector<FunctionSummary> out;
	std::vector<uint32_t> index(tree.names.size(), kNoParent); // name id -> out
	for (size_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		if (index[n.name] == kNoParent) {
			index[n.name] = uint32_t(out.size());
			out.push_back({tree.names[n.name]});
		}
		FunctionSummary &f = out[index[n.name]];
		f.calls += n.calls;
		f.open += n.open;
		f.self_ns += n.self_ns;
		f.self_oncpu_ns += n.self_oncpu_ns;
		f.self_offcpu_ns += n.self_offcpu_ns;
		f.uncertain_ns += n.uncertain_ns;
		if (durations && !tree.dists.empty())
			add_distribution(f.dist, tree.dists[i]);
		// Only outermost activations add to total: an inner one's time is inside the outer's.
		if (nested[i])
			f.recursive = true;
		else
			f.total_ns += n.total_ns;
	}
	return out;
}

Result<SortKey> parse_sort_key(const std::string &key)
{
	static const std::map<std::string, SortKey> keys = {
		{"self", SortKey::Self}, {"total", SortKey::Total}, {"calls", SortKey::Calls},
		{"avg", SortKey::Avg}, {"name", SortKey::Name}};
	auto it = keys.find(key);
	if (it == keys.end())
		return Error{"unknown sort key '" + key + "' (expected self, total, calls, avg or name)"};
	return it->second;
}

Result<TimeMode> parse_time_mode(const std::string &mode)
{
	if (mode == "wall")
		return TimeMode::Wall;
	if (mode == "cpu")
		return TimeMode::Cpu;
	if (mode == "offcpu")
		return TimeMode::Offcpu;
	return Error{"unknown time '" + mode + "' (expected wall, cpu or offcpu)"};
}

const char *time_mode_name(TimeMode mode)
{
	return mode == TimeMode::Cpu ? "cpu" : mode == TimeMode::Offcpu ? "offcpu" : "wall";
}

CallTree with_self_time(CallTree tree, TimeMode mode)
{
	// Wall-clock from wall-clock changes nothing: add_times made each self_ns
	// the sum of its on- and off-CPU parts and each total_ns its subtree's sum
	// (two passes over every node saved, each 64 MB at a million paths).
	if (mode == TimeMode::Wall && tree.time == TimeMode::Wall)
		return tree;
	for (TreeNode &n : tree.nodes) {
		n.self_ns = mode == TimeMode::Cpu	  ? n.self_oncpu_ns
			    : mode == TimeMode::Offcpu ? n.self_offcpu_ns
						       : n.self_oncpu_ns + n.self_offcpu_ns;
		if (mode == TimeMode::Offcpu)
			n.uncertain_ns = 0; // probes run on the CPU: off-CPU time is not compensated
	}
	tree.time = mode;
	sum_subtrees(tree);
	return tree;
}


} // namespace usdtprof
