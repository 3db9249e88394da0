// usdtprof diff on two real recordings of a target whose charlie does twice
// the work in the second (tests/targets/diffable.c).
#include <algorithm>
#include <cmath>
#include <sstream>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace e2e;
using nlohmann::json;

namespace {

std::string record(const std::string &dir, const std::vector<std::string> &command, int status = 0,
		   std::string *out = nullptr)
{
	std::string data = dir + "/" + std::to_string(std::hash<std::string>()(command.back())) + ".data";
	std::vector<std::string> argv = {usdtprof(), "record", "-o", data, "--"};
	argv.insert(argv.end(), command.begin(), command.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == status);
	if (out)
		*out = o.out;
	return data;
}

// diffable's own measure of a function: the median over its processes of
// the on-CPU time per call ("measured PID NAME NS ..." lines).
double measured_median(const std::string &out, const std::string &name)
{
	std::vector<double> v;
	std::istringstream lines(out);
	for (std::string line; std::getline(lines, line);) {
		std::istringstream words(line);
		std::string word, pid, value;
		words >> word >> pid;
		if (word != "measured")
			continue;
		while (words >> word >> value)
			if (word == name)
				v.push_back(std::stod(value));
	}
	REQUIRE(v.size() == 6);
	std::sort(v.begin(), v.end());
	return (v[2] + v[3]) / 2;
}

json diff(const std::vector<std::string> &args)
{
	std::vector<std::string> argv = {usdtprof(), "diff", "--format", "json"};
	argv.insert(argv.end(), args.begin(), args.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	return json::parse(o.out);
}

json row(const json &rows, const std::string &name)
{
	for (const json &r : rows)
		if (r["name"] == name)
			return r;
	FAIL("no row " << name);
	return nullptr;
}

// "name z typical_delta_ms[*]" per row in order, * on significant ones.
std::string ranked(const json &rows)
{
	std::string out;
	for (const json &r : rows) {
		char z[32] = "-";
		if (!r["z"].is_null())
			snprintf(z, sizeof z, "%.1f", r["z"].get<double>());
		out += r["name"].get<std::string>() + " " + z + " " +
		       std::to_string(r["typical_delta_self_ns"].get<int64_t>() / 1000000) + "ms" +
		       (r["significant"].get<bool>() ? "*" : "") + ", ";
	}
	return out;
}

} // namespace

TEST_CASE("diff: the function made 2x slower tops the diff, significant; unchanged ones are not", "[diff]")
{
	std::string dir = temp_dir(), base_out, slow_out;
	std::string base = record(dir, {target("diffable")}, 0, &base_out);
	std::string slow = record(dir, {target("diffable"), "slow"}, 0, &slow_out);
	// On-CPU time: fixed work, which load stretches in wall time only.
	json d = diff({base, slow, "--time", "cpu"});
	INFO(ranked(d["functions"])); // first: the one message a CI log's tail keeps
	INFO(d.dump(1));
	REQUIRE(d["base"]["processes"] == 6); // the 6 workers (the launcher calls no probe)
	json top = d["functions"][0];
	REQUIRE(top["name"].get<std::string>() == "charlie");
	REQUIRE(top["status"] == "changed");
	REQUIRE(top["significant"] == true);
	REQUIRE(top["z"].get<double>() >= 3);
	REQUIRE(top["delta_self_ns"].get<int64_t>() > 0);
	// The same code is not the same time: the function after charlie can
	// take longer by the program's own clock (tests/targets/diffable.c).
	// Held to what it measured: what changed by under 3% is not significant
	// (z 3 needs a change over ~6% at the diff's 2% floor of run spread).
	int held = 0;
	for (const char *same : {"alpha", "bravo", "delta", "echo"}) {
		double own = measured_median(slow_out, same) / measured_median(base_out, same);
		INFO(same << ": by the program's clock x" << own);
		if (std::fabs(std::log(own)) >= std::log(1.03))
			continue;
		held++;
		REQUIRE(row(d["functions"], same)["significant"] == false);
	}
	REQUIRE(held >= 2);
	REQUIRE(d["paths"][0]["stack"] == json{"worker", "charlie"});
	REQUIRE(d["paths"][0]["significant"] == true);

	// Both sides are the reports' numbers.
	json report = report_json(slow);
	json cpu_report = json::parse(run({usdtprof(), "report", "--format", "json", "--time", "cpu", slow}).out);
	for (const json &r : d["functions"]) {
		json f = function(cpu_report, r["name"]);
		REQUIRE(r["new"]["calls"] == f["calls"]);
		REQUIRE(r["new"]["self_ns"] == f["self_ns"]);
		REQUIRE(r["new"]["total_ns"] == f["total_ns"]);
	}
	REQUIRE(row(d["functions"], "charlie")["new"]["calls"] == 180);

	// Paths that exist on one side only are marked, never significant.
	std::string other = record(dir, {target("nested"), "1"}, 7);
	json apart = diff({base, other});
	REQUIRE(row(apart["functions"], "charlie")["status"] == "vanished");
	REQUIRE(row(apart["functions"], "outer")["status"] == "appeared");
	for (const json &r : apart["functions"])
		REQUIRE(r["significant"] == false);
}
