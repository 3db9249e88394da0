// The tree view: the calling-context tree, largest subtree first, subtrees
// below --min-percent folded into "... N more" lines (views.cpp).
#include <algorithm>

#include "report/report_text.h"
#include "base/text_escape.h"
#include "report/views.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json; // keeps keys in schema order

// Iterative, so a deep (hand-made) profile cannot overflow the stack.
void render_tree_lines(const CallTree &tree, const ReportOptions &options, std::string &out)
{
	struct Item {
		uint32_t node;   // kNoParent: the "... N more" line of a sibling group
		size_t depth, pruned;
	};
	std::vector<Item> todo;
	auto push_group = [&](std::span<const uint32_t> ids, size_t depth) {
		// Largest total first; popping from the back, so push in reverse.
		std::vector<uint32_t> group = by_total(tree, {ids.begin(), ids.end()});
		std::reverse(group.begin(), group.end());
		auto below = [&](uint32_t i) { return below_min_percent(tree, i, options); };
		size_t pruned = std::count_if(group.begin(), group.end(), below);
		if (pruned)
			todo.push_back({kNoParent, depth, pruned});
		for (uint32_t i : group)
			if (!below(i))
				todo.push_back({i, depth, 0});
	};
	push_group(tree.roots, 0);
	while (!todo.empty()) {
		Item it = todo.back();
		todo.pop_back();
		std::string indent(2 * it.depth, ' ');
		if (it.node == kNoParent) {
			out += line("%10s %7s %10s %12s", "", "", "", "") +
			       (tree.dists.empty() ? "" : std::string(44, ' ')) + "  " + indent + "... " + std::to_string(it.pruned) +
				" more below " + line("%g", options.min_percent) + "%\n";
			continue;
		}
		const TreeNode &n = tree.nodes[it.node];
		out += line("%10s %6.1f%% %10s %12llu", human_ns(n.total_ns).c_str(), percent(n.total_ns, tree.total_self_ns),
			time_text(n.self_ns, n.uncertain_ns).c_str(), static_cast<unsigned long long>(n.calls)) +
			duration_cells(tree, tree.dists.empty() ? nullptr : &tree.dists[it.node],
				       call_spread(n.uncertain_ns, n.calls)) + "  " + indent + escape_text(tree.names[n.name]) + open_marker(n.open) + "\n";
		push_group(tree.children(it.node), it.depth + 1);
	}
}

} // namespace

std::string tree_text(const Profile &profile, const CallTree &tree, const ReportOptions &options)
{
	std::string out = "usdtprof call tree: " + human_ns(tree.total_self_ns) + " recorded in " +
		std::to_string(total_calls(tree)) + " calls over " + human_ns(profile.duration_ns) +
		(options.min_percent > 0 ? "; subtrees below " + line("%g", options.min_percent) +
			"% of the recorded time are folded into \"... N more\" lines" : std::string()) + "\n" +
		lost_paths_line(profile, tree) + sampled_line(profile) + container_lines(profile) + "\n";
	out += line("%10s %7s %10s %12s", "total", "total%", "self", "calls") + duration_cells(tree, nullptr) + "  name\n";
	render_tree_lines(tree, options, out);
	if (!tree.dists.empty())
		out += durations_note(profile, options);
	return out;
}

// The tree as nested JSON, pruned like the text tree. Built from the
// leaves up (children come after their parents), so depth costs no stack;
// only the nodes shown are built (a node is shown when its parent is).
json tree_json(const CallTree &tree, const ReportOptions &options)
{
	std::vector<bool> shown(tree.nodes.size());
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		uint32_t parent = tree.nodes[i].parent;
		shown[i] = (parent == kNoParent || shown[parent]) && !below_min_percent(tree, i, options);
	}
	std::vector<json> built(tree.nodes.size());
	auto group = [&](std::span<const uint32_t> ids) {
		json out = json::array();
		for (uint32_t c : by_total(tree, {ids.begin(), ids.end()}))
			if (shown[c])
				out.push_back(std::move(built[c]));
		return out;
	};
	for (size_t i = tree.nodes.size(); i-- > 0;) {
		if (!shown[i])
			continue;
		const TreeNode &n = tree.nodes[i];
		json children = group(tree.children(uint32_t(i)));
		size_t omitted = tree.children(uint32_t(i)).size() - children.size();
		built[i] = {{"name", tree.names[n.name]}, {"calls", n.calls}, {"open", n.open}, {"self_ns", n.self_ns},
			    {"total_ns", n.total_ns}, {"omitted_children", omitted}, {"children", std::move(children)}};
	}
	return group(tree.roots);
}

} // namespace usdtprof
