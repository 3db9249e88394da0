// The HTML report (formats.cpp, docs/html.md): one self-contained page with a
// flame graph, the function table, a function's sandwich, the recording's
// facts, and switches between time domains and processes. The page gets the
// calling-context tree with one root per process (the script merges them for
// "all processes" as build_call_tree does) and computes the rest itself.
#include <algorithm>
#include <unordered_map>

#include "profile/anomalies.h"
#include "profile/compensation.h"
#include "report/html_page.h"
#include "report/report.h"
#include "base/sink.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json;

// What the report's footer says is left uncompensated (compensation_line,
// merged_compensation_line): the runtime's own probe code; "" for nothing.
std::string uncompensated_text(const Profile &raw, const CompensationSummary &summary)
{
	std::string lines = compensation_line(raw, summary) + merged_compensation_line(raw);
	size_t at = lines.find("not compensated: ");
	return at == std::string::npos ? "" : lines.substr(at, lines.find('\n', at) - at);
}

json facts_json(const Profile &raw, const CompensationSummary &summary, bool compensated)
{
	json processes = json::array();
	for (const ProfileProcess &p : raw.processes) {
		json cmdline = json::array();
		for (const std::string &arg : p.cmdline)
			cmdline.push_back(escape_text(arg));
		processes.push_back({{"pid", p.pid}, {"comm", escape_text(p.comm)}, {"cmdline", cmdline}});
	}
	json command = json::array();
	for (const std::string &arg : raw.command)
		command.push_back(escape_text(arg));
	json anomalies = json::array();
	for (const Anomaly &a : anomaly_table()) {
		auto it = raw.anomalies.find(a.name);
		anomalies.push_back({{"name", a.name}, {"count", it == raw.anomalies.end() ? 0 : it->second},
				     {"what", a.description ? a.description : ""}});
	}
	for (const auto &[name, count] : raw.anomalies)
		if (std::none_of(anomaly_table().begin(), anomaly_table().end(),
				 [&](const Anomaly &a) { return name == a.name; }))
			anomalies.push_back({{"name", escape_text(name)}, {"count", count}, {"what", ""}});
	json calibration = nullptr;
	if (raw.calibration) {
		json kinds = json::array();
		for (const ProbeCost &k : raw.calibration->kinds)
			kinds.push_back({{"kind", k.kind}, {"own_ns", k.own_ns}, {"caller_ns", k.caller_ns},
					 {"own_spread_ns", k.own_spread_ns}, {"caller_spread_ns", k.caller_spread_ns},
					 {"batches", k.batches}});
		calibration = {{"compensated", compensated}, {"kinds", kinds}, {"cost_ns", raw.calibration->cost_ns},
			       {"removed_ns", summary.removed_ns}, {"clamped", summary.clamped},
			       {"offcpu_hook", raw.calibration->offcpu_hook}};
	}
	return {{"command", command}, {"processes", processes}, {"start_unix_ns", raw.start_unix_ns},
		{"stop_unix_ns", raw.stop_unix_ns}, {"duration_ns", raw.duration_ns},
		{"sampled_fraction", raw.sampled_fraction}, {"anomalies", anomalies}, {"calibration", calibration},
		{"compensated_parts", raw.compensated_parts}, {"merged_parts", raw.merged_parts},
		{"uncompensated", uncompensated_text(raw, summary)}};
}

// --per-thread: the threads' frames in the tree, {node, pid, tid, name},
// largest (wall-clock) first, then by tid: the page's thread switch.
json threads_json(const CallTree &tree, const Profile &split, const std::vector<uint32_t> &tree_index)
{
	std::vector<std::pair<uint32_t, ThreadProfile>> threads;
	for (uint32_t n : split.thread_nodes) {
		ThreadProfile t;
		split_thread_frame(split.functions[split.nodes[n].function], t);
		t.pid = split.nodes[n].pid;
		threads.emplace_back(tree_index[n], std::move(t));
	}
	std::stable_sort(threads.begin(), threads.end(), [&](const auto &a, const auto &b) {
		uint64_t x = tree.nodes[a.first].total_ns, y = tree.nodes[b.first].total_ns;
		return x != y ? x > y : a.second.tid < b.second.tid;
	});
	json out = json::array();
	for (const auto &[node, t] : threads)
		out.push_back({{"node", node}, {"pid", t.pid}, {"tid", t.tid}, {"name", escape_text(t.name)}});
	return out;
}

// A node's durations for the page: min, max, [bucket, count, ...]; none
// when the profile carries none (or the node timed no call).
void add_durations(json &row, const CallTree &tree, uint32_t node)
{
	if (node >= tree.dists.size() || tree.dists[node].empty())
		return;
	const Distribution &d = tree.dists[node];
	json buckets = json::array();
	for (const auto &[b, n] : d.buckets) {
		buckets.push_back(b);
		buckets.push_back(n);
	}
	row.push_back(d.min_ns);
	row.push_back(d.max_ns);
	row.push_back(std::move(buckets));
}

// The tree as arrays, one row per node, parents before children:
// [name index, parent (-1: a root), calls, open, on-CPU self ns, off-CPU self ns
// (, durations: min ns, max ns, [bucket, count, ...])].
// Roots are the processes ("comm (pid N)"), each with its pid in "roots".
// "uncertain" (only when some node has any): per node, the calibration's
// spread over its calls in ns (TreeNode::uncertain_ns), for the page's "~"
// marks; a number per node, not in the rows, so rows keep their layout.
json tree_json(const CallTree &tree, const Profile &split)
{
	json names = json::array(), nodes = json::array(), roots = json::array(), uncertain = json::array();
	bool any_uncertain = false;
	std::vector<int64_t> name_index(tree.names.size(), -1); // the tree's name id -> names
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		if (name_index[n.name] < 0) {
			name_index[n.name] = int64_t(names.size());
			names.push_back(escape_text(tree.names[n.name]));
		}
		json row = {name_index[n.name], n.parent == kNoParent ? -1 : int64_t(n.parent), n.calls, n.open,
			    n.self_oncpu_ns, n.self_offcpu_ns};
		add_durations(row, tree, i);
		nodes.push_back(std::move(row));
		uncertain.push_back(n.uncertain_ns);
		any_uncertain = any_uncertain || n.uncertain_ns;
	}
	// split_by_process names its roots after the processes.
	std::unordered_map<std::string, int32_t> pid_of;
	for (const PathNode &p : split.nodes)
		if (p.parent == kNoParent)
			pid_of.emplace(split.functions[p.function], p.pid);
	for (uint32_t root : tree.roots)
		roots.push_back({{"node", root}, {"pid", pid_of[tree.name(root)]}});
	json out = {{"names", names}, {"nodes", nodes}, {"roots", roots}};
	if (any_uncertain)
		out["uncertain"] = std::move(uncertain);
	return out;
}

std::string title_of(const Profile &profile)
{
	std::string what = !profile.command.empty() ? profile.command[0]
			   : !profile.processes.empty() ? profile.processes[0].comm : std::string("profile");
	return "usdtprof: " + escape_text(what);
}

} // namespace

void html_report(Profile measured, const ReportOptions &options, Sink &out)
{
	CompensationSummary summary;
	Profile compensated = options.raw ? measured : compensate(measured, &summary);
	Profile split = split_by_process(compensated);
	std::vector<uint32_t> tree_index;
	CallTree tree = build_call_tree(split, tree_index);
	json data = {{"kind", "report"},
		     {"time", time_mode_name(options.time)},
		     {"raw", options.raw},
		     {"facts", facts_json(measured, summary, !options.raw)},
		     {"tree", tree_json(tree, split)}};
	if (options.per_thread)
		data["tree"]["threads"] = threads_json(tree, split, tree_index);
	out.write(html_page(title_of(measured), data));
}

} // namespace usdtprof
