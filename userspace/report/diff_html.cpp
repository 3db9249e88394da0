// diff --format html (docs/html.md, docs/diff.md "HTML"): the differential
// flame graph and the function table of a diff, in the viewer's page.
#include <unordered_map>

#include "report/diff.h"
#include "report/html_page.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json;

// The diff's paths as one tree, parents before children:
// [name index, parent (-1: a root), BASE self ns, NEW self ns, BASE calls, NEW calls].
json diff_tree_json(const Diff &d)
{
	json names = json::array(), nodes = json::array();
	std::unordered_map<std::string, size_t> name_index;
	std::unordered_map<std::string, int64_t> node_of; // stack joined by '\0'
	auto node = [&](const std::vector<std::string> &stack, size_t depth) {
		std::string key;
		int64_t parent = -1;
		for (size_t k = 0; k < depth; k++) {
			key += stack[k] + '\0';
			auto it = node_of.find(key);
			if (it == node_of.end()) {
				auto [n, added] = name_index.try_emplace(stack[k], names.size());
				if (added)
					names.push_back(escape_text(stack[k]));
				it = node_of.emplace(key, int64_t(nodes.size())).first;
				nodes.push_back({n->second, parent, 0, 0, 0, 0});
			}
			parent = it->second;
		}
		return parent;
	};
	for (const DiffRow &row : d.paths) {
		json &n = nodes[node(row.stack, row.stack.size())];
		n[2] = row.base.self_ns;
		n[3] = row.now.self_ns;
		n[4] = row.base.calls;
		n[5] = row.now.calls;
	}
	return {{"names", names}, {"nodes", nodes}};
}

} // namespace

std::string render_diff_html(const Diff &d, const DiffOptions &options, const std::string &title)
{
	json j = json::parse(render_diff_json(d, options));
	for (json &row : j["functions"])
		row["name"] = escape_text(row["name"].get<std::string>());
	json data = {{"kind", "diff"},       {"time", j["time"]},         {"normalize", j["normalize"]},
		     {"base", j["base"]},    {"new", j["new"]},           {"run", j["run"]},
		     {"functions", j["functions"]}, {"tree", diff_tree_json(d)}};
	return html_page(escape_text(title), data);
}

} // namespace usdtprof
