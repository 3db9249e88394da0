#include "engine/call_paths.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "base/huge_pages.h"
#include "base/id_index.h"

namespace usdtprof {

PathStats path_stats_of(const usdtprof_path_stats &s)
{
	PathStats p;
	p.parent = s.parent;
	p.func = s.func;
	p.tgid = s.tgid;
	p.calls = s.calls;
	p.open = s.open;
	p.self_ns = s.self_ns;
	p.total_ns = s.total_ns;
	// Stolen time is read apart from the clock (bpf/offcpu.bpf.h): a steal
	// between the two reads can put a few ns (or one theft) more off-CPU
	// than the frame's self time.
	p.self_offcpu_ns = std::min(s.self_offcpu_ns, s.self_ns);
	p.min_ns = s.min_ns;
	p.max_ns = s.max_ns;
	uint32_t used = 0;
	for (uint32_t b = 0; b < USDTPROF_DIST_BUCKETS; b++)
		used += s.buckets[b] != 0;
	p.buckets.reserve(used); // one allocation per path, none for one bucket
	for (uint32_t b = 0; b < USDTPROF_DIST_BUCKETS; b++)
		if (s.buckets[b])
			p.buckets.emplace_back(b, s.buckets[b]);
	return p;
}

usdtprof_path_stats kernel_stats_of(const PathStats &p)
{
	usdtprof_path_stats s{};
	s.parent = p.parent;
	s.func = p.func;
	s.tgid = p.tgid;
	s.calls = p.calls;
	s.open = p.open;
	s.self_ns = p.self_ns;
	s.total_ns = p.total_ns;
	s.self_offcpu_ns = p.self_offcpu_ns;
	s.min_ns = p.min_ns;
	s.max_ns = p.max_ns;
	for (auto [b, n] : p.buckets)
		if (b < USDTPROF_DIST_BUCKETS)
			s.buckets[b] = n;
	return s;
}

Distribution distribution_of(const PathStats &s)
{
	Distribution d;
	d.buckets = s.buckets;
	if (!d.empty()) {
		d.min_ns = s.min_ns;
		d.max_ns = std::max(s.min_ns, s.max_ns);
	}
	return d;
}

namespace {

struct FunctionIdHash {
	size_t operator()(const std::pair<uint32_t, uint64_t> &id) const
	{
		return std::hash<uint64_t>()(id.second * 0x9e3779b97f4a7c15ULL ^ id.first);
	}
};

// add_call_paths' state: the records by path id, the functions and labels
// made so far, and each record's node once placed.
class PathPlacer {
public:
	PathPlacer(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup,
		   const std::map<uint32_t, std::string> &process_roots,
		   const std::map<uint32_t, uint64_t> &label_parents, const ThreadNamer &thread_name)
		: profile_(profile), records_(records), lookup_(lookup), process_roots_(process_roots),
		  label_parents_(label_parents), thread_name_(thread_name),
		  id_of_(huge_vector<uint32_t>(records.size(), 0)), locations_(profile.locations),
		  node_of_(huge_vector<uint32_t>(records.size(), kNoParent)),
		  parent_at_(huge_vector<uint32_t>(records.size(), IdIndex::kNone))
	{
		find_parents();
		// A node per record (and a few labels): no regrowth copying a million nodes.
		reserve_huge(profile.nodes, profile.nodes.size() + records.size() + 64);
		locations_.resize(profile.functions.size());
	}

	size_t run()
	{
		name_functions();
		profile_.distributions = true;
		fit_dists(profile_);
		reserve_huge(profile_.dists, profile_.nodes.capacity());
		for (size_t i = 0; i < records_.size(); i++)
			place(i);
		if (profile_.calibration)
			profile_.calibration->function_kinds.resize(profile_.functions.size(), -1);
		if (std::any_of(locations_.begin(), locations_.end(), [](const std::string &l) { return !l.empty(); }))
			profile_.locations = std::move(locations_);
		return names_cut_;
	}

private:
	// Each record's parent record, and the record of each label's parent
	// path, looked up once in an index of the records' path ids, which is
	// then freed: at a million paths its 24 MB were alive beside the whole
	// profile (the monitor's peak), and, given back before the nodes are
	// made, its pages are the nodes' first ones, not fresh pages to fault in.
	void find_parents()
	{
		IdIndex by_path(records_.size());
		for (size_t i = 0; i < records_.size(); i++)
			by_path.set(records_[i].path, uint32_t(i));
		for (size_t i = 0; i < records_.size(); i++)
			parent_at_[i] = by_path.find(records_[i].stats.parent);
		for (const auto &[tgid, path] : label_parents_)
			label_record_[tgid] = by_path.find(path);
	}

	uint32_t add_function(const FunctionName &n)
	{
		auto [it, added] = name_index_.try_emplace({n.name, n.location}, uint32_t(profile_.functions.size()));
		if (added) {
			profile_.functions.push_back(n.name);
			locations_.push_back(n.location);
		}
		return it->second;
	}

	// Each distinct function id (process, id) named once, before any node:
	// a lambda's name depends on what it calls (JavaLambdaNames).
	void name_functions()
	{
		for (size_t i = 0; i < records_.size(); i++) {
			const PathStats &s = records_[i].stats;
			auto [it, added] = func_index_.try_emplace({s.tgid, s.func}, uint32_t(ids_.size()));
			if (added) {
				bool cut = false;
				ids_.push_back({s.tgid, function_name(lookup_, s.tgid, s.func, &cut), kNoFunction});
				names_cut_ += cut;
			}
			id_of_[i] = it->second;
		}
		rename_lambdas();
	}

	// A lambda's hidden class named by the method its methods call, from
	// each record's caller (only when some function is a lambda's).
	void rename_lambdas()
	{
		std::vector<bool> lambda(ids_.size());
		for (size_t id = 0; id < ids_.size(); id++)
			lambda[id] = JavaLambdaNames::is_lambda(ids_[id].name.name);
		if (std::find(lambda.begin(), lambda.end(), true) == lambda.end())
			return;
		JavaLambdaNames lambdas;
		for (size_t i = 0; i < records_.size(); i++)
			if (uint32_t p = parent_at_[i]; p != IdIndex::kNone && lambda[id_of_[p]])
				lambdas.add_call(records_[i].stats.tgid, ids_[id_of_[p]].name.name, ids_[id_of_[i]].name.name);
		for (size_t id = 0; id < ids_.size(); id++)
			if (lambda[id])
				ids_[id].name.name = lambdas.name(ids_[id].tgid, ids_[id].name.name);
	}

	uint32_t function_of(size_t record)
	{
		NamedId &id = ids_[id_of_[record]];
		if (id.function == kNoFunction) {
			id.function = add_function(id.name);
			if (profile_.calibration) {
				std::vector<int32_t> &kinds = profile_.calibration->function_kinds;
				kinds.resize(profile_.functions.size(), -1);
				if (kinds[id.function] < 0)
					kinds[id.function] = id.name.cost_kind;
			}
			id.name = {}; // in profile_.functions now
		}
		return id.function;
	}

	// Paths whose parent was dropped (the map was full) hang under one
	// "[parent dropped]" root per process, not among the real roots.
	uint32_t orphan_parent(uint32_t tgid)
	{
		auto [it, added] = dropped_root_.try_emplace(tgid, uint32_t(profile_.nodes.size()));
		if (added) {
			PathNode root;
			root.function = add_function({"[parent dropped]", ""});
			root.pid = int32_t(tgid);
			add_node(profile_, root);
		}
		return it->second;
	}

	// The roots of a process that works for another hang under one frame
	// that says so (process_roots), created before them, itself under the
	// path given in label_parents when there is one (a parallel worker's
	// leader's statement), placed first. A label being placed has no parent:
	// processes naming each other make no cycle.
	uint32_t root_parent(uint32_t tgid)
	{
		auto label = process_roots_.find(tgid);
		if (label == process_roots_.end())
			return kNoParent;
		if (auto it = labelled_root_.find(tgid); it != labelled_root_.end())
			return it->second;
		uint32_t parent = kNoParent;
		auto under = label_record_.find(tgid);
		uint32_t record = under == label_record_.end() ? IdIndex::kNone : under->second;
		if (record != IdIndex::kNone && labelling_.insert(tgid).second) {
			parent = place(record);
			labelling_.erase(tgid);
		}
		if (auto it = labelled_root_.find(tgid); it != labelled_root_.end())
			return it->second;
		PathNode root;
		root.parent = parent;
		root.function = add_function({label->second, ""});
		root.pid = int32_t(tgid);
		root.calls = 1;
		labelled_root_[tgid] = uint32_t(profile_.nodes.size());
		add_node(profile_, root);
		return labelled_root_[tgid];
	}

	// The frame of a thread's roots (--per-thread), where its process's
	// roots would be.
	uint32_t thread_parent(uint32_t tgid, uint32_t tid)
	{
		auto [it, added] = thread_root_.try_emplace({tgid, tid}, 0);
		if (!added)
			return it->second;
		PathNode root;
		root.parent = root_parent(tgid);
		std::string name = thread_name_ ? thread_name_(tgid, tid) : "";
		root.function = add_function({(name.empty() ? "" : name + " ") + "(tid " + std::to_string(tid) + ")", ""});
		root.pid = int32_t(tgid);
		it->second = uint32_t(profile_.nodes.size());
		profile_.thread_nodes.push_back(it->second);
		add_node(profile_, root);
		return it->second;
	}

	// The node of a path whose parent is parent_at (a record or kNone): a
	// root's parent is its process's label or none, or (thread set) its
	// thread's frame.
	PathNode node_of_path(size_t record, uint32_t parent_at, bool &thread)
	{
		const PathStats &s = records_[record].stats;
		PathNode node;
		thread = parent_at == IdIndex::kNone && s.parent && is_thread_root(s.parent, s.tgid);
		node.parent = !s.parent ? root_parent(s.tgid)
			      : parent_at != IdIndex::kNone ? node_of_[parent_at]
			      : thread ? thread_parent(s.tgid, thread_root_tid(s.parent))
				       : orphan_parent(s.tgid);
		node.function = function_of(record);
		node.pid = int32_t(s.tgid);
		node.calls = s.calls;
		node.open = s.open;
		node.self_ns = s.self_ns;
		node.self_offcpu_ns = s.self_offcpu_ns;
		node.total_ns = s.total_ns;
		return node;
	}

	uint32_t place(size_t i)
	{
		// Collect the unplaced ancestors, then place them top-down. chain_
		// is a stack: root_parent may place a label's path in the middle.
		size_t base = chain_.size();
		for (size_t j = i; node_of_[j] == kNoParent;) {
			chain_.push_back(j);
			if (records_[j].stats.parent == 0 || parent_at_[j] == IdIndex::kNone ||
			    chain_.size() - base > records_.size())
				break;
			j = parent_at_[j];
		}
		for (size_t k = chain_.size(); k-- > base;) {
			size_t at = chain_[k];
			if (node_of_[at] != kNoParent)
				continue;
			const PathStats &s = records_[at].stats;
			bool thread = false;
			PathNode node = node_of_path(at, parent_at_[at], thread);
			if (node_of_[at] != kNoParent)
				continue; // placed by root_parent, under a label's parent
			node_of_[at] = uint32_t(profile_.nodes.size());
			if ((!s.parent || thread) && node.parent != kNoParent)
				profile_.nodes[node.parent].total_ns += node.total_ns;
			if (thread && profile_.nodes[node.parent].parent != kNoParent) // its process's label
				profile_.nodes[profile_.nodes[node.parent].parent].total_ns += node.total_ns;
			add_node(profile_, node, distribution_of(s));
		}
		chain_.resize(base);
		return node_of_[i];
	}

	Profile &profile_;
	const std::vector<PathRecord> &records_;
	const NameLookup &lookup_;
	const std::map<uint32_t, std::string> &process_roots_;
	const std::map<uint32_t, uint64_t> &label_parents_;
	const ThreadNamer &thread_name_;
	std::map<std::pair<uint32_t, uint32_t>, uint32_t> thread_root_;
	size_t names_cut_ = 0;
	std::map<uint32_t, uint32_t> label_record_; // a process's label's parent record (label_parents), kNone if absent
	// A function id of a process, its name, and its function once a node has it.
	static constexpr uint32_t kNoFunction = UINT32_MAX;
	struct NamedId {
		uint32_t tgid;
		FunctionName name;
		uint32_t function; // kNoFunction until then
	};
	std::unordered_map<std::pair<uint32_t, uint64_t>, uint32_t, FunctionIdHash> func_index_; // -> ids_
	std::vector<NamedId> ids_;
	std::vector<uint32_t> id_of_; // each record's, an index into ids_
	std::map<std::pair<std::string, std::string>, uint32_t> name_index_;
	std::vector<std::string> locations_;
	std::map<uint32_t, uint32_t> dropped_root_;
	std::vector<uint32_t> node_of_;
	std::vector<uint32_t> parent_at_; // each record's parent record, kNone when it has none among them
	std::vector<size_t> chain_;
	std::map<uint32_t, uint32_t> labelled_root_;
	std::set<uint32_t> labelling_;
};

} // namespace

size_t add_call_paths(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots,
		      const std::map<uint32_t, uint64_t> &label_parents, const ThreadNamer &thread_name)
{
	return PathPlacer(profile, records, lookup, process_roots, label_parents, thread_name).run();
}

} // namespace usdtprof
