// Duration distributions per call path (issue 17): the kernel's min, max and
// log2 histogram of each path's call durations, as `report` shows them,
// checked against what the target measures with its own clock.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "harness.h"
#include "profile/distribution.h"
#include "report/report.h"

using namespace e2e;
using nlohmann::json;

namespace {

uint64_t u(const json &v) { return v.get<uint64_t>(); }

// A duration usdtprof measured lies between the target's clock reads inside
// the probes and around the call (less 0.1% for the clocks' rounding).
void require_between(const json &value, double inner, double outer)
{
	INFO("target measured " << inner << " ns inside the probes, " << outer << " ns around the call; usdtprof has "
				 << value);
	REQUIRE(value.get<double>() >= inner * 0.999);
	REQUIRE(value.get<double>() <= outer * 1.001);
}

// The bucket of a reported quantile lies between the buckets of the
// target's own quantiles: each call's duration is between its inner and
// outer time, so each order statistic is too.
void require_bucket(const json &value, double inner, double outer, uint32_t designed)
{
	uint32_t b = usdtprof::dist_bucket_of(u(value)), lo = usdtprof::dist_bucket_of(uint64_t(inner)),
		 hi = usdtprof::dist_bucket_of(uint64_t(outer));
	INFO("usdtprof's " << value << " ns is in bucket " << b << "; the target measured " << inner << " to " << outer
			   << " ns: buckets " << lo << " to " << hi << " (designed: " << designed << ")");
	REQUIRE(b >= lo);
	REQUIRE(b <= hi);
}

struct Run {
	std::map<std::string, double> m;
	json report;
	std::string data, text;
};

Run record_durations()
{
	Run r;
	r.data = temp_dir() + "/durations.data";
	Output o = run({e2e::usdtprof(), "record", "-o", r.data, "--", target("durations")});
	INFO(o.err);
	REQUIRE(o.status == 0);
	r.m = measured(o.out);
	REQUIRE(r.m.size() == 8);
	r.report = report_json(r.data, true);
	Output text = run({e2e::usdtprof(), "report", "--raw", r.data});
	REQUIRE(text.status == 0);
	r.text = text.out;
	return r;
}

} // namespace

TEST_CASE("durations: min, max, p50 and p99 of a function whose calls take 100 us (90%) or 1 ms (10%)",
	  "[durations]")
{
	Run r = record_durations();
	const auto &m = r.m;
	json step = function(r.report, "step");
	INFO(r.text);
	REQUIRE(u(step["calls"]) == 1000);
	const json &d = step["durations"];
	REQUIRE(u(d["count"]) == 1000);
	uint64_t counted = 0;
	for (const json &b : d["histogram"])
		counted += u(b["count"]);
	REQUIRE(counted == 1000);
	require_between(d["min_ns"], m.at("inner_min"), m.at("outer_min"));
	require_between(d["max_ns"], m.at("inner_max"), m.at("outer_max"));
	// Within 5% of what the target measured inside its probes.
	REQUIRE(d["min_ns"].get<double>() <= m.at("inner_min") * 1.05);
	// The max too, when the target's own clock bounds its longest call that
	// closely: a preemption between its clock reads and the probes (CPU
	// hogs) can make another call the longest usdtprof saw, within
	// outer_max (checked above) but beyond inner_max.
	if (m.at("outer_max") <= m.at("inner_max") * 1.05)
		REQUIRE(d["max_ns"].get<double>() <= m.at("inner_max") * 1.05);
	// 100 us is in [2^16, 2^17) ns, 1 ms in [2^19, 2^20).
	require_bucket(d["p50_ns"], m.at("inner_p50"), m.at("outer_p50"), 16);
	require_bucket(d["p99_ns"], m.at("inner_p99"), m.at("outer_p99"), 19);
	// The path (main;step is a root: main has no probes) says the same.
	json p = path(r.report, "step");
	REQUIRE(p.is_object());
	REQUIRE(p["durations"] == d);

	// The text report: min, p50, p99 and max columns per function and per path.
	REQUIRE(r.text.find("min        p50        p99        max  name") != std::string::npos);
	Output tree = run({e2e::usdtprof(), "report", "--raw", "--view", "tree", r.data});
	REQUIRE(tree.status == 0);
	INFO(tree.out);
	REQUIRE(tree.out.find("min        p50        p99        max  name") != std::string::npos);
	auto has_row = [&](const std::string &text) {
		std::istringstream lines(text);
		for (std::string line; std::getline(lines, line);)
			if (line.ends_with("  step") &&
			    line.find(" " + usdtprof::human_ns(u(d["p50_ns"])) + " ") != std::string::npos)
				return true;
		return false;
	};
	REQUIRE(has_row(r.text));
	REQUIRE(has_row(tree.out));
}

TEST_CASE("durations: two recordings merged add their histograms, min of mins, max of maxes", "[durations]")
{
	Run a = record_durations(), b = record_durations();
	Output o = run({e2e::usdtprof(), "report", "--format", "json", "--raw", a.data, b.data});
	INFO(o.err);
	REQUIRE(o.status == 0);
	json merged = function(json::parse(o.out), "step")["durations"];
	json da = function(a.report, "step")["durations"], db = function(b.report, "step")["durations"];
	REQUIRE(u(merged["count"]) == 2000);
	REQUIRE(u(merged["min_ns"]) == std::min(u(da["min_ns"]), u(db["min_ns"])));
	REQUIRE(u(merged["max_ns"]) == std::max(u(da["max_ns"]), u(db["max_ns"])));
	std::map<uint64_t, uint64_t> sum;
	for (const json *d : {&da, &db})
		for (const json &h : (*d)["histogram"])
			sum[u(h["low_ns"])] += u(h["count"]);
	std::map<uint64_t, uint64_t> got;
	for (const json &h : merged["histogram"])
		got[u(h["low_ns"])] = u(h["count"]);
	REQUIRE(got == sum);

	// Compensated (no --raw): two `record` runs are calibrated apart, so each
	// is compensated with its own calibration before merging; the merged
	// report has no one calibration, and says so rather than "as measured".
	Output c = run({e2e::usdtprof(), "report", "--format", "json", a.data, b.data});
	REQUIRE(c.status == 0);
	json compensated = json::parse(c.out);
	REQUIRE(compensated["calibration"].is_null());
	REQUIRE(compensated["compensated_parts"] == json({{"compensated", 2}, {"merged", 2}}));
	uint64_t parts_self = u(function(report_json(a.data), "step")["self_ns"]) +
			      u(function(report_json(b.data), "step")["self_ns"]);
	REQUIRE(u(function(compensated, "step")["self_ns"]) == parts_self);
	REQUIRE(u(function(compensated, "step")["self_ns"]) < u(function(json::parse(o.out), "step")["self_ns"]));
	Output text = run({e2e::usdtprof(), "report", a.data, b.data});
	REQUIRE(text.status == 0);
	INFO(text.out);
	REQUIRE(text.out.find("probe overhead taken out of each of 2 of the 2 merged profiles with its own calibration") !=
		std::string::npos);
	REQUIRE(text.out.find("durations of single calls (inclusive, wall-clock, probe overhead taken out") !=
		std::string::npos);
	REQUIRE(text.out.find("as measured: probe overhead included") == std::string::npos);
}

// The durations are compensated like the totals (docs/design.md, "Overhead
// compensation"): a function called once has one duration, its total; the
// average of many calls lies between their shortest and longest. --raw shows
// both as measured. nested 1: main -> outer -> 3 x inner, ~10 ms.
TEST_CASE("durations agree with the compensated totals: one call's min == max == avg, min <= avg <= max", "[durations]")
{
	std::string data = temp_dir() + "/nested.data";
	Output o = run({e2e::usdtprof(), "record", "-o", data, "--", target("nested"), "1"});
	INFO(o.err);
	REQUIRE(o.status == 7); // nested exits 7 on purpose
	for (bool raw : {false, true}) {
		json report = report_json(data, raw);
		INFO((raw ? "--raw " : "") << report["functions"].dump(1));
		REQUIRE(report["calibration"].is_object()); // compensated unless raw
		for (const char *name : {"main", "outer", "inner"}) {
			json f = function(report, name);
			const json &d = f["durations"];
			uint64_t calls = u(f["calls"]), avg = u(f["total_ns"]) / calls;
			REQUIRE(calls == (std::string(name) == "inner" ? 3u : 1u));
			REQUIRE(u(d["count"]) == calls);
			REQUIRE(u(d["min_ns"]) <= avg + 1);
			REQUIRE(avg <= u(d["max_ns"]) + 1);
			REQUIRE(u(d["min_ns"]) <= u(d["p50_ns"]));
			REQUIRE(u(d["p50_ns"]) <= u(d["p99_ns"]));
			REQUIRE(u(d["p99_ns"]) <= u(d["max_ns"]));
			if (calls == 1) {
				// Exact to the nanosecond: the shift is the path's removal per call.
				REQUIRE(u(d["min_ns"]) == u(f["total_ns"]));
				REQUIRE(u(d["max_ns"]) == u(f["total_ns"]));
			}
			// Compensated: less than measured, by what the total lost.
			if (!raw && calls == 1)
				REQUIRE(u(f["raw_total_ns"]) - u(f["total_ns"]) > 0);
		}
	}
}
