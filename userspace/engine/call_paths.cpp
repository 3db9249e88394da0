#include "engine/call_paths.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "base/huge_pages.h"

namespace usdtprof {

Distribution distribution_of(const usdtprof_path_stats &s)
{
	Distribution d;
	for (uint32_t b = 0; b < USDTPROF_DIST_BUCKETS; b++)
		if (s.buckets[b])
			d.buckets.emplace_back(b, s.buckets[b]);
	if (!d.empty()) {
		d.min_ns = s.min_ns;
		d.max_ns = std::max(s.min_ns, s.max_ns);
	}
	return d;
}

size_t add_call_paths(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots,
		      const std::map<uint32_t, uint64_t> &label_parents)
{
	size_t names_cut = 0;
	std::unordered_map<uint64_t, size_t> by_path;
	by_path.reserve(records.size());
	// A node per record (and a few labels): no regrowth copying a million nodes.
	reserve_huge(profile.nodes, profile.nodes.size() + records.size() + 64);
	for (size_t i = 0; i < records.size(); i++)
		by_path[records[i].path] = i;
	std::map<std::pair<uint32_t, uint64_t>, uint32_t> func_index;
	std::map<std::pair<std::string, std::string>, uint32_t> name_index;
	std::vector<std::string> locations(profile.locations);
	locations.resize(profile.functions.size());
	auto add_function = [&](const FunctionName &n) {
		auto [it, added] = name_index.try_emplace({n.name, n.location}, uint32_t(profile.functions.size()));
		if (added) {
			profile.functions.push_back(n.name);
			locations.push_back(n.location);
		}
		return it->second;
	};
	auto function_of = [&](const usdtprof_path_stats &s) {
		auto [it, added] = func_index.try_emplace({s.tgid, s.func}, 0);
		if (added) {
			bool cut = false;
			FunctionName name = function_name(lookup, s.tgid, s.func, &cut);
			it->second = add_function(name);
			names_cut += cut;
			if (profile.calibration) {
				std::vector<int32_t> &kinds = profile.calibration->function_kinds;
				kinds.resize(profile.functions.size(), -1);
				if (kinds[it->second] < 0)
					kinds[it->second] = name.cost_kind;
			}
		}
		return it->second;
	};
	// Paths whose parent was dropped (the map was full) hang under one
	// "[parent dropped]" root per process, not among the real roots.
	std::map<uint32_t, uint32_t> dropped_root;
	auto orphan_parent = [&](uint32_t tgid) {
		auto [it, added] = dropped_root.try_emplace(tgid, uint32_t(profile.nodes.size()));
		if (added) {
			PathNode root;
			root.function = add_function({"[parent dropped]", ""});
			root.pid = int32_t(tgid);
			profile.nodes.push_back(root);
		}
		return it->second;
	};
	std::vector<uint32_t> node_of(records.size(), kNoParent);
	std::function<uint32_t(size_t)> place;
	// The roots of a process that works for another hang under one frame
	// that says so (process_roots), created before them, itself under the
	// path given in label_parents when there is one (a parallel worker's
	// leader's statement), placed first. A label being placed has no parent:
	// processes naming each other make no cycle.
	std::map<uint32_t, uint32_t> labelled_root;
	std::set<uint32_t> labelling;
	auto root_parent = [&](uint32_t tgid) {
		auto label = process_roots.find(tgid);
		if (label == process_roots.end())
			return kNoParent;
		if (auto it = labelled_root.find(tgid); it != labelled_root.end())
			return it->second;
		uint32_t parent = kNoParent;
		auto under = label_parents.find(tgid);
		auto record = under == label_parents.end() ? by_path.end() : by_path.find(under->second);
		if (record != by_path.end() && labelling.insert(tgid).second) {
			parent = place(record->second);
			labelling.erase(tgid);
		}
		if (auto it = labelled_root.find(tgid); it != labelled_root.end())
			return it->second;
		PathNode root;
		root.parent = parent;
		root.function = add_function({label->second, ""});
		root.pid = int32_t(tgid);
		root.calls = 1;
		labelled_root[tgid] = uint32_t(profile.nodes.size());
		profile.nodes.push_back(root);
		return labelled_root[tgid];
	};
	place = [&](size_t i) {
		// Collect the unplaced ancestors, then place them top-down.
		std::vector<size_t> chain;
		for (size_t j = i; node_of[j] == kNoParent;) {
			chain.push_back(j);
			auto parent = by_path.find(records[j].stats.parent);
			if (records[j].stats.parent == 0 || parent == by_path.end() ||
			    chain.size() > records.size())
				break;
			j = parent->second;
		}
		for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
			if (node_of[*it] != kNoParent)
				continue;
			const usdtprof_path_stats &s = records[*it].stats;
			auto parent = by_path.find(s.parent);
			PathNode node;
			node.parent = !s.parent ? root_parent(s.tgid)
				      : parent != by_path.end() ? node_of[parent->second]
								: orphan_parent(s.tgid);
			node.function = function_of(s);
			node.pid = int32_t(s.tgid);
			node.calls = s.calls;
			node.open = s.open;
			node.self_ns = s.self_ns;
			node.self_offcpu_ns = s.self_offcpu_ns;
			node.total_ns = s.total_ns;
			node.dist = distribution_of(s);
			if (node_of[*it] != kNoParent)
				continue; // placed by root_parent, under a label's parent
			node_of[*it] = uint32_t(profile.nodes.size());
			if (!s.parent && node.parent != kNoParent)
				profile.nodes[node.parent].total_ns += node.total_ns;
			profile.nodes.push_back(node);
		}
		return node_of[i];
	};
	profile.distributions = true;
	for (size_t i = 0; i < records.size(); i++)
		place(i);
	if (profile.calibration)
		profile.calibration->function_kinds.resize(profile.functions.size(), -1);
	if (std::any_of(locations.begin(), locations.end(), [](const std::string &l) { return !l.empty(); }))
		profile.locations = std::move(locations);
	return names_cut;
}

} // namespace usdtprof
