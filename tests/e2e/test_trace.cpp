// `usdtprof trace`: timelines of a real multi-threaded run, checked for structure.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "../unit/trace_validate.h"
#include "harness.h"

using namespace e2e;

namespace {

nlohmann::json load(const std::string &file)
{
	std::ifstream in(file);
	REQUIRE(in.good());
	return nlohmann::json::parse(in);
}

size_t count(const nlohmann::json &events, const std::string &ph, const std::string &name = "")
{
	size_t n = 0;
	for (const auto &e : events)
		if (e["ph"] == ph && (name.empty() || e.value("name", "") == name))
			n++;
	return n;
}

} // namespace

TEST_CASE("trace: Chrome trace of a task-based program nests, has flows, and agrees with the profile", "[trace]")
{
	std::string dir = temp_dir();
	Output o = run({usdtprof(), "trace", "-o", dir + "/t.json", "--profile", dir + "/t.data", "--",
			target("operator")});
	INFO(o.err);
	REQUIRE(o.status == 0);
	auto trace = load(dir + "/t.json");
	REQUIRE(validate_chrome_trace(trace) == "");
	const auto &events = trace["traceEvents"];
	REQUIRE(count(events, "X", "_plus_scalar") == 60);
	REQUIRE(count(events, "X", "[task]") == 61);
	// One arrow per task, from its creation in forward (or main) to its run.
	REQUIRE(count(events, "i", "task created") == 61);
	REQUIRE(count(events, "s") == 61);
	REQUIRE(count(events, "f") == 61);
	REQUIRE(count(events, "M", "thread_name") == 2);
	REQUIRE(trace["otherData"]["lost_events"] == 0);
	REQUIRE(trace["otherData"]["unmatched_exits"] == 0);

	auto report = report_json(dir + "/t.data");
	REQUIRE(function(report, "_plus_scalar")["calls"] == 60);
	REQUIRE(path(report, "main;MyOp::forward;[task];_plus_scalar")["calls"] == 60);
}

TEST_CASE("trace: speedscope format, and --max-events bounds the file", "[trace]")
{
	std::string dir = temp_dir();
	Output o = run({usdtprof(), "trace", "--format", "speedscope", "-o", dir + "/s.json", "--profile",
			dir + "/s.data", "--", target("nested"), "5"});
	INFO(o.err);
	REQUIRE(o.status == 7);
	auto doc = load(dir + "/s.json");
	REQUIRE(validate_speedscope(doc) == "");
	REQUIRE(doc["profiles"].size() == 1);
	size_t opens = 0;
	for (const auto &e : doc["profiles"][0]["events"])
		opens += e["type"] == "O";
	REQUIRE(opens == 1 + 5 + 15);

	Output bounded = run({usdtprof(), "trace", "--max-events", "10", "-o", dir + "/b.json", "--profile",
			      dir + "/b.data", "--", target("nested"), "5"});
	REQUIRE(bounded.status == 7);
	auto b = load(dir + "/b.json");
	REQUIRE(validate_chrome_trace(b) == "");
	REQUIRE(b["otherData"]["max_events_reached"] == true);
	REQUIRE(b["otherData"]["events"] == 10);
	// Frames still open when the limit was reached are closed at the stop:
	// every slice within it (the validator checks their nesting).
	double stop_us = 0;
	for (const auto &e : b["traceEvents"])
		if (e["ph"] == "X")
			stop_us = std::max(stop_us, e["ts"].get<double>() + e["dur"].get<double>());
	REQUIRE(count(b["traceEvents"], "X") > 0);
	REQUIRE(stop_us > 0);
}
