#include "profile/compensation.h"
#include "base/huge_pages.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace usdtprof {

namespace {

const ProbeCost *cost_of(const Profile &p, uint32_t function)
{
	const Calibration &c = *p.calibration;
	if (function >= c.function_kinds.size())
		return nullptr;
	int32_t k = c.function_kinds[function];
	return k >= 0 && size_t(k) < c.kinds.size() ? &c.kinds[size_t(k)] : nullptr;
}

bool is_task_frame(const Profile &p, uint32_t function)
{
	return function < p.functions.size() && p.functions[function] == "[task]";
}

uint64_t rounded(double ns)
{
	return ns > 0 ? uint64_t(std::llround(ns)) : 0;
}

} // namespace

Profile compensate(const Profile &raw, CompensationSummary *summary)
{
	Profile out = raw;
	compensate_in_place(out, summary);
	return out;
}

namespace {

// Per function, once (not per path): its probe cost and whether it is a [task] frame.
struct FunctionCost {
	const ProbeCost *cost = nullptr;
	bool task = false;
};

struct FunctionCosts {
	std::vector<FunctionCost> of;
	FunctionCost operator()(uint32_t f) const { return f < of.size() ? of[f] : FunctionCost{}; }
};

FunctionCosts function_costs(const Profile &raw)
{
	FunctionCosts costs;
	if (!raw.calibration)
		return costs;
	costs.of.resize(std::max(raw.functions.size(), raw.calibration->function_kinds.size()));
	for (size_t f = 0; f < costs.of.size(); f++)
		costs.of[f] = {cost_of(raw, uint32_t(f)), is_task_frame(raw, uint32_t(f))};
	return costs;
}

// Per path, side by side (one cache line, one array of 24 bytes a path):
// what its direct children added to its self time and the spread, and
// what was removed from its whole subtree, for totals.
struct Sums {
	double child_cost = 0, child_spread = 0, child_calls = 0;
	uint64_t removed = 0;
};

// add(parent, child, its cost) for each path whose probes cost its
// parent's path something, in path order: sums taken through it come out
// the same to the last bit wherever they are taken.
template <class Add> void for_each_child_cost(const Profile &raw, const FunctionCosts &function, Add add)
{
	size_t n = raw.nodes.size();
	for (size_t i = 0; i < n; i++) {
		const PathNode &c = raw.nodes[i];
		const ProbeCost *k = function(c.function).cost;
		if (!k || c.parent == kNoParent || c.parent >= i)
			continue;
		FunctionCost parent = function(raw.nodes[c.parent].function);
		if (!parent.cost && !parent.task)
			continue; // a synthetic parent: the caller's cost landed on no path
		add(c.parent, c, *k);
	}
}

std::vector<Sums> children_costs(const Profile &raw, const FunctionCosts &function)
{
	std::vector<Sums> sums = huge_vector<Sums>(raw.nodes.size());
	for_each_child_cost(raw, function, [&](uint32_t parent, const PathNode &c, const ProbeCost &k) {
		sums[parent].child_cost += double(c.calls) * k.caller_ns;
		sums[parent].child_spread += double(c.calls) * k.caller_spread_ns;
		sums[parent].child_calls += double(c.calls);
	});
	return sums;
}

// What a path's self time loses: its cost, rounded, taken from its on-CPU
// part and no more (clamped).
uint64_t take_of(const PathNode &node, double cost, bool *clamped)
{
	uint64_t oncpu = node.self_ns - std::min(node.self_offcpu_ns, node.self_ns);
	uint64_t take = rounded(cost);
	*clamped = take > oncpu;
	return std::min(take, oncpu);
}

// From the last path back: children come after their parents, so each
// path's subtree has added its removals when its own turn comes; then its
// take, its total, and all of it passed on to its parent. inside[i] (when
// not empty): what was removed within path i's own calls, on their thread
// (a [task] frame's subtree ran on another thread: not inside its
// creator's durations).
void take_costs(Profile &out, const FunctionCosts &function, std::vector<Sums> &sums, std::vector<uint64_t> &inside,
		CompensationSummary &s)
{
	for (size_t i = out.nodes.size(); i-- > 0;) {
		PathNode &node = out.nodes[i];
		FunctionCost f = function(node.function);
		const ProbeCost *k = f.cost;
		Sums &sum = sums[i];
		double cost = sum.child_cost + (k ? double(node.calls) * k->own_ns : 0) + double(node.probe_ns);
		double spread = sum.child_spread + (k ? double(node.calls) * k->own_spread_ns : 0);
		bool clamped;
		uint64_t take = take_of(node, cost, &clamped);
		s.clamped += clamped;
		node.self_ns -= take;
		node.uncertain_ns = rounded(spread);
		sum.removed += take;
		s.removed_ns += take;
		s.measured_ns += node.probe_ns;
		node.total_ns = std::max(node.self_ns, node.total_ns - std::min(node.total_ns, sum.removed));
		if (!inside.empty())
			inside[i] += take;
		if (node.parent != kNoParent && node.parent < i) {
			sums[node.parent].removed += sum.removed;
			if (!inside.empty() && !f.task)
				inside[node.parent] += inside[i];
		}
	}
}

// Each path's durations shortened by what compensation took out of its
// calls (inside): its own probes' cost from every call, exactly (each call
// holds its own two hits), and its probed descendants' in proportion to
// what is left of each call: a call that ran longer had, as a rule, more
// descendants. (The same average taken from every call took a 184 us call
// to 0 ns when the path's other calls had hundreds of children.) Exact for
// their sum and for a path called once; never below 0.
// Probe time measured in band is a path's own hits' and its children's,
// shared by their number (a call and each child call pay two half hits).
void shorten_durations(Profile &out, const FunctionCosts &function, const std::vector<Sums> &sums,
		       const std::vector<uint64_t> &inside)
{
	for (size_t i = 0; i < out.nodes.size() && i < out.dists.size(); i++) {
		const PathNode &node = out.nodes[i];
		if (!node.calls || !inside[i] || out.dists[i].empty())
			continue;
		const ProbeCost *k = function(node.function).cost;
		double measured = double(node.probe_ns) / (double(node.calls) + sums[i].child_calls);
		uint64_t own = std::min(rounded((k ? k->own_ns : 0) + measured), inside[i] / node.calls);
		uint64_t raw_total = node.total_ns + inside[i];
		uint64_t raw_rest = raw_total - std::min(raw_total, own * node.calls);
		shorten(out.dists[i], DurationCut{.own_ns = own, .keep_num = node.total_ns, .keep_den = raw_rest});
	}
}

} // namespace

bool compensates(const Profile &raw)
{
	return (raw.calibration && !raw.calibration->kinds.empty()) || has_probe_time(raw);
}

std::vector<uint64_t> compensated_self_ns(const Profile &raw)
{
	std::vector<uint64_t> self;
	if (!compensates(raw))
		return self;
	FunctionCosts function = function_costs(raw);
	// Each path's children's caller cost, summed as children_costs sums it.
	std::vector<double> cost = huge_vector<double>(raw.nodes.size(), 0.0);
	for_each_child_cost(raw, function, [&](uint32_t parent, const PathNode &c, const ProbeCost &k) {
		cost[parent] += double(c.calls) * k.caller_ns;
	});
	self = huge_vector<uint64_t>(raw.nodes.size(), 0);
	for (size_t i = 0; i < raw.nodes.size(); i++) {
		const PathNode &node = raw.nodes[i];
		const ProbeCost *k = function(node.function).cost;
		bool clamped;
		double own = (k ? double(node.calls) * k->own_ns : 0) + double(node.probe_ns);
		self[i] = node.self_ns - take_of(node, cost[i] + own, &clamped);
	}
	return self;
}

// Only calls and the tree's shape are read from the raw times: they do not change.
void compensate_in_place(Profile &profile, CompensationSummary *summary)
{
	CompensationSummary s;
	if (compensates(profile)) {
		s.applied = true;
		FunctionCosts function = function_costs(profile);
		std::vector<Sums> sums = children_costs(profile, function);
		std::vector<uint64_t> inside;
		if (profile.distributions)
			inside = huge_vector<uint64_t>(profile.nodes.size(), 0);
		take_costs(profile, function, sums, inside, s);
		if (profile.distributions)
			shorten_durations(profile, function, sums, inside);
		// Taken out: compensating again (a merge of parts compensated
		// apart) takes none.
		for (PathNode &node : profile.nodes)
			node.probe_ns = 0;
	}
	if (summary)
		*summary = s;
}

std::string uncompensated_kinds(const Calibration &calibration)
{
	std::string unknown;
	for (const ProbeCost &k : calibration.kinds) {
		if (k.uncompensated_ns < 0)
			unknown += (unknown.empty() ? "" : ", ") + k.kind;
		else if (k.uncompensated_ns > 0) {
			char buf[160];
			snprintf(buf, sizeof buf, "%s%s %.0f ns", unknown.empty() ? "" : ", ", k.kind.c_str(),
				 k.uncompensated_ns);
			unknown += buf;
		}
	}
	return unknown.empty() ? "" : unknown + "; per call: unknown";
}

namespace {

const char *const kUncompensated = "not compensated: the runtime's own probe code";
const char *const kUncalibrated = "which usdtprof cannot calibrate in its own process";

// Which merged profiles (numbered from 1 in the order read) left the same
// runtime probe code uncompensated: "1, 3 and 4".
std::string part_numbers(const std::vector<size_t> &parts)
{
	std::string out;
	for (size_t k = 0; k < parts.size(); k++)
		out += (k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ") + std::to_string(parts[k] + 1);
	return out;
}

// The merged parts' uncompensated runtime probe code: said once as one
// profile's report says it when every compensated part left the same,
// else each with the parts that left it.
std::string merged_uncompensated_line(const Profile &profile)
{
	std::vector<std::pair<std::string, std::vector<size_t>>> groups; // in order of first appearance
	for (size_t i = 0; i < profile.part_uncompensated.size(); i++) {
		const std::string &text = profile.part_uncompensated[i];
		if (text.empty())
			continue;
		auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == text; });
		if (it == groups.end())
			groups.push_back({text, {i}});
		else
			it->second.push_back(i);
	}
	if (groups.empty())
		return "";
	if (groups.size() == 1 && groups[0].second.size() == profile.compensated_parts)
		return std::string(kUncompensated) + " (" + groups[0].first + "), " + kUncalibrated + "\n";
	std::string out = std::string(kUncompensated) + ", " + kUncalibrated + ":";
	for (size_t g = 0; g < groups.size(); g++)
		out += std::string(g ? ";" : "") + " (" + groups[g].first + ") in merged profile" +
		       (groups[g].second.size() > 1 ? "s " : " ") + part_numbers(groups[g].second);
	return out + " of " + std::to_string(profile.merged_parts) + " (numbered in the order read)\n";
}

} // namespace

std::string compensation_line(const Profile &raw, const CompensationSummary &summary)
{
	if (!summary.applied)
		return "";
	std::string kinds;
	if (raw.calibration)
		for (const ProbeCost &k : raw.calibration->kinds) {
			char buf[160];
			snprintf(buf, sizeof buf, "%s%s own %.0f ns, caller %.0f ns (+-%.0f/%.0f)",
				 kinds.empty() ? "" : "; ", k.kind.c_str(), k.own_ns, k.caller_ns, k.own_spread_ns,
				 k.caller_spread_ns);
			kinds += buf;
		}
	std::string out;
	if (summary.measured_ns) {
		char buf[200];
		snprintf(buf, sizeof buf, "probe time measured in band taken out: %.3f ms (each hit of usdtprof.h's probes, by "
			 "the program's own clock)%s\n", double(summary.measured_ns) / 1e6,
			 kinds.empty() ? "; --raw shows times as measured" : "");
		out += buf;
	}
	if (!kinds.empty())
		out += std::string(summary.measured_ns ? "and calibrated" : "probe overhead taken out") +
		       " (per call; --raw shows times as measured): " + kinds + "\n";
	if (!raw.calibration)
		return out;
	if (std::string unknown = uncompensated_kinds(*raw.calibration); !unknown.empty())
		out += std::string(kUncompensated) + " (" + unknown + "), " + kUncalibrated + "\n";
	if (summary.clamped)
		out += std::to_string(summary.clamped) + " self times would have gone below zero: shown as 0\n";
	return out;
}

std::string merged_compensation_line(const Profile &profile)
{
	if (!profile.compensated_parts)
		return "";
	std::string out = "probe overhead taken out of each of " + std::to_string(profile.compensated_parts) + " of the " +
			  std::to_string(profile.merged_parts) +
			  " merged profiles with its own calibration, before merging (they were calibrated apart; "
			  "--raw shows times as measured)";
	if (profile.compensated_parts < profile.merged_parts)
		out += "; the other " + std::to_string(profile.merged_parts - profile.compensated_parts) +
		       " have no calibration: as measured";
	return out + "\n" + merged_uncompensated_line(profile);
}

std::string merged_durations_line(const Profile &profile)
{
	if (!profile.parts_without_durations)
		return "";
	return "durations (min, p50, p99, max) not shown: " + std::to_string(profile.parts_without_durations) +
	       " of the merged profiles carry none (recorded by a usdtprof older than them)\n";
}

std::vector<std::string> held_semaphores(const Profile &profile)
{
	std::vector<std::string> out;
	for (const ProfileProbe &p : profile.probes) {
		std::string name = p.provider + ":" + p.name;
		if (p.role == "semaphore" && std::find(out.begin(), out.end(), name) == out.end())
			out.push_back(name);
	}
	return out;
}

std::string held_semaphore_line(const Profile &profile,
				const std::function<const char *(std::string_view probe)> &cost_of)
{
	std::string names, costs;
	for (const std::string &name : held_semaphores(profile)) {
		names += (names.empty() ? "" : ", ") + name;
		if (const char *cost = cost_of(name))
			costs += "; under " + name + "'s, " + cost;
	}
	if (names.empty())
		return "";
	if (!costs.empty())
		costs[0] = ':';
	return "not compensated: what the semaphores usdtprof held up cost the runtime (" + names +
	       "; not probed, held so that the probes recorded fire)" + costs + "\n";
}

} // namespace usdtprof
