// Folded stacks (formats.cpp): Brendan Gregg's "root;...;leaf WEIGHT" lines,
// for flamegraph.pl, speedscope and others.
#include <charconv>
#include <cstdio>
#include <span>

#include "profile/compensation.h"
#include "report/report.h"
#include "base/sink.h"
#include "base/text_escape.h"

namespace usdtprof {

void write_folded(const CallTree &tree, Sink &out)
{
	// Depth first, each node before its children: a frame's lines are
	// contiguous, so a viewer's time order (speedscope) shows one block per
	// call path. One buffer holds the current stack, cut back to a popped
	// node's parent; each distinct name is escaped once.
	std::vector<std::string> frames(tree.names.size());
	std::vector<bool> escaped(tree.names.size());
	std::string stack;
	std::vector<std::pair<uint32_t, size_t>> todo; // node, its parent's stack length
	for (auto root = tree.roots.rbegin(); root != tree.roots.rend(); ++root)
		todo.push_back({*root, 0});
	while (!todo.empty()) {
		auto [i, parent_length] = todo.back();
		todo.pop_back();
		const TreeNode &n = tree.nodes[i];
		if (!escaped[n.name]) {
			frames[n.name] = escape_folded_frame(tree.names[n.name]);
			escaped[n.name] = true;
		}
		stack.resize(parent_length);
		if (n.parent != kNoParent)
			stack += ';';
		stack += frames[n.name];
		if (n.self_ns) {
			// The line is the stack with " WEIGHT\n" after it for a moment:
			// one write a line, not four.
			size_t length = stack.size();
			char weight[24];
			weight[0] = ' ';
			char *end = std::to_chars(weight + 1, weight + sizeof weight - 1, n.self_ns).ptr;
			*end++ = '\n';
			stack.append(weight, size_t(end - weight));
			out.write(stack);
			stack.resize(length);
		}
		std::span<const uint32_t> children = tree.children(i);
		for (auto child = children.rbegin(); child != children.rend(); ++child)
			todo.push_back({*child, stack.size()});
	}
}

std::string render_folded(const CallTree &tree)
{
	StringSink out;
	write_folded(tree, out);
	return std::move(out.text);
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

void folded_stacks(Profile measured, const ReportOptions &options, Sink &out)
{
	drop_distributions(measured);
	if (!options.raw)
		compensate_in_place(measured);
	CallTree tree = build_call_tree(measured);
	measured = Profile(); // the tree holds what is written: the paths' memory goes back
	write_folded(with_self_time(std::move(tree), options.time), out);
}

} // namespace usdtprof
