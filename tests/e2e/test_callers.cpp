// report --callers / --callees on real recordings, checked against the paths
// of report --format json (docs/report-json.md "Callers and callees").
#include <catch2/catch.hpp>
#include <map>

#include "harness.h"

using namespace e2e;
using nlohmann::json;

namespace {

struct EdgeSum {
	uint64_t calls = 0, time_ns = 0;
	bool operator==(const EdgeSum &) const = default;
};

std::string record(const std::string &name, const std::vector<std::string> &args = {}, int status = 0)
{
	std::string data = temp_dir() + "/profile.data";
	std::vector<std::string> argv = {usdtprof(), "record", "-o", data, "--", target(name)};
	argv.insert(argv.end(), args.begin(), args.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == status);
	return data;
}

json report(const std::vector<std::string> &args)
{
	std::vector<std::string> argv = {usdtprof(), "report"};
	argv.insert(argv.end(), args.begin(), args.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	return json::parse(o.out);
}

bool contains(const json &stack, size_t end, const std::string &name)
{
	for (size_t i = 0; i < end; i++)
		if (stack[i] == name)
			return true;
	return false;
}

// From the paths alone: per caller (callees: per callee) of fn, the calls of
// the paths through that edge, and the time of those whose fn is outermost.
std::map<std::string, EdgeSum> edges_from_paths(const json &paths, const std::string &fn, bool callers)
{
	std::map<std::string, EdgeSum> out;
	for (const json &p : paths) {
		const json &s = p["stack"];
		size_t at = callers ? s.size() - 1 : s.size() - 2; // fn's place in the stack
		if (s.size() < (callers ? 1u : 2u) || s[at] != fn)
			continue;
		std::string other = callers ? (at ? s[at - 1].get<std::string>() : "[root]") : s.back().get<std::string>();
		out[other].calls += p["calls"].get<uint64_t>();
		if (!contains(s, at, fn))
			out[other].time_ns += p["total_ns"].get<uint64_t>();
	}
	return out;
}

std::map<std::string, EdgeSum> edges_of(const json &view)
{
	std::map<std::string, EdgeSum> out;
	for (const json &e : view["edges"])
		out[e["name"]] = {e["calls"], e["time_ns"]};
	return out;
}

uint64_t sum_time(const std::map<std::string, EdgeSum> &edges)
{
	uint64_t t = 0;
	for (const auto &[name, e] : edges)
		t += e.time_ns;
	return t;
}

// The edges of fn equal those derived from the paths, and add up to its total.
void require_edges_match_paths(const std::string &data, const json &paths, const std::string &fn)
{
	INFO(fn);
	json j = report({data, "--format", "json", "--callers", fn, "--callees", fn});
	auto callers = edges_of(j["callers"]), callees = edges_of(j["callees"]);
	REQUIRE(callers == edges_from_paths(paths, fn, true));
	REQUIRE(callees == edges_from_paths(paths, fn, false));
	uint64_t total = j["callers"]["function"]["total_ns"];
	REQUIRE(sum_time(callers) == total);
	REQUIRE(sum_time(callees) + j["callees"]["outer_self_ns"].get<uint64_t>() == total);
}

} // namespace

TEST_CASE("report --callers/--callees: edges of real recursive and nested calls equal the paths' sums", "[callers]")
{
	std::string rec = record("recursion");
	json paths = report_json(rec)["paths"];
	for (const char *fn : {"rec", "ping", "pong"})
		require_edges_match_paths(rec, paths, fn);

	// What the target does: main runs rec(5) 4 times and ping(3) twice.
	json rec_callers = report({rec, "--format", "json", "--callers", "rec"})["callers"];
	auto callers = edges_of(rec_callers);
	REQUIRE(callers.size() == 2);
	REQUIRE(callers["[root]"].calls == 4);
	REQUIRE(callers["rec"].calls == 16);
	REQUIRE(callers["rec"].time_ns == 0); // inside the outermost rec: counted once
	REQUIRE(rec_callers["function"]["calls"] == 20);
	auto ping = edges_of(report({rec, "--format", "json", "--callers", "ping"})["callers"]);
	REQUIRE(ping["[root]"].calls == 2);
	REQUIRE(ping["pong"].calls == 4);
	auto pong = edges_of(report({rec, "--format", "json", "--callees", "pong"})["callees"]);
	REQUIRE(pong.size() == 1);
	REQUIRE(pong["ping"].calls == 4);

	std::string nested = record("nested", {"5"}, 7); // nested exits 7 on purpose
	json npaths = report_json(nested)["paths"];
	for (const char *fn : {"main", "outer", "inner"})
		require_edges_match_paths(nested, npaths, fn);
	json outer = report({nested, "--format", "json", "--callees", "outer"})["callees"];
	auto inner = edges_of(outer)["inner"];
	REQUIRE(inner.calls == 15);
	REQUIRE(inner.time_ns == function(report_json(nested), "inner")["total_ns"].get<uint64_t>());

	Output text = run({usdtprof(), "report", rec, "--callers", "rec"});
	REQUIRE(text.status == 0);
	REQUIRE(text.out.find("usdtprof callers of rec: 20 calls") == 0);
	Output missing = run({usdtprof(), "report", rec, "--callees", "no_such_function"});
	REQUIRE(missing.status == 1);
	REQUIRE(missing.out.empty());
	REQUIRE(missing.err == "usdtprof: " + rec + ": no function named 'no_such_function' in the profile\n");
}
