// The report's views: one table, read by the text and JSON formats and by
// `report --view`. Each view is one file (view_*.cpp) and one row of kViews in
// views.cpp; a new view is a new file, a row and a test.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/profile.h"
#include "report/report.h"

namespace usdtprof {

struct ReportView {
	const char *name = "";        // as --view takes it
	const char *description = ""; // for --help
	// The text report's body: its title line, the table and what it folded away.
	std::string (*text)(const Profile &profile, const CallTree &tree, const ReportOptions &options) = nullptr;
	// JSON: the key the view adds to the report, and its value; nullptr when the
	// view adds nothing to what every JSON report has (functions, paths).
	const char *json_key = nullptr;
	nlohmann::ordered_json (*json)(const CallTree &tree, const ReportOptions &options) = nullptr;
	// --per-process in text: one report per process (true), or one root per process.
	bool per_process_tables = false;
};

std::span<const ReportView> report_views();
// The view of that name; throws std::invalid_argument for an unknown one (the
// command line only offers the table's names).
const ReportView &find_view(const std::string &name);
std::vector<std::string> view_names();
std::string describe_views(); // "name (description), ..." for --help

} // namespace usdtprof
