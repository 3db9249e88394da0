#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "profile/distribution.h"
#include "report/diff.h"

using namespace usdtprof;

namespace {

// main -> f_i for each (name, per-call self) in each pid, 10 calls each.
Profile profile_of(const std::vector<std::pair<std::string, uint64_t>> &fs, const std::vector<int32_t> &pids,
		   double jitter = 0)
{
	Profile p;
	p.functions = {"main"};
	for (const auto &[name, ns] : fs)
		p.functions.push_back(name);
	for (size_t k = 0; k < pids.size(); k++) {
		uint32_t root = uint32_t(p.nodes.size());
		p.nodes.push_back({kNoParent, 0, pids[k], 1, 0, 100, 0});
		for (uint32_t f = 0; f < fs.size(); f++) {
			// Each process a little apart: the spread the test reads.
			double factor = 1 + jitter * (double(k) - double(pids.size() - 1) / 2);
			p.nodes.push_back({root, f + 1, pids[k], 10, 0, uint64_t(std::llround(10 * double(fs[f].second) * factor)), 0});
		}
	}
	return p;
}

const DiffRow &row(const std::vector<DiffRow> &rows, const std::string &name)
{
	for (const DiffRow &r : rows)
		if (r.name == name)
			return r;
	FAIL("no row " << name);
	return rows[0];
}

const std::vector<std::pair<std::string, uint64_t>> kBase = {{"a", 1000}, {"b", 2000}, {"c", 3000}, {"d", 4000}, {"e", 5000}};

} // namespace

TEST_CASE("diff: deltas, shares and order by the change of self time", "[diff]")
{
	auto now_fs = kBase;
	now_fs[2].second = 6000; // c twice as slow
	Diff d = diff_profiles(profile_of(kBase, {1, 2, 3}, 0.02), profile_of(now_fs, {1, 2, 3}, 0.02), {});
	REQUIRE(d.functions[0].name == "c");
	const DiffRow &c = d.functions[0];
	CHECK(c.base.calls == 30);
	CHECK(c.delta_self_ns == int64_t(c.now.self_ns) - int64_t(c.base.self_ns));
	CHECK(c.delta_self_ns == 90'000);
	double base_share = 100.0 * double(c.base.self_ns) / double(d.base_total_ns);
	double new_share = 100.0 * double(c.now.self_ns) / double(d.new_total_ns);
	CHECK(c.delta_share == Approx(new_share - base_share));
	CHECK(c.base.per_call_ns.size() == 3);
	CHECK(c.significant);
	CHECK(*c.z > 3);
	for (const char *same : {"a", "b", "d", "e", "main"})
		CHECK_FALSE(row(d.functions, same).significant);
	CHECK(d.functions_run.ratio == Approx(1));
	CHECK(row(d.paths, "main;c").significant);
}

TEST_CASE("diff: a change the whole run shows is not significant; no spread, no verdict", "[diff]")
{
	auto slower = kBase;
	for (auto &[name, ns] : slower)
		ns = ns * 3 / 2; // everything 1.5x: the machine, not a function
	Diff d = diff_profiles(profile_of(kBase, {1, 2}, 0.02), profile_of(slower, {1, 2}, 0.02), {});
	CHECK(d.functions_run.ratio == Approx(1.5).epsilon(0.01));
	for (const DiffRow &r : d.functions)
		if (r.name != "main") // its 100 ns stayed: against the run, it moved
			CHECK_FALSE(r.significant);

	// One process each and two functions: nothing to judge the spread by.
	Diff one = diff_profiles(profile_of({{"a", 1000}}, {1}), profile_of({{"a", 5000}}, {1}), {});
	CHECK_FALSE(row(one.functions, "a").z);
	CHECK_FALSE(row(one.functions, "a").significant);
}

TEST_CASE("diff: appeared and vanished rows, --normalize scales NEW to BASE's total", "[diff]")
{
	Profile base = profile_of({{"a", 1000}, {"gone", 500}}, {1});
	Profile now = profile_of({{"a", 2000}, {"new", 700}}, {1});
	DiffOptions o;
	o.normalize = true;
	Diff d = diff_profiles(base, now, o);
	CHECK(row(d.functions, "gone").status == DiffStatus::Vanished);
	CHECK(row(d.functions, "new").status == DiffStatus::Appeared);
	CHECK_FALSE(row(d.functions, "new").significant);
	uint64_t sum = 0;
	for (const DiffRow &r : d.functions)
		sum += r.now.self_ns;
	CHECK(std::llabs(int64_t(sum) - int64_t(d.base_total_ns)) <= 3); // rounding per row
	CHECK(d.new_total_ns == 100 + 20'000 + 7'000);
	auto json = nlohmann::json::parse(render_diff_json(d, o));
	CHECK(json["normalize"] == true);
	CHECK(json["functions"][0]["status"].is_string());
	CHECK(render_diff_text(d, o).find("new scaled to base's total") != std::string::npos);
}

TEST_CASE("diff: one process's burst does not reorder the rows; a 2% move is within any run's spread", "[diff]")
{
	const std::vector<int32_t> pids = {1, 2, 3, 4, 5, 6};
	auto now_fs = kBase;
	now_fs[2].second = 4500; // c 1.5x slower in every process: +9 us per process
	Profile now = profile_of(now_fs, pids, 0.01);
	// e in one process of NEW: 10x its per-call time (a burst of CPU stolen
	// from it): a larger summed change than c's, which no median supports.
	size_t per_pid = kBase.size() + 1;
	PathNode &burst = now.nodes[2 * per_pid + 1 + 4];
	REQUIRE(now.functions[burst.function] == "e");
	burst.self_ns *= 10;
	burst.total_ns = burst.self_ns;
	Diff d = diff_profiles(profile_of(kBase, pids, 0.01), now, {});
	const DiffRow &e = row(d.functions, "e");
	REQUIRE(std::llabs(e.delta_self_ns) > std::llabs(row(d.functions, "c").delta_self_ns));
	CHECK_FALSE(e.significant);
	CHECK(std::llabs(e.typical_delta_self_ns) < 5'000);
	CHECK(d.functions[0].name == "c");
	CHECK(d.functions[0].significant);
	CHECK(d.functions[0].typical_delta_self_ns == Approx(6 * 10 * 1500).epsilon(0.02));

	// The same 2% in every process, others unmoved and tight: the MAD of
	// the others and the processes' spread are ~0, the run's floor is not.
	auto two_pct = kBase;
	two_pct[0].second = 1020;
	Diff small = diff_profiles(profile_of(kBase, pids, 0.001), profile_of(two_pct, pids, 0.001), {});
	CHECK_FALSE(row(small.functions, "a").significant);
	auto ten_pct = kBase;
	ten_pct[0].second = 1100;
	Diff large = diff_profiles(profile_of(kBase, pids, 0.001), profile_of(ten_pct, pids, 0.001), {});
	CHECK(row(large.functions, "a").significant);
}

namespace {

// One process: main -> each function, 10 calls (calls[f] if given), with
// the durations' histogram: each call at the per-call time, or (wide) the
// function's time spread as 9 short calls and one long one.
Profile one_process(const std::vector<std::pair<std::string, uint64_t>> &fs, const std::string &wide = "",
		    const std::map<std::string, uint64_t> &calls = {})
{
	Profile p = profile_of(fs, {1});
	p.distributions = true;
	p.dists.resize(p.nodes.size());
	for (size_t i = 1; i < p.nodes.size(); i++) {
		PathNode &n = p.nodes[i];
		const std::string &name = p.functions[n.function];
		uint64_t per_call = n.self_ns / n.calls;
		if (calls.contains(name)) {
			n.calls = calls.at(name);
			n.self_ns = n.total_ns = per_call * n.calls;
		}
		if (name == wide) { // 9 x per_call/3, 1 x the rest: the same mean
			uint64_t shortest = per_call / 3, longest = per_call * 10 - 9 * shortest;
			p.dists[i] = {shortest, longest, {{dist_bucket_of(shortest), 9}, {dist_bucket_of(longest), 1}}};
		} else {
			p.dists[i] = {per_call, per_call, {{dist_bucket_of(per_call), n.calls}}};
		}
	}
	return p;
}

} // namespace

TEST_CASE("diff: one process's calls give the spread from their durations; a few calls get no verdict", "[diff]")
{
	// The others move a little (the run's spread), c 2x.
	const std::vector<std::pair<std::string, uint64_t>> now_fs = {
		{"a", 1010}, {"b", 1980}, {"c", 6000}, {"d", 4040}, {"e", 4950}};
	Diff tight = diff_profiles(one_process(kBase), one_process(now_fs), {});
	REQUIRE(row(tight.functions, "c").z);
	CHECK(row(tight.functions, "c").significant);
	// The same means, but BASE's c calls spread 9 short, 1 ten times as long:
	// a 2x mean is within what 10 such calls can show.
	Diff wide = diff_profiles(one_process(kBase, "c"), one_process(now_fs), {});
	REQUIRE(row(wide.functions, "c").z);
	CHECK_FALSE(row(wide.functions, "c").significant);
	CHECK(std::fabs(*row(wide.functions, "c").z) < std::fabs(*row(tight.functions, "c").z) / 2);
	// Durations are wall-clock: the on-CPU comparison does not read them.
	DiffOptions cpu;
	cpu.time = TimeMode::Cpu;
	Profile base_cpu = one_process(kBase, "c"), now_cpu = one_process(now_fs);
	for (Profile *p : {&base_cpu, &now_cpu})
		for (PathNode &n : p->nodes)
			n.self_offcpu_ns = 0; // all on-CPU
	CHECK(row(diff_profiles(base_cpu, now_cpu, cpu).functions, "c").significant);
	// Under 10 calls in one process: no verdict, whatever the durations.
	Diff few = diff_profiles(one_process(kBase, "", {{"c", 9}}), one_process(now_fs, "", {{"c", 9}}), {});
	CHECK_FALSE(row(few.functions, "c").z);
	CHECK_FALSE(row(few.functions, "c").significant);
	CHECK(render_diff_text(few, {}).find("fewer than 10 calls in one process") != std::string::npos);
}

TEST_CASE("diff: a profile without durations (an older usdtprof's) is not taken as calls that never spread", "[diff]")
{
	const std::vector<std::pair<std::string, uint64_t>> now_fs = {
		{"a", 1010}, {"b", 1980}, {"c", 6000}, {"d", 4040}, {"e", 4950}};
	// NEW's c calls spread wide (9 short, 1 ten times as long).
	Profile now = one_process(now_fs, "c");
	// BASE with calls that all last the same (tight) and BASE without durations.
	Profile tight = one_process(kBase), without = one_process(kBase);
	drop_distributions(without);
	Diff with_tight = diff_profiles(tight, now, {}), with_none = diff_profiles(without, now, {});
	REQUIRE(row(with_tight.functions, "c").z);
	REQUIRE(row(with_none.functions, "c").z);
	// Its calls take NEW's spread: a smaller z than calls known not to spread.
	CHECK(std::fabs(*row(with_none.functions, "c").z) < std::fabs(*row(with_tight.functions, "c").z));
	CHECK_FALSE(with_none.base_durations);
	CHECK(with_none.new_durations);
	CHECK(render_diff_text(with_none, {}).find("base has no durations (recorded by a usdtprof older than them): its "
						   "calls are taken to spread as new's do") != std::string::npos);
	CHECK(render_diff_text(with_tight, {}).find("no durations") == std::string::npos);
	CHECK(nlohmann::json::parse(render_diff_json(with_none, {}))["base"]["durations"] == false);
	// The other way round, and neither.
	Diff reversed = diff_profiles(now, without, {});
	CHECK(render_diff_text(reversed, {}).find("new has no durations") != std::string::npos);
	Profile without_now = now;
	drop_distributions(without_now);
	CHECK(render_diff_text(diff_profiles(without, without_now, {}), {}).find("neither profile has durations") !=
	      std::string::npos);
}
