// report --callers / --callees: the edges into and out of one function of the
// calling-context tree.
#include "report/callers.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "profile/compensation.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json;

// True when a proper ancestor of node has the node's name.
bool inside_itself(const CallTree &tree, uint32_t node)
{
	for (uint32_t p = tree.nodes[node].parent; p != kNoParent; p = tree.nodes[p].parent)
		if (tree.nodes[p].name == tree.nodes[node].name) // name ids: equal names are one id
			return true;
	return false;
}

void add_edge(std::map<std::string, Edge> &edges, const std::string &name, uint64_t calls, uint64_t time_ns)
{
	Edge &e = edges[name];
	e.name = name;
	e.calls += calls;
	e.time_ns += time_ns;
}

std::vector<Edge> ranked(std::map<std::string, Edge> edges)
{
	std::vector<Edge> out;
	for (auto &[name, e] : edges)
		out.push_back(std::move(e));
	std::stable_sort(out.begin(), out.end(), [](const Edge &a, const Edge &b) {
		return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.calls > b.calls;
	});
	return out;
}

std::string row(uint64_t calls, uint64_t time_ns, uint64_t whole_ns, const std::string &name)
{
	char buf[96];
	snprintf(buf, sizeof buf, "%12llu %10s %6.1f%%  ", static_cast<unsigned long long>(calls), human_ns(time_ns).c_str(),
		 whole_ns ? 100.0 * double(time_ns) / double(whole_ns) : 0.0);
	return buf + escape_text(name) + "\n";
}

std::string header_text(const char *what, const Neighbours &n, TimeMode time)
{
	const FunctionSummary &f = n.function;
	std::string domain = time == TimeMode::Cpu ? " (on-CPU time)" : time == TimeMode::Offcpu ? " (off-CPU time)" : "";
	return std::string("usdtprof ") + what + " of " + escape_text(f.name) + domain + ": " + std::to_string(f.calls) +
	       " calls, self " + human_ns(f.self_ns) + ", total " + human_ns(f.total_ns) +
	       (f.recursive ? " [recursive]" : "") + "\n\n";
}

// The header line and one row per edge, times as shares of the function's total.
std::string edges_text(const char *what, const char *column, const std::vector<Edge> &edges, const Neighbours &n,
		       TimeMode time)
{
	std::string out = header_text(what, n, time);
	char buf[96];
	snprintf(buf, sizeof buf, "%12s %10s %7s  %s\n", "calls", "time", "time%", column);
	out += buf;
	for (const Edge &e : edges)
		out += row(e.calls, e.time_ns, n.function.total_ns, e.name);
	return out;
}

std::string callers_text(const Neighbours &n, TimeMode time)
{
	std::string out = edges_text("callers", "caller", n.callers, n, time);
	if (n.function.recursive)
		out += "\ncalls made inside an activation of the function itself add no time: it is in the outermost one's\n";
	return out;
}

std::string callees_text(const Neighbours &n, TimeMode time)
{
	std::string out = edges_text("callees", "callee", n.callees, n, time);
	char buf[96];
	snprintf(buf, sizeof buf, "%12s %10s %6.1f%%  %s\n", "", human_ns(n.outer_self_ns).c_str(),
		 n.function.total_ns ? 100.0 * double(n.outer_self_ns) / double(n.function.total_ns) : 0.0, "[self]");
	out += buf;
	if (n.function.recursive)
		out += "\ntimes are of the outermost activations: what inner ones call is in the time of the edge that led to them\n";
	return out;
}

json edges_json(const std::vector<Edge> &edges)
{
	json out = json::array();
	for (const Edge &e : edges)
		out.push_back({{"name", e.name}, {"calls", e.calls}, {"time_ns", e.time_ns}});
	return out;
}

json function_json(const FunctionSummary &f)
{
	return {{"name", f.name}, {"calls", f.calls}, {"open", f.open}, {"self_ns", f.self_ns},
		{"total_ns", f.total_ns}, {"recursive", f.recursive}};
}

Result<Neighbours> find(const CallTree &tree, const std::string &name)
{
	std::optional<Neighbours> n = neighbours_of(tree, name);
	if (!n)
		return Error{"no function named '" + escape_text(name) + "' in the profile"};
	return *n;
}

} // namespace

std::optional<Neighbours> neighbours_of(const CallTree &tree, const std::string &name)
{
	std::map<std::string, Edge> callers, callees;
	Neighbours out;
	bool found = false;
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		if (tree.names[n.name] != name)
			continue;
		found = true;
		bool outermost = !inside_itself(tree, i);
		add_edge(callers, n.parent == kNoParent ? kRootCaller : tree.name(n.parent), n.calls,
			 outermost ? n.total_ns : 0);
		for (uint32_t c : tree.children(i))
			add_edge(callees, tree.name(c), tree.nodes[c].calls, outermost ? tree.nodes[c].total_ns : 0);
		if (outermost)
			out.outer_self_ns += n.self_ns;
	}
	if (!found)
		return std::nullopt;
	for (FunctionSummary &f : summarize_functions(tree))
		if (f.name == name)
			out.function = std::move(f);
	out.callers = ranked(std::move(callers));
	out.callees = ranked(std::move(callees));
	return out;
}

Result<std::string> render_neighbours(const Profile &profile, const ReportOptions &options, bool as_json,
				      const std::string &callers_of, const std::string &callees_of)
{
	CallTree tree = with_self_time(build_call_tree(options.raw ? profile : compensate(profile)), options.time);
	json j = {{"time", time_mode_name(tree.time)}, {"total_self_ns", tree.total_self_ns}};
	std::string text;
	if (!callers_of.empty()) {
		auto n = find(tree, callers_of);
		if (!n)
			return n.error();
		j["callers"] = {{"function", function_json(n->function)}, {"edges", edges_json(n->callers)}};
		text += callers_text(*n, tree.time);
	}
	if (!callees_of.empty()) {
		auto n = find(tree, callees_of);
		if (!n)
			return n.error();
		j["callees"] = {{"function", function_json(n->function)}, {"outer_self_ns", n->outer_self_ns},
				{"edges", edges_json(n->callees)}};
		text += (text.empty() ? "" : "\n") + callees_text(*n, tree.time);
	}
	if (as_json)
		return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
	return text;
}

} // namespace usdtprof
