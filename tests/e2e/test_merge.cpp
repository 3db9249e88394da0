// Many profiles as one: a real monitor's output directory merged by report
// and export, cut by --since/--until, filtered by --focus/--ignore.
#include <catch2/catch.hpp>
#include <csignal>
#include <ctime>
#include <sstream>

#include "harness.h"
#include "intervals.h"

using namespace e2e;
using nlohmann::json;

namespace {

// A monitor's directory of nested's 40 outer calls, in 0.1 s intervals.
std::string monitored_dir()
{
	std::string dir = temp_dir() + "/intervals";
	Background t({target("nested"), "--wait", "40"});
	t.wait_for_line("ready");
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.1", "--budget", "1", "-o", dir});
	mon.wait_for_line("monitoring", true);
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	REQUIRE(t.wait() == 7);
	REQUIRE(mon.wait() == 0);
	return dir;
}

json report(const std::vector<std::string> &args, std::string *err = nullptr)
{
	std::vector<std::string> argv = {e2e::usdtprof(), "report", "--format", "json"};
	argv.insert(argv.end(), args.begin(), args.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	if (err)
		*err = o.err;
	return json::parse(o.out);
}

uint64_t u(const json &v) { return v.get<uint64_t>(); }

// Per function over the profiles: calls and raw self time.
std::map<std::string, std::pair<uint64_t, uint64_t>> sums(const std::vector<usdtprof::Profile> &profiles)
{
	std::map<std::string, std::pair<uint64_t, uint64_t>> out;
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::PathNode &n : p.nodes) {
			out[p.functions[n.function]].first += n.calls;
			out[p.functions[n.function]].second += n.self_ns;
		}
	return out;
}

void require_functions_equal(const json &report, const std::map<std::string, std::pair<uint64_t, uint64_t>> &expected)
{
	for (const auto &[name, calls_self] : expected) {
		INFO(name);
		if (calls_self.first == 0) // [running at attach]: never called, not listed
			continue;
		json f = function(report, name);
		REQUIRE(u(f["calls"]) == calls_self.first);
		REQUIRE(u(f["self_ns"]) == calls_self.second);
	}
}

std::string local(int64_t unix_s)
{
	time_t t = unix_s;
	tm local_tm;
	localtime_r(&t, &local_tm);
	char buf[32];
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local_tm);
	return buf;
}

} // namespace

TEST_CASE("report/export DIR: a monitor's intervals merged exactly, cut by --since/--until, filtered", "[merge]")
{
	std::string dir = monitored_dir();
	auto profiles = interval_profiles(dir);
	INFO(profiles.size() << " intervals");
	REQUIRE(profiles.size() >= 4);

	// Exact: every function's calls and measured self time are the intervals' sums.
	std::string err;
	json all = report({dir, "--raw"}, &err);
	REQUIRE(err.find("usdtprof: " + std::to_string(profiles.size()) + " profiles merged") == 0);
	require_functions_equal(all, sums(profiles));
	REQUIRE(u(function(all, "outer")["calls"]) == 40);
	REQUIRE(u(function(all, "inner")["calls"]) == 120);
	uint64_t duration = 0;
	for (const auto &p : profiles)
		duration += p.duration_ns;
	REQUIRE(u(all["duration_ns"]) == duration);

	// Folded weights of the merged (compensated) profile add up to its report's total.
	json compensated = report({dir});
	Output folded = run({e2e::usdtprof(), "export", dir, "--format", "folded"});
	REQUIRE(folded.status == 0);
	std::istringstream lines(folded.out);
	uint64_t weights = 0;
	for (std::string line; std::getline(lines, line);)
		weights += std::stoull(line.substr(line.rfind(' ') + 1));
	REQUIRE(weights == u(compensated["total_self_ns"]));

	// A one-second window: the intervals whose recorded span overlaps it, no others.
	const auto &middle = profiles[profiles.size() / 2];
	int64_t since = middle.start_unix_ns / 1'000'000'000, until = since + 1;
	std::vector<usdtprof::Profile> inside;
	for (const auto &p : profiles)
		if (p.start_unix_ns < until * 1'000'000'000 && p.stop_unix_ns > since * 1'000'000'000)
			inside.push_back(p);
	json window = report({dir, "--raw", "--since", local(since), "--until", local(until)}, &err);
	INFO(err);
	if (inside.size() > 1)
		REQUIRE(err.find("usdtprof: " + std::to_string(inside.size()) + " profiles merged") == 0);
	require_functions_equal(window, sums(inside));
	Output none = run({e2e::usdtprof(), "report", dir, "--since", local(until + 7200), "--until", local(until + 7260)});
	REQUIRE(none.status == 1);
	REQUIRE(none.out.empty());
	REQUIRE(none.err.find("usdtprof: no profile was recorded between ") == 0);

	// --focus inner keeps inner's time and outer only as its caller; --ignore drops it.
	json focus = report({dir, "--raw", "--focus", "^inner$"});
	REQUIRE(u(focus["total_self_ns"]) == sums(profiles)["inner"].second);
	REQUIRE(u(function(focus, "outer")["self_ns"]) == 0);
	REQUIRE(u(function(focus, "outer")["calls"]) > 0);
	json ignore = report({dir, "--raw", "--ignore", "^inner$"});
	for (const json &f : ignore["functions"])
		REQUIRE(f["name"] != "inner");
	REQUIRE(u(function(ignore, "outer")["total_ns"]) == u(function(ignore, "outer")["self_ns"]));

	Output empty_dir = run({e2e::usdtprof(), "report", temp_dir()});
	REQUIRE(empty_dir.status == 1);
	REQUIRE(empty_dir.err.find("a directory without usdtprof-*.data profiles") != std::string::npos);
}
