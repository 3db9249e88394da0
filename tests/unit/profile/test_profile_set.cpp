#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>

#include "profile/compensation.h"
#include "profile/path_filter.h"
#include "profile/profile_set.h"
#include "report/report.h"
#include "../render_as.h"

using namespace usdtprof;

namespace {

// main -> work -> parse in pid 1, names in the order given.
Profile interval(std::vector<std::string> functions, uint32_t main, uint32_t work, uint32_t parse, uint64_t scale)
{
	Profile p;
	p.functions = std::move(functions);
	p.processes = {{1, "app", {"./app"}}};
	p.nodes = {
		// parent, function, pid, calls, open, self_ns, total_ns, self_offcpu_ns
		{kNoParent, main, 1, 1 * scale, 0, 10 * scale, 60 * scale, 2 * scale},
		{0, work, 1, 2 * scale, 0, 20 * scale, 50 * scale, 0},
		{1, parse, 1, 3 * scale, 1, 30 * scale, 30 * scale, 0},
	};
	p.duration_ns = 1000 * scale;
	p.start_unix_ns = int64_t(scale) * 1'000'000'000;
	p.stop_unix_ns = p.start_unix_ns + int64_t(p.duration_ns);
	p.anomalies = {{"exit_mismatch", scale}};
	return p;
}

Calibration calibration(double own_ns, size_t functions)
{
	Calibration c;
	c.kinds = {{"native", own_ns, 1, 0.5, 0.5, 24, 0}};
	c.function_kinds.assign(functions, 0);
	return c;
}

const PathNode &node(const Profile &p, const std::string &stack)
{
	CallTree t = build_call_tree(p);
	for (uint32_t i = 0; i < t.nodes.size(); i++) {
		std::string s;
		for (const std::string &f : stack_of(t, i))
			s += (s.empty() ? "" : ";") + f;
		if (s == stack) {
			// The profile node of the same name path (one per path after a merge).
			for (const PathNode &n : p.nodes)
				if (p.functions[n.function] == t.name(i) && n.calls == t.nodes[i].calls)
					return n;
		}
	}
	FAIL("no path " << stack);
	return p.nodes[0];
}

} // namespace

TEST_CASE("merge_profiles: the same path of the same process adds up, whatever the function ids", "[merge]")
{
	Profile a = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	Profile b = interval({"parse", "main", "work"}, 1, 2, 0, 2);
	Profile m = merge_profiles({a, b}, true);
	REQUIRE(m.nodes.size() == 3);
	CHECK(m.functions.size() == 3);
	const PathNode &parse = node(m, "main;work;parse");
	CHECK(parse.calls == 9);
	CHECK(parse.open == 2);
	CHECK(parse.self_ns == 90);
	CHECK(node(m, "main").self_offcpu_ns == 6);
	CHECK(m.duration_ns == 3000);
	CHECK(m.start_unix_ns == 1'000'000'000);
	CHECK(m.stop_unix_ns == 2'000'002'000);
	CHECK(m.anomalies["exit_mismatch"] == 3);
	CHECK(m.processes.size() == 1);
	CHECK(build_call_tree(m).total_self_ns == build_call_tree(a).total_self_ns + build_call_tree(b).total_self_ns);
}

TEST_CASE("merge_profiles: processes stay apart, sampled fraction weighted by duration", "[merge]")
{
	Profile a = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	Profile b = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	for (PathNode &n : b.nodes)
		n.pid = 2;
	b.processes = {{2, "other", {}}};
	b.sampled_fraction = 0.5;
	b.duration_ns = 3000;
	Profile m = merge_profiles({a, b}, true);
	CHECK(m.nodes.size() == 6);
	CHECK(m.processes.size() == 2);
	CHECK(m.sampled_fraction == Approx((1000 + 0.5 * 3000) / 4000.0));
	CHECK(split_by_process(m).nodes.size() == 8);
}

TEST_CASE("merge_profiles: one calibration is kept, different ones are applied per part first", "[merge]")
{
	Profile a = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	Profile b = interval({"parse", "main", "work"}, 1, 2, 0, 2);
	a.calibration = calibration(1, 3);
	b.calibration = calibration(1, 3);
	b.calibration->function_kinds = {-1, 0, 0}; // parse untimed in b: kinds follow the functions
	Profile same = merge_profiles({a, b}, false);
	REQUIRE(same.calibration);
	CHECK(same.calibration->function_kinds == std::vector<int32_t>{0, 0, 0});

	b.calibration = calibration(2, 3);
	Profile apart = merge_profiles({a, b}, false);
	CHECK_FALSE(apart.calibration);
	CHECK(apart.compensated_parts == 2); // said in the report: compensated, not as measured
	CHECK(apart.merged_parts == 2);
	CHECK(same.compensated_parts == 0);
	uint64_t compensated = build_call_tree(compensate(a)).total_self_ns + build_call_tree(compensate(b)).total_self_ns;
	CHECK(build_call_tree(apart).total_self_ns == compensated);
	Profile raw = merge_profiles({a, b}, true);
	CHECK_FALSE(raw.calibration);
	CHECK(raw.compensated_parts == 0);
	CHECK(build_call_tree(raw).total_self_ns == 180);
}

namespace {

// A runtime's calibration: its own probe code uncompensated (unknown per call).
Calibration runtime_calibration(const char *kind, double own_ns, size_t functions)
{
	Calibration c = calibration(own_ns, functions);
	c.kinds[0].kind = kind;
	c.kinds[0].uncompensated_ns = -1;
	return c;
}

const std::string kPhpLine = "not compensated: the runtime's own probe code (php; per call: unknown), which usdtprof "
			     "cannot calibrate in its own process\n";

size_t count_of(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
		n++;
	return n;
}

} // namespace

TEST_CASE("merged profiles calibrated apart keep the line on the runtime's own probe code: once when the parts "
	  "agree, else which part left what",
	  "[merge][compensation][report]")
{
	Profile a = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	Profile b = interval({"main", "work", "parse"}, 0, 1, 2, 2);
	a.calibration = runtime_calibration("php", 1, 3);
	b.calibration = runtime_calibration("php", 2, 3);
	ReportOptions o;
	// One profile's report says it ...
	REQUIRE(render_as("text", a, o).find(kPhpLine) != std::string::npos);
	// ... and two calibrated apart, both php, say it once, as one would.
	Profile apart = merge_profiles({a, b}, false);
	REQUIRE(apart.compensated_parts == 2);
	CHECK(merged_compensation_line(apart).find(kPhpLine) != std::string::npos);
	std::string text = render_as("text", apart, o);
	CAPTURE(text);
	CHECK(count_of(text, "not compensated: ") == 1);
	CHECK(count_of(text, kPhpLine) == 1);
	// A third part with no calibration (as measured) changes nothing of it.
	Profile c = interval({"main", "work", "parse"}, 0, 1, 2, 3);
	CHECK(count_of(render_as("text", merge_profiles({a, b, c}, false), o), kPhpLine) == 1);

	// Parts that differ: each runtime with the parts that left it; a native
	// part leaves nothing uncompensated and is not named.
	Profile r = interval({"main", "work", "parse"}, 0, 1, 2, 4);
	r.calibration = runtime_calibration("ruby", 3, 3);
	Profile n = interval({"main", "work", "parse"}, 0, 1, 2, 5);
	n.calibration = calibration(4, 3); // native: uncompensated_ns 0
	Profile mixed = merge_profiles({a, r, n, b}, false);
	text = render_as("text", mixed, o);
	CAPTURE(text);
	CHECK(count_of(text, "not compensated: ") == 1);
	CHECK(text.find("not compensated: the runtime's own probe code, which usdtprof cannot calibrate in its own process: "
			"(php; per call: unknown) in merged profiles 1 and 4; (ruby; per call: unknown) in merged "
			"profile 2 of 4 (numbered in the order read)\n") != std::string::npos);
	// Only native parts: nothing to say; --raw: nothing compensated, nothing said.
	CHECK(merged_compensation_line(merge_profiles({n, interval({"main", "work", "parse"}, 0, 1, 2, 6)}, false))
		      .find("not compensated") == std::string::npos);
	o.raw = true;
	CHECK(render_as("text", merge_profiles({a, b}, true), o).find("not compensated") == std::string::npos);
}

TEST_CASE("merged profiles calibrated apart keep each part's spread: their uncertain times are marked",
	  "[merge][compensation][report]")
{
	Profile a = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	Profile b = interval({"main", "work", "parse"}, 0, 1, 2, 1);
	a.calibration = calibration(1, 3);
	b.calibration = calibration(2, 3);
	Profile apart = merge_profiles({a, b}, false);
	Profile ca = compensate(a), cb = compensate(b);
	REQUIRE(apart.nodes.size() == 3);
	for (size_t i = 0; i < 3; i++) {
		CAPTURE(i);
		CHECK(apart.nodes[i].uncertain_ns > 0);
		CHECK(apart.nodes[i].uncertain_ns == ca.nodes[i].uncertain_ns + cb.nodes[i].uncertain_ns);
	}
}

TEST_CASE("parse_clock_time: a time of day on the side of the anchor asked for; full dates as given", "[merge]")
{
	setenv("TZ", "UTC", 1);
	tzset();
	int64_t anchor = int64_t(1'796'000'000) * 1'000'000'000; // 2026-11-30 00:53:20 UTC
	CHECK(local_time(anchor) == "2026-11-30 00:53:20");
	CHECK(local_time(*parse_clock_time("00:50", anchor, false)) == "2026-11-30 00:50:00");
	CHECK(local_time(*parse_clock_time("10:15", anchor, false)) == "2026-11-29 10:15:00");
	CHECK(local_time(*parse_clock_time("00:50:30", anchor, true)) == "2026-12-01 00:50:30");
	CHECK(local_time(*parse_clock_time("01:00", anchor, true)) == "2026-11-30 01:00:00");
	CHECK(local_time(*parse_clock_time("2026-01-02 03:04", anchor, true)) == "2026-01-02 03:04:00");
	CHECK(local_time(*parse_clock_time("2026-01-02T03:04:05", anchor, false)) == "2026-01-02 03:04:05");
	for (const char *bad : {"24:00", "10:60", "10", "2026-13-01 00:00", "x10:00", "10:00 "})
		CHECK_FALSE(parse_clock_time(bad, anchor, false));
}

TEST_CASE("filter_paths: focus keeps paths through a match, ignore drops them", "[filter]")
{
	// main -> work -> parse, main -> idle, parse at a root of its own.
	Profile p;
	p.functions = {"main", "work", "parse", "idle"};
	p.nodes = {
		{kNoParent, 0, 1, 1, 0, 10, 0},
		{0, 1, 1, 2, 0, 20, 0},
		{1, 2, 1, 3, 0, 30, 0},
		{0, 3, 1, 4, 0, 40, 0},
		{kNoParent, 2, 1, 5, 0, 50, 0},
	};
	p.calibration = calibration(1, 4);

	auto focus = filter_paths(p, "^wor", "");
	REQUIRE(focus);
	CHECK_FALSE(focus->calibration); // compensated before: never again
	REQUIRE(focus->nodes.size() == 3); // main (structure only), work, parse
	CHECK(focus->nodes[0].calls == 1);
	CHECK(focus->nodes[0].self_ns == 0);
	CHECK(focus->nodes[0].total_ns == 50);
	CHECK(build_call_tree(*focus).total_self_ns == 50);

	auto ignore = filter_paths(p, "", "work|idle");
	REQUIRE(ignore);
	REQUIRE(ignore->nodes.size() == 2); // main and the root parse
	CHECK(ignore->nodes[0].total_ns == 10);
	CHECK(build_call_tree(*ignore).total_self_ns == 60);

	// A path through parse but also through work is dropped.
	auto both = filter_paths(p, "parse", "work");
	REQUIRE(both);
	REQUIRE(both->nodes.size() == 1);
	CHECK(both->nodes[0].self_ns == 50);

	auto none = filter_paths(p, "nothing", "");
	REQUIRE_FALSE(none);
	CHECK(none.error().message == "no call path is left after --focus/--ignore");
	CHECK_FALSE(filter_paths(p, "(", ""));
}

TEST_CASE("merge_threads: a per-thread profile as if recorded without: thread frames out, paths summed", "[merge][per_thread]")
{
	// pid 1: thread "a (tid 1)" runs main -> work, thread "b (tid 2)" main -> work, and parse as a root.
	Profile p;
	p.functions = {"a (tid 1)", "main", "work", "b (tid 2)", "parse"};
	p.processes = {{1, "app", {"./app"}}};
	p.nodes = {
		// parent, function, pid, calls, open, self_ns, total_ns, self_offcpu_ns
		{kNoParent, 0, 1, 1, 0, 0, 60, 0},
		{0, 1, 1, 1, 0, 10, 60, 2},
		{1, 2, 1, 2, 1, 50, 50, 0},
		{kNoParent, 3, 1, 1, 0, 0, 130, 0},
		{3, 1, 1, 3, 0, 30, 130, 1},
		{4, 2, 1, 4, 0, 70, 70, 0},
		{3, 4, 1, 5, 0, 9, 9, 0},
	};
	p.dists.resize(p.nodes.size());
	p.dists[2].buckets = {{4, 2}};
	p.dists[5].buckets = {{4, 1}, {6, 3}};
	p.distributions = true;
	p.per_thread = true;
	p.thread_nodes = {0, 3};
	p.duration_ns = 1000;
	p.calibration = calibration(1, p.functions.size());
	p.calibration->function_kinds[0] = p.calibration->function_kinds[3] = -1;
	Profile m = merge_threads(p);
	CHECK_FALSE(m.per_thread);
	CHECK(m.thread_nodes.empty());
	REQUIRE(m.nodes.size() == 3);
	CHECK(m.functions == std::vector<std::string>{"main", "work", "parse"});
	REQUIRE(m.calibration);
	CHECK(m.calibration->function_kinds == std::vector<int32_t>{0, 0, 0});
	CHECK(m.duration_ns == 1000);
	const PathNode &main = m.nodes[0], &work = m.nodes[1], &parse = m.nodes[2];
	CHECK(main.parent == kNoParent);
	CHECK((main.calls == 4 && main.self_ns == 40 && main.total_ns == 190 && main.self_offcpu_ns == 3));
	CHECK((work.parent == 0 && work.calls == 6 && work.open == 1 && work.self_ns == 120));
	CHECK(m.dists[1].buckets == std::vector<std::pair<uint32_t, uint64_t>>{{4, 3}, {6, 3}});
	CHECK((parse.parent == kNoParent && parse.calls == 5)); // a root of thread b

	// Merged with another part, a per-thread profile keeps its thread frames marked.
	Profile both = merge_profiles({p, p}, true);
	CHECK(both.per_thread);
	REQUIRE(both.thread_nodes.size() == 2);
	CHECK(both.functions[both.nodes[both.thread_nodes[1]].function] == "b (tid 2)");
	CHECK(merge_threads(both).nodes.size() == 3);
}
