#include "engine/call_paths.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "base/huge_pages.h"
#include "base/id_index.h"

namespace usdtprof {

namespace {

// The kernel's nonzero buckets of a path, in bucket order: one allocation
// per path, none for one bucket.
void take_buckets(Buckets &into, const usdtprof_path_stats &s)
{
	uint32_t used = 0;
	for (uint32_t b = 0; b < USDTPROF_DIST_BUCKETS; b++)
		used += s.buckets[b] != 0;
	into.reserve(used);
	for (uint32_t b = 0; b < USDTPROF_DIST_BUCKETS; b++)
		if (s.buckets[b])
			into.emplace_back(b, s.buckets[b]);
}

} // namespace

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
	p.probe_ns = std::min(s.probe_ns, s.self_ns);
	p.min_ns = s.min_ns;
	p.max_ns = s.max_ns;
	take_buckets(p.buckets, s);
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
	s.probe_ns = p.probe_ns;
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

void PathColumns::reserve(size_t n)
{
	reserve_fresh(path, n);
	reserve_fresh(parent, n);
	reserve_fresh(func, n);
	reserve_fresh(slot, n);
	reserve_fresh(nodes, n + 64);
	reserve_fresh(dists, n + 64);
}

void PathColumns::clear()
{
	truncate(0);
}

void PathColumns::append(uint64_t id, const usdtprof_path_stats &s, uint32_t in_slot)
{
	path.push_back(id);
	parent.push_back(s.parent);
	func.push_back(s.func);
	slot.push_back(in_slot);
	PathNode &n = nodes.emplace_back();
	n.pid = int32_t(s.tgid);
	n.calls = s.calls;
	n.open = s.open;
	n.self_ns = s.self_ns;
	n.total_ns = s.total_ns;
	// As path_stats_of: a steal between the clock's two reads.
	n.self_offcpu_ns = std::min(s.self_offcpu_ns, s.self_ns);
	n.probe_ns = std::min(s.probe_ns, s.self_ns);
	Distribution &d = dists.emplace_back();
	d.min_ns = s.min_ns;
	d.max_ns = s.max_ns;
	take_buckets(d.buckets, s);
}

void PathColumns::append(const PathRecord &r)
{
	path.push_back(r.path);
	parent.push_back(r.stats.parent);
	func.push_back(r.stats.func);
	slot.push_back(r.slot);
	PathNode &n = nodes.emplace_back();
	n.pid = int32_t(r.stats.tgid);
	n.calls = r.stats.calls;
	n.open = r.stats.open;
	n.self_ns = r.stats.self_ns;
	n.total_ns = r.stats.total_ns;
	n.self_offcpu_ns = r.stats.self_offcpu_ns;
	n.probe_ns = r.stats.probe_ns;
	dists.push_back({r.stats.min_ns, r.stats.max_ns, r.stats.buckets});
}

void PathColumns::truncate(size_t n)
{
	n = std::min(n, size());
	path.resize(n);
	parent.resize(n);
	func.resize(n);
	slot.resize(n);
	nodes.resize(n);
	dists.resize(n);
}

void PathColumns::keep_if(const std::function<bool(size_t)> &keep)
{
	size_t kept = 0;
	for (size_t i = 0; i < size(); i++) {
		if (!keep(i))
			continue;
		if (kept != i) {
			path[kept] = path[i];
			parent[kept] = parent[i];
			func[kept] = func[i];
			slot[kept] = slot[i];
			nodes[kept] = nodes[i];
			dists[kept] = std::move(dists[i]);
		}
		kept++;
	}
	truncate(kept);
}

PathStats PathColumns::stats(size_t i) const
{
	PathStats s;
	s.parent = parent[i];
	s.func = func[i];
	s.tgid = tgid(i);
	s.calls = nodes[i].calls;
	s.open = nodes[i].open;
	s.self_ns = nodes[i].self_ns;
	s.total_ns = nodes[i].total_ns;
	s.self_offcpu_ns = nodes[i].self_offcpu_ns;
	s.probe_ns = nodes[i].probe_ns;
	s.min_ns = dists[i].min_ns;
	s.max_ns = dists[i].max_ns;
	s.buckets = dists[i].buckets;
	return s;
}

std::vector<PathRecord> PathColumns::records() const
{
	std::vector<PathRecord> out;
	out.reserve(size());
	for (size_t i = 0; i < size(); i++)
		out.push_back({path[i], stats(i), slot[i]});
	return out;
}

PathColumns PathColumns::of(const std::vector<PathRecord> &records)
{
	PathColumns c;
	c.reserve(records.size());
	for (const PathRecord &r : records)
		c.append(r);
	return c;
}

namespace {

struct FunctionIdHash {
	size_t operator()(const std::pair<uint32_t, uint64_t> &id) const
	{
		return std::hash<uint64_t>()(id.second * 0x9e3779b97f4a7c15ULL ^ id.first);
	}
};

// add_call_paths' state: the paths' parents, the functions and labels
// made so far, and each path's node's place in the profile once placed.
// The nodes stay where they were read (a label's node, made while placing,
// after them) until every one is placed; then they are moved to their
// places, parents first, in place: a copy of the profile's ~100 MB at a
// million paths would be as many fresh pages again.
class PathPlacer {
public:
	PathPlacer(Profile &profile, PathColumns &paths, const NameLookup &lookup,
		   const std::map<uint32_t, std::string> &process_roots,
		   const std::map<uint32_t, uint64_t> &label_parents, const ThreadNamer &thread_name)
		: profile_(profile), paths_(paths), nodes_(paths.nodes), dists_(paths.dists), count_(paths.size()),
		  base_(uint32_t(profile.nodes.size())), lookup_(lookup), process_roots_(process_roots),
		  label_parents_(label_parents), thread_name_(thread_name),
		  id_of_(fresh_vector<uint32_t>(count_, 0)), locations_(profile.locations),
		  node_of_(fresh_vector<uint32_t>(count_, kNoParent)),
		  parent_at_(fresh_vector<uint32_t>(count_, IdIndex::kNone))
	{
		find_parents();
		reserve_fresh(order_, count_ + 64);
		locations_.resize(profile.functions.size());
	}

	size_t run()
	{
		name_functions();
		for (size_t i = 0; i < count_; i++)
			place(i);
		node_of_ = {};
		parent_at_ = {};
		id_of_ = {};
		put_in_order();
		give_to_profile();
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
		IdIndex by_path(count_);
		for (size_t i = 0; i < count_; i++)
			by_path.set(paths_.path[i], uint32_t(i));
		for (size_t i = 0; i < count_; i++)
			parent_at_[i] = by_path.find(paths_.parent[i]);
		for (const auto &[tgid, path] : label_parents_)
			label_record_[tgid] = by_path.find(path);
	}

	// Node i of nodes_ (a path's, or a label's made after them) takes the
	// next place; its index in the profile.
	uint32_t take_place(size_t i)
	{
		order_.push_back(uint32_t(i));
		return base_ + uint32_t(order_.size() - 1);
	}
	// The node at a place taken.
	PathNode &placed(uint32_t index) { return nodes_[order_[index - base_]]; }

	// A node of no path (a label), placed now.
	uint32_t add_label_node(const PathNode &node)
	{
		nodes_.push_back(node);
		dists_.emplace_back();
		return take_place(nodes_.size() - 1);
	}

	// nodes_[order_[p]] to p, cycle by cycle, each node moved once.
	void put_in_order()
	{
		std::vector<bool> done(order_.size());
		for (size_t start = 0; start < order_.size(); start++) {
			if (done[start])
				continue;
			PathNode node = nodes_[start];
			Distribution dist = std::move(dists_[start]);
			for (size_t p = start;;) {
				done[p] = true;
				size_t from = order_[p];
				if (from == start) {
					nodes_[p] = node;
					dists_[p] = std::move(dist);
					break;
				}
				nodes_[p] = nodes_[from];
				dists_[p] = std::move(dists_[from]);
				p = from;
			}
		}
		order_ = {};
	}

	// The nodes become the profile's: its arrays when it had none.
	void give_to_profile()
	{
		profile_.distributions = true;
		fit_dists(profile_);
		if (profile_.nodes.empty()) {
			profile_.nodes = std::move(nodes_);
			profile_.dists = std::move(dists_);
		} else {
			profile_.nodes.insert(profile_.nodes.end(), nodes_.begin(), nodes_.end());
			profile_.dists.insert(profile_.dists.end(), std::make_move_iterator(dists_.begin()),
					      std::make_move_iterator(dists_.end()));
		}
		nodes_.clear();
		dists_.clear();
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
		for (size_t i = 0; i < count_; i++) {
			uint32_t tgid = paths_.tgid(i);
			uint64_t func = paths_.func[i];
			auto [it, added] = func_index_.try_emplace({tgid, func}, uint32_t(ids_.size()));
			if (added) {
				bool cut = false;
				ids_.push_back({tgid, function_name(lookup_, tgid, func, &cut), kNoFunction});
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
		for (size_t i = 0; i < count_; i++)
			if (uint32_t p = parent_at_[i]; p != IdIndex::kNone && lambda[id_of_[p]])
				lambdas.add_call(paths_.tgid(i), ids_[id_of_[p]].name.name, ids_[id_of_[i]].name.name);
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
		auto [it, added] = dropped_root_.try_emplace(tgid, 0);
		if (added) {
			PathNode root;
			root.function = add_function({"[parent dropped]", ""});
			root.pid = int32_t(tgid);
			it->second = add_label_node(root);
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
		return labelled_root_[tgid] = add_label_node(root);
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
		it->second = add_label_node(root);
		profile_.thread_nodes.push_back(it->second);
		return it->second;
	}

	// The parent of a path whose parent is parent_at (a path or kNone): a
	// root's parent is its process's label or none, or (thread set) its
	// thread's frame.
	uint32_t parent_of(size_t path, uint32_t parent_at, bool &thread)
	{
		uint64_t parent = paths_.parent[path];
		uint32_t tgid = paths_.tgid(path);
		thread = parent_at == IdIndex::kNone && parent && is_thread_root(parent, tgid);
		return !parent ? root_parent(tgid)
		       : parent_at != IdIndex::kNone ? node_of_[parent_at]
		       : thread ? thread_parent(tgid, thread_root_tid(parent))
				: orphan_parent(tgid);
	}

	uint32_t place(size_t i)
	{
		// Collect the unplaced ancestors, then place them top-down. chain_
		// is a stack: root_parent may place a label's path in the middle.
		size_t base = chain_.size();
		for (size_t j = i; node_of_[j] == kNoParent;) {
			chain_.push_back(j);
			if (paths_.parent[j] == 0 || parent_at_[j] == IdIndex::kNone || chain_.size() - base > count_)
				break;
			j = parent_at_[j];
		}
		for (size_t k = chain_.size(); k-- > base;) {
			size_t at = chain_[k];
			if (node_of_[at] != kNoParent)
				continue;
			bool thread = false;
			uint32_t parent = parent_of(at, parent_at_[at], thread);
			if (node_of_[at] != kNoParent)
				continue; // placed by root_parent, under a label's parent
			uint32_t function = function_of(at);
			PathNode &node = nodes_[at];
			node.parent = parent;
			node.function = function;
			node_of_[at] = take_place(at);
			if ((!paths_.parent[at] || thread) && parent != kNoParent)
				placed(parent).total_ns += node.total_ns;
			if (thread && placed(parent).parent != kNoParent) // its process's label
				placed(placed(parent).parent).total_ns += node.total_ns;
			Distribution &d = dists_[at]; // as distribution_of
			if (d.buckets.empty())
				d.min_ns = d.max_ns = 0;
			else
				d.max_ns = std::max(d.min_ns, d.max_ns);
		}
		chain_.resize(base);
		return node_of_[i];
	}

	Profile &profile_;
	PathColumns &paths_;
	std::vector<PathNode> &nodes_;      // the paths' (and the labels' after them)
	std::vector<Distribution> &dists_; // as nodes_
	size_t count_;                      // paths
	uint32_t base_;                     // the profile's nodes before
	std::vector<uint32_t> order_;       // each place's node in nodes_
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

size_t add_call_paths(Profile &profile, PathColumns &paths, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots,
		      const std::map<uint32_t, uint64_t> &label_parents, const ThreadNamer &thread_name)
{
	return PathPlacer(profile, paths, lookup, process_roots, label_parents, thread_name).run();
}

size_t add_call_paths(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots,
		      const std::map<uint32_t, uint64_t> &label_parents, const ThreadNamer &thread_name)
{
	PathColumns paths = PathColumns::of(records);
	return add_call_paths(profile, paths, lookup, process_roots, label_parents, thread_name);
}

} // namespace usdtprof
