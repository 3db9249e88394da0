// --focus / --ignore over the per-process call paths.
#include "profile/path_filter.h"

#include <regex>

namespace usdtprof {

namespace {

// Per function: whether its name matches; an empty pattern matches nothing.
Result<std::vector<bool>> matching(const Profile &profile, const std::string &pattern, const char *option)
{
	std::vector<bool> out(profile.functions.size(), false);
	if (pattern.empty())
		return out;
	try {
		std::regex re(pattern, std::regex::ECMAScript);
		for (size_t f = 0; f < out.size(); f++)
			out[f] = std::regex_search(profile.functions[f], re);
	} catch (const std::regex_error &e) {
		return Error{std::string(option) + " '" + pattern + "': not a valid regular expression (" + e.what() + ")"};
	}
	return out;
}

bool matches(const std::vector<bool> &m, uint32_t function) { return function < m.size() && m[function]; }

} // namespace

Result<Profile> filter_paths(const Profile &profile, const std::string &focus, const std::string &ignore)
{
	auto focused = matching(profile, focus, "--focus");
	if (!focused)
		return focused.error();
	auto ignored = matching(profile, ignore, "--ignore");
	if (!ignored)
		return ignored.error();
	size_t n = profile.nodes.size();
	// Per node: its stack has a focus match, an ignore match; it keeps its self time; it is shown.
	std::vector<bool> in_focus(n), in_ignore(n), kept(n), shown(n);
	for (size_t i = 0; i < n; i++) {
		const PathNode &p = profile.nodes[i];
		bool has_parent = p.parent < i;
		in_focus[i] = matches(*focused, p.function) || (has_parent && in_focus[p.parent]);
		in_ignore[i] = matches(*ignored, p.function) || (has_parent && in_ignore[p.parent]);
		kept[i] = (focus.empty() || in_focus[i]) && !in_ignore[i];
	}
	// A kept path shows its ancestors (children come after their parents).
	for (size_t i = n; i-- > 0;) {
		shown[i] = shown[i] || kept[i];
		if (shown[i] && profile.nodes[i].parent < i)
			shown[profile.nodes[i].parent] = true;
	}
	Profile out = profile;
	out.calibration.reset();
	out.nodes.clear();
	out.dists.clear();
	std::vector<uint32_t> moved(n, kNoParent);
	for (size_t i = 0; i < n; i++) {
		if (!shown[i])
			continue;
		PathNode node = profile.nodes[i];
		node.parent = node.parent < i ? moved[node.parent] : kNoParent;
		if (!kept[i])
			node.self_ns = node.self_offcpu_ns = node.probe_ns = node.uncertain_ns = 0;
		node.total_ns = node.self_ns;
		moved[i] = uint32_t(out.nodes.size());
		add_node(out, node, node_dist(profile, i));
	}
	out.thread_nodes = moved_thread_nodes(profile.thread_nodes, moved);
	for (size_t i = out.nodes.size(); i-- > 0;)
		if (out.nodes[i].parent != kNoParent)
			out.nodes[out.nodes[i].parent].total_ns += out.nodes[i].total_ns;
	if (out.nodes.empty())
		return Error{"no call path is left after --focus/--ignore"};
	return out;
}

} // namespace usdtprof
