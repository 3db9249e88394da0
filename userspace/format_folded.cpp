// Folded stacks (formats.cpp): Brendan Gregg's "root;...;leaf WEIGHT" lines,
// for flamegraph.pl, speedscope and others.
#include <cstdio>

#include "compensation.h"
#include "report.h"
#include "text_escape.h"

namespace usdtprof {

std::string render_folded(const CallTree &tree)
{
	// Depth first, each node before its children: a frame's lines are
	// contiguous, so a viewer's time order (speedscope) shows one block per call path.
	std::string out;
	std::vector<std::pair<uint32_t, std::string>> todo; // node, its escaped stack
	for (auto root = tree.roots.rbegin(); root != tree.roots.rend(); ++root)
		todo.push_back({*root, escape_folded_frame(tree.name(*root))});
	while (!todo.empty()) {
		auto [i, frames] = std::move(todo.back());
		todo.pop_back();
		const TreeNode &n = tree.nodes[i];
		if (n.self_ns)
			out += frames + " " + std::to_string(n.self_ns) + "\n";
		for (auto child = tree.children(i).rbegin(); child != tree.children(i).rend(); ++child)
			todo.push_back({*child, frames + ";" + escape_folded_frame(tree.name(*child))});
	}
	return out;
}

// Percent-encodes the separators and every byte of what a terminal would act
// on (escape_text's choice: C0, DEL, C1, bidi overrides, invalid UTF-8):
// folded stacks go to stdout.
std::string escape_folded_frame(const std::string &name)
{
	std::string out;
	for (size_t i = 0; i < name.size();) {
		TextUnit unit = text_unit_at(name, i);
		bool encode = unit.unsafe || name[i] == ';' || name[i] == '%';
		for (size_t k = 0; k < unit.length; k++) {
			if (!encode) {
				out += name[i + k];
				continue;
			}
			char buf[4];
			snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(name[i + k]));
			out += buf;
		}
		i += unit.length;
	}
	return out;
}

std::string folded_stacks(const Profile &measured, const ReportOptions &options)
{
	CallTree tree = build_call_tree(options.raw ? measured : compensate(measured));
	return render_folded(with_self_time(std::move(tree), options.time));
}

} // namespace usdtprof
