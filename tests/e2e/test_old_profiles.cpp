// Profiles written by old builds of usdtprof (tests/fixtures/old-profiles/,
// whose README says which commit and command made each) read by this one's
// every reading command: the calls and times the old build's own report had,
// no durations where the old build kept none, and a diff and a merge against
// a recording made now.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "harness.h"
#include "../report_figures.h"

using namespace e2e;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace report_figures;

namespace {

// NAME.data, each with NAME.report.json: the old build's `report --format json` of it.
std::vector<std::string> old_profiles()
{
	std::vector<std::string> out;
	for (const auto &e : fs::directory_iterator(source_file("tests/fixtures/old-profiles")))
		if (e.path().extension() == ".data")
			out.push_back(e.path().string());
	std::sort(out.begin(), out.end());
	return out;
}

json old_report(const std::string &data)
{
	std::ifstream in(data.substr(0, data.size() - 5) + ".report.json");
	REQUIRE(in);
	return json::parse(in);
}

Output ok(const std::vector<std::string> &argv)
{
	Output o = run(argv);
	INFO(argv[1] << ": " << o.err);
	REQUIRE(o.status == 0);
	return o;
}

// The tree's node rows in an HTML report's inline data: the array after
// its first "nodes": (format_html.cpp's tree_json).
json html_tree_nodes(const std::string &html)
{
	std::ifstream page(html);
	std::stringstream text;
	text << page.rdbuf();
	std::string s = text.str();
	size_t begin = s.find("\"nodes\":[");
	REQUIRE(begin != std::string::npos);
	begin += 8;
	size_t end = begin;
	for (int depth = 0; end < s.size(); end++) {
		depth += s[end] == '[' ? 1 : s[end] == ']' ? -1 : 0;
		if (depth == 0)
			break;
	}
	return json::parse(s.substr(begin, end + 1 - begin));
}

// The text table's p50 column heading (right-aligned in 10 characters).
const char *const kP50Column = "       p50";

} // namespace

TEST_CASE("old profiles: report, callers, callees, HTML and folded of an old build's file have its own calls and "
	  "times, and no durations",
	  "[old-profiles]")
{
	std::string dir = temp_dir();
	for (const std::string &data : old_profiles()) {
		INFO(data);
		json old = old_report(data);
		json now = report_json(data);
		REQUIRE(functions_of(now) == functions_of(old));
		REQUIRE(now["total_self_ns"] == old["total_self_ns"]);
		for (const json &f : now["functions"])
			REQUIRE_FALSE(f.contains("durations"));
		for (const json &p : now["paths"])
			REQUIRE_FALSE(p.contains("durations"));
		// Text: the old table's columns, no durations' (not a column of zeros).
		for (const char *view : {"--view=flat", "--tree"}) {
			Output text = ok({usdtprof(), "report", view, data});
			REQUIRE(text.out.find(kP50Column) == std::string::npos);
			REQUIRE(text.out.find(old["functions"][0]["name"].get<std::string>() + "\n") != std::string::npos);
		}
		// Callers and callees of its busiest function: its calls and self time.
		const json &top = old["functions"][0];
		std::string top_name = top["name"];
		for (const char *edge : {"--callers", "--callees"}) {
			json j = json::parse(ok({usdtprof(), "report", edge, top_name, "--format", "json", data}).out);
			const json &f = j[std::string(edge).substr(2)]["function"];
			REQUIRE(f["calls"] == top["calls"]);
			REQUIRE(f["self_ns"] == top["self_ns"]);
		}
		// The HTML page's tree: each node's calls, no durations (rows of 6:
		// format_html.cpp's tree_json), so its table has no min/p50/p99/max.
		std::string html = dir + "/old.html";
		ok({usdtprof(), "report", "--format", "html", "-o", html, data});
		json nodes = html_tree_nodes(html);
		uint64_t calls = 0;
		for (const json &row : nodes) {
			REQUIRE(row.size() == 6);
			calls += row[2].get<uint64_t>();
		}
		uint64_t old_calls = 0;
		for (const json &p : old["paths"])
			old_calls += p["calls"].get<uint64_t>();
		REQUIRE(calls == old_calls);
		// Folded: the old self times, path by path.
		std::istringstream folded(ok({usdtprof(), "export", "--format", "folded", data}).out);
		uint64_t sum = 0;
		for (std::string line; std::getline(folded, line);)
			sum += std::stoull(line.substr(line.rfind(' ') + 1));
		REQUIRE(sum == old["total_self_ns"].get<uint64_t>());
	}
}

TEST_CASE("old profiles: diff against a recording made now, and a merge with it, which shows no durations and says "
	  "why",
	  "[old-profiles]")
{
	// The fixtures are recordings of `nested 3`: so is the new one.
	Recorded now = record_report({target("nested"), "3"}, {.status = 7});
	for (const std::string &data : old_profiles()) {
		INFO(data);
		json old = old_report(data);
		json diff = json::parse(ok({usdtprof(), "diff", "--format", "json", data, now.data}).out);
		REQUIRE(diff["base"]["total_self_ns"] == old["total_self_ns"]);
		for (const json &f : diff["functions"]) {
			INFO(f["name"]);
			REQUIRE(f["base"]["calls"] == std::get<0>(functions_of(old).at(f["name"].get<std::string>())));
			REQUIRE(f["new"]["calls"] == function(now.report, f["name"].get<std::string>())["calls"]);
		}
		// The old side's calls are not taken as calls that never spread.
		REQUIRE(diff["base"]["durations"] == false);
		REQUIRE(diff["new"]["durations"] == true);
		REQUIRE(ok({usdtprof(), "diff", data, now.data}).out.find("base has no durations") != std::string::npos);
		// Merged: calls add up; the durations of the new half's calls alone
		// would pass for all of them, so none are shown.
		Output merged = ok({usdtprof(), "report", data, now.data});
		REQUIRE(merged.out.find(kP50Column) == std::string::npos);
		REQUIRE(merged.out.find("durations (min, p50, p99, max) not shown: 1 of the merged profiles carry none") !=
			std::string::npos);
		json both = parse_report(ok({usdtprof(), "report", "--format", "json", data, now.data}).out);
		for (const json &f : both["functions"]) {
			INFO(f["name"]);
			REQUIRE_FALSE(f.contains("durations"));
			REQUIRE(f["calls"] == std::get<0>(functions_of(old).at(f["name"].get<std::string>())) +
						      function(now.report, f["name"].get<std::string>())["calls"].get<uint64_t>());
		}
	}
}
