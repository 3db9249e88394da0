// Profiles written by old builds of usdtprof (tests/fixtures/old-profiles/,
// its README says which commit and command made each): they load, and the
// report of them has the calls and times the old build's own report had,
// with no durations (those builds kept none) rather than zeros.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "../render_as.h"
#include "../../report_figures.h"
#include "profile/profile.h"
#include "profile/profile_set.h"

using namespace usdtprof;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace report_figures;

namespace {

fs::path fixtures() { return fs::absolute(fs::path(__FILE__)).parent_path().parent_path().parent_path() / "fixtures/old-profiles"; }

// The old profiles: NAME.data, with NAME.report.json and NAME.raw.json, the
// old build's `report --format json` and `report --raw --format json` of it.
std::vector<fs::path> old_profiles()
{
	std::vector<fs::path> out;
	for (const auto &e : fs::directory_iterator(fixtures()))
		if (e.path().extension() == ".data")
			out.push_back(e.path());
	std::sort(out.begin(), out.end());
	return out;
}

json read_json(const fs::path &path)
{
	std::ifstream in(path);
	REQUIRE(in);
	return json::parse(in);
}

fs::path beside(const fs::path &data, const std::string &suffix)
{
	return data.parent_path() / (data.stem().string() + suffix);
}

// Per path (names joined by ';'): old reports give each path its "stack",
// this one its parent's id.
std::map<std::string, Figures> paths_of(const json &report)
{
	std::map<std::string, Figures> out;
	std::map<uint64_t, std::string> stack_of_id;
	for (const json &p : report["paths"]) {
		std::string stack;
		if (p.contains("stack")) {
			for (const json &name : p["stack"])
				stack += (stack.empty() ? "" : ";") + name.get<std::string>();
		} else {
			stack = p["parent"].is_null() ? p["name"].get<std::string>()
						      : stack_of_id.at(p["parent"].get<uint64_t>()) + ";" + p["name"].get<std::string>();
			stack_of_id[p["id"].get<uint64_t>()] = stack;
		}
		out[stack] = figures(p);
	}
	return out;
}

bool has_durations(const json &report)
{
	for (const char *list : {"functions", "paths"})
		for (const json &e : report[list])
			if (e.contains("durations"))
				return true;
	return false;
}

// The text table's p50 column heading (right-aligned in 10 characters).
const char *const kP50Column = "       p50";

} // namespace

TEST_CASE("old profiles: each loads, without durations, and reports the old build's own calls and times",
	  "[profile][old]")
{
	auto files = old_profiles();
	REQUIRE(files.size() >= 3);
	for (const fs::path &file : files) {
		INFO(file.filename().string());
		auto p = load_profile(file.string());
		REQUIRE(p);
		REQUIRE_FALSE(p->nodes.empty());
		CHECK_FALSE(p->distributions);
		CHECK(p->dists.empty());
		for (bool raw : {true, false}) {
			INFO("raw " << raw);
			ReportOptions o;
			o.raw = raw;
			json now = json::parse(render_as("json", *p, o));
			json old = read_json(beside(file, raw ? ".raw.json" : ".report.json"));
			CHECK(functions_of(now) == functions_of(old));
			CHECK(paths_of(now) == paths_of(old));
			CHECK(now["total_self_ns"] == old["total_self_ns"]);
			CHECK_FALSE(has_durations(now));
		}
		// No duration columns rather than columns of zeros.
		std::string text = render_as("text", *p, {});
		CHECK(text.find(kP50Column) == std::string::npos);
	}
}

TEST_CASE("old profiles: merged with a profile that has durations, the merge shows none and says why",
	  "[profile][old]")
{
	for (const fs::path &file : old_profiles()) {
		INFO(file.filename().string());
		auto old = load_profile(file.string());
		REQUIRE(old);
		// The same calls with durations, as a usdtprof that keeps them would
		// have recorded them: one timed call per path.
		Profile timed = *old;
		timed.distributions = true;
		timed.dists.assign(timed.nodes.size(), Distribution{});
		for (size_t i = 0; i < timed.nodes.size(); i++)
			if (timed.nodes[i].calls)
				timed.dists[i] = {1000, 1000, {{dist_bucket_of(1000), 1}}};
		Profile merged = merge_profiles({*old, timed}, true);
		CHECK_FALSE(merged.distributions);
		CHECK(merged.parts_without_durations == 1);
		ReportOptions o;
		o.raw = true;
		CHECK_FALSE(has_durations(json::parse(render_as("json", merged, o))));
		std::string text = render_as("text", merged, o);
		CHECK(text.find(kP50Column) == std::string::npos);
		CHECK(text.find("durations (min, p50, p99, max) not shown: 1 of the merged profiles carry none") !=
		      std::string::npos);
		// Both with durations: kept, and nothing said.
		Profile both = merge_profiles({timed, timed}, true);
		CHECK(both.distributions);
		CHECK(both.parts_without_durations == 0);
		// An old part without call paths takes nothing away.
		Profile empty = *old;
		empty.nodes.clear();
		CHECK(merge_profiles({empty, timed}, true).distributions);
	}
}
