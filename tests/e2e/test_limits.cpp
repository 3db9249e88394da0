// The shadow stack's edges: attaching mid-call and recursion beyond its depth.
#include <catch2/catch.hpp>
#include <csignal>

#include "harness.h"

using namespace e2e;

TEST_CASE("attaching ten frames deep: they nest under [running at attach] in the order their exits show, no anomaly",
	  "[limits]")
{
	std::string data = temp_dir() + "/attach.data";
	Background t({target("deep"), "attach"});
	t.wait_for_line("ready");
	Background rec({usdtprof(), "record", "-p", std::to_string(t.pid()), "-o", data});
	rec.wait_for_line("recording", true);
	kill(t.pid(), SIGUSR1);
	REQUIRE(t.wait() == 0);
	REQUIRE(rec.wait() == 0);
	double slack = slack_ns(t.all_stdout());

	// An ordinary attach: frames running at it are accounted, not anomalies.
	auto report = report_json(data);
	require_no_anomalies(report);
	// level10 exits first (the innermost), level1 last: nested so.
	std::string stack = "[running at attach]";
	double inner_total = 0;
	std::vector<nlohmann::json> levels;
	for (int i = 1; i <= 10; i++) {
		stack += ";level" + std::to_string(i);
		INFO(stack);
		auto p = path(report, stack);
		REQUIRE(p.is_object());
		REQUIRE(p["calls"] == 1);
		levels.push_back(p);
	}
	for (int i = 10; i >= 1; i--) {
		const auto &p = levels[i - 1];
		// Each level was innermost for 5 ms after its callee returned; level10
		// for its 20 ms spin plus the wait between attach and the signal.
		double self = p["self_ns"].get<double>();
		if (i < 10)
			require_time(p["self_ns"], 5e6, slack);
		else
			REQUIRE((self >= 20e6 && self < 2e9));
		// Its total: its own time and its callee's, nothing counted twice.
		REQUIRE(p["total_ns"].get<double>() == self + inner_total);
		inner_total = p["total_ns"].get<double>();
	}
	REQUIRE(path(report, "[running at attach]")["total_ns"].get<double>() == inner_total);
	// Calls entered after the attach are exact and are roots of their own.
	auto s = path(report, "shallow");
	REQUIRE(s["calls"] == 3);
	require_time(s["self_ns"], 6e6, slack);
	// The thread's recorded time never exceeds the recording.
	REQUIRE(report["total_self_ns"].get<double>() <= report["duration_ns"].get<double>());
	REQUIRE(inner_total + s["total_ns"].get<double>() <= report["duration_ns"].get<double>());
}

TEST_CASE("recursion 10,000 deep: exact calls, conserved time, deeper detail marked truncated, then resync",
	  "[limits]")
{
	std::string data = temp_dir() + "/deep.data";
	Output o = run({usdtprof(), "record", "-o", data, "--", target("deep"), "recurse", "10000"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	auto report = report_json(data);

	REQUIRE(function(report, "rec")["calls"] == 30000);
	REQUIRE(report["anomalies"]["depth_overflow"] == 3 * (10000 - 128));
	REQUIRE(report["anomalies"]["exit_mismatch"] == 0);
	REQUIRE(report["anomalies"]["exit_no_frame"] == 0);

	std::string deepest = "rec";
	for (int i = 1; i < 128; i++)
		deepest += ";rec";
	REQUIRE(path(report, deepest)["calls"] == 3);
	REQUIRE(path(report, deepest + ";rec").is_null());
	auto truncated = path(report, deepest + ";[truncated];rec");
	REQUIRE(truncated.is_object());
	REQUIRE(truncated["calls"] == 3 * (10000 - 128));

	// No time is lost: the self times of every rec path add up to the
	// outermost activations' total.
	uint64_t self = 0;
	for (const auto &p : report["paths"])
		if (p["stack"][0] == "rec")
			self += p["self_ns"].get<uint64_t>();
	REQUIRE(self == path(report, "rec")["total_ns"].get<uint64_t>());

	// Back at shallow depth the stack is in step again.
	auto s = path(report, "shallow");
	REQUIRE(s["calls"] == 3);
	require_time(s["self_ns"], 6e6, slack_ns(o.out));
}

TEST_CASE("a name the program wrote at run time is not read from its file once it exited", "[limits]")
{
	// The file holds other bytes (or none) where the process's writable data
	// was: the name is unknown, never those bytes.
	std::string dir = temp_dir(), data = dir + "/runtime_name.data";
	Output o = run({usdtprof(), "record", "-o", data, "--", target("runtime_name")});
	INFO(o.err);
	REQUIRE(o.status == 0);
	auto report = report_json(data);
	REQUIRE(function(report, "literal")["calls"] == 2);
	int unknown = 0;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		if (name == "literal")
			continue;
		REQUIRE(name.rfind("[unknown 0x", 0) == 0);
		REQUIRE(f["calls"] == 2);
		unknown++;
	}
	REQUIRE(unknown == 1);
}

TEST_CASE("very long names are cut and marked, separators in names are escaped in folded output", "[limits]")
{
	std::string dir = temp_dir(), data = dir + "/names.data";
	Output o = run({usdtprof(), "record", "-o", data, "--", target("names")});
	INFO(o.err);
	REQUIRE(o.status == 0);
	auto report = report_json(data);
	bool found_long = false;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		if (name.rfind("abcdef", 0) == 0) {
			found_long = true;
			REQUIRE(f["calls"] == 2);
			REQUIRE(name.size() == 1024); // kMaxNameBytes
			REQUIRE(name.substr(1021) == "...");
		}
	}
	REQUIRE(found_long);
	REQUIRE_THAT(o.err, Catch::Matchers::Contains("1 function names or locations longer than 1024 bytes were cut"));
	REQUIRE(function(report, "a;b%c")["calls"] == 2);

	Output folded = run({usdtprof(), "export", data, "--format", "folded"});
	REQUIRE(folded.status == 0);
	REQUIRE(folded.out.find("a%3Bb%25c ") != std::string::npos);
	REQUIRE(folded.out.find("a;b") == std::string::npos);
}
