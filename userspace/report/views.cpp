// The table of report views (views.h). Each row's functions live in the
// view's own file; they are declared here, next to their rows, and nowhere else.
#include "report/views.h"

#include <stdexcept>

namespace usdtprof {

std::string flat_text(const Profile &profile, const CallTree &tree, const ReportOptions &options); // view_flat.cpp
std::string tree_text(const Profile &profile, const CallTree &tree, const ReportOptions &options); // view_tree.cpp
nlohmann::ordered_json tree_json(const CallTree &tree, const ReportOptions &options);             // view_tree.cpp

namespace {

const ReportView kViews[] = {
	{.name = "flat", .description = "one line per function", .text = flat_text, .per_process_tables = true},
	{.name = "tree", .description = "the call tree", .text = tree_text, .json_key = "tree", .json = tree_json},
};

} // namespace

std::span<const ReportView> report_views() { return kViews; }

const ReportView &find_view(const std::string &name)
{
	for (const ReportView &v : kViews)
		if (name == v.name)
			return v;
	throw std::invalid_argument("unknown report view '" + name + "'");
}

std::vector<std::string> view_names()
{
	std::vector<std::string> names;
	for (const ReportView &v : kViews)
		names.push_back(v.name);
	return names;
}

std::string describe_views()
{
	std::string out;
	for (const ReportView &v : kViews)
		out += (out.empty() ? "" : ", ") + std::string(v.name) + " (" + v.description + ")";
	return out;
}

} // namespace usdtprof
