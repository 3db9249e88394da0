#include <catch2/catch.hpp>

#include "profile/compensation.h"
#include "profile/profile.h"
#include "../render_as.h"
#include "report/report.h"

using namespace usdtprof;

namespace {

// root -> mid (2 calls) -> leaf (20 calls), one kind: own 100, caller 40.
Profile calibrated_profile()
{
	Profile p;
	p.duration_ns = 1000000;
	p.functions = {"root", "mid", "leaf"};
	p.nodes = {
		{kNoParent, 0, 1, 1, 0, 10000, 100000},
		{0, 1, 1, 2, 0, 8000, 60000, 1000},
		{1, 2, 1, 20, 0, 50000, 50000},
	};
	Calibration c;
	c.kinds = {{"native", 100, 40, 5, 2, 24, 0}};
	c.function_kinds = {0, 0, 0};
	p.calibration = c;
	return p;
}

// p (calibrated_profile's shape) with mid made a [task] frame: a synthetic
// frame (kind -1) whose children ran on the thread that took the task.
Profile with_task_frame(Profile p)
{
	p.functions[1] = "[task]";
	p.calibration->function_kinds = {0, -1, 0};
	return p;
}

} // namespace

TEST_CASE("compensation takes own and children's caller costs out of self times", "[compensation]")
{
	CompensationSummary s;
	Profile c = compensate(calibrated_profile(), &s);
	REQUIRE(s.applied);
	// root: 1 own call + 2 mid calls as caller.
	CHECK(c.nodes[0].self_ns == 10000 - 100 - 2 * 40);
	// mid: 2 own calls + 20 leaf calls as caller; off-CPU time untouched.
	CHECK(c.nodes[1].self_ns == 8000 - 2 * 100 - 20 * 40);
	CHECK(c.nodes[1].self_offcpu_ns == 1000);
	// leaf: 20 own calls.
	CHECK(c.nodes[2].self_ns == 50000 - 20 * 100);
	// Totals lose what their subtree lost.
	CHECK(c.nodes[2].total_ns == c.nodes[2].self_ns);
	CHECK(c.nodes[1].total_ns == 60000 - (2 * 100 + 20 * 40) - 20 * 100);
	CHECK(c.nodes[0].total_ns == c.nodes[0].self_ns + c.nodes[1].total_ns + (100000 - 10000 - 60000));
	CHECK(s.removed_ns == (100 + 80) + (200 + 800) + 2000);
	CHECK(s.clamped == 0);
	// The spread over the same calls.
	CHECK(c.nodes[1].uncertain_ns == 2 * 5 + 20 * 2);
}

TEST_CASE("compensation never makes a time negative and counts what it clamps", "[compensation]")
{
	Profile p = calibrated_profile();
	p.nodes[2].self_ns = 1000; // below 20 x 100
	p.nodes[2].total_ns = 1000;
	p.nodes[1].self_ns = 1500; // on-CPU part 500, below 2 x 100 + 20 x 40
	CompensationSummary s;
	Profile c = compensate(p, &s);
	CHECK(c.nodes[2].self_ns == 0);
	CHECK(c.nodes[1].self_ns == 1000); // only the on-CPU part is taken
	CHECK(s.clamped == 2);
	CHECK(c.nodes[1].total_ns >= c.nodes[1].self_ns);
}

TEST_CASE("compensation leaves synthetic frames and profiles without calibration alone", "[compensation]")
{
	Profile p = calibrated_profile();
	p.calibration->function_kinds = {-1, 0, 0}; // root: [running at attach]-like
	Profile c = compensate(p);
	CHECK(c.nodes[0].self_ns == 10000);
	p.calibration.reset();
	CompensationSummary s;
	c = compensate(p, &s);
	CHECK_FALSE(s.applied);
	CHECK(c.nodes[1].self_ns == 8000);
}

TEST_CASE("a [task] frame gets its children's caller cost but charges none to its creator", "[compensation]")
{
	Profile c = compensate(with_task_frame(calibrated_profile()));
	CHECK(c.nodes[0].self_ns == 10000 - 100);
	CHECK(c.nodes[1].self_ns == 8000 - 20 * 40);
}

TEST_CASE("profiles keep their calibration and read without one", "[compensation][profile]")
{
	Profile p = calibrated_profile();
	p.calibration->cost_ns = 12345678;
	p.calibration->kinds.push_back({"content", 300.5, 250.25, 1, 2, 20, -1});
	p.calibration->function_kinds = {0, 1, -1};
	auto back = parse_profile(serialize_profile(p));
	REQUIRE(back);
	REQUIRE(back->calibration);
	CHECK(back->calibration->kinds.size() == 2);
	CHECK(back->calibration->kinds[1].own_ns == 300.5);
	CHECK(back->calibration->kinds[1].uncompensated_ns == -1);
	CHECK(back->calibration->function_kinds == std::vector<int32_t>{0, 1, -1});
	CHECK(back->calibration->cost_ns == 12345678);
	p.calibration.reset();
	back = parse_profile(serialize_profile(p));
	REQUIRE(back);
	CHECK_FALSE(back->calibration);
	// A kind index out of range is corrupt.
	p = calibrated_profile();
	p.calibration->function_kinds = {0, 3, 0};
	CHECK_FALSE(parse_profile(serialize_profile(p)));
}

TEST_CASE("reports show compensated times, --raw the measured ones, JSON both", "[compensation][report]")
{
	Profile p = calibrated_profile();
	ReportOptions o;
	std::string json = render_as("json", p, o);
	CHECK(json.find("\"raw_self_ns\": 50000") != std::string::npos);
	CHECK(json.find("\"self_ns\": 48000") != std::string::npos);
	std::string text = render_as("text", p, o);
	CHECK(text.find("probe overhead taken out") != std::string::npos);
	CHECK(text.find("48.0 us") != std::string::npos);
	o.raw = true;
	text = render_as("text", p, o);
	CHECK(text.find("50.0 us") != std::string::npos);
	CHECK(text.find("--raw") != std::string::npos);
}

TEST_CASE("a compensated self time within the calibration's spread is marked", "[compensation][report]")
{
	Profile p = calibrated_profile();
	p.nodes[0].self_ns = 100 + 80 + 8; // 8 ns left, spread 5 + 2 x 2
	std::string text = render_as("text", p, ReportOptions{});
	CHECK(text.find("~8 ns") != std::string::npos);
	CHECK(text.find("~: within the calibration's spread") != std::string::npos);
}

namespace {

Distribution durations(std::initializer_list<uint64_t> ns)
{
	Distribution d;
	for (uint64_t v : ns) {
		Distribution one{.min_ns = v, .max_ns = v, .buckets = {{dist_bucket_of(v), 1}}};
		add_distribution(d, one);
	}
	return d;
}

// calibrated_profile() with totals of self + children's totals, as the
// kernel measures them, and durations that add up to them.
Profile with_durations()
{
	Profile p = calibrated_profile();
	p.distributions = true;
	p.dists.resize(p.nodes.size());
	p.nodes[1].total_ns = 8000 + 50000;
	p.nodes[0].total_ns = 10000 + 58000;
	p.dists[0] = durations({68000});
	p.dists[1] = durations({25000, 33000});
	Distribution leaf;
	for (int i = 0; i < 20; i++)
		add_distribution(leaf, durations({2500}));
	p.dists[2] = leaf;
	return p;
}

} // namespace

TEST_CASE("compensation shortens each path's durations: its own cost from every call, its descendants' in "
	  "proportion to each call's rest", "[compensation][distribution]")
{
	Profile p = with_durations();
	Profile c = compensate(p);
	// One call: its duration is its compensated total, exactly.
	CHECK(c.dists[0].min_ns == c.nodes[0].total_ns);
	CHECK(c.dists[0].max_ns == c.nodes[0].total_ns);
	CHECK(dist_quantile(c.dists[0], 0.5) == c.nodes[0].total_ns);
	// Two calls: each loses its own 100 ns, then keeps the share of the rest
	// its path kept, 55000 of 58000 - 2 x 100 (its children's 20 x 40 + 20 x
	// 100 taken out by the length of each call, not 1400 from each).
	CHECK(c.nodes[1].total_ns == 55000);
	CHECK(c.dists[1].min_ns == 23694); // (25000 - 100) x 55000 / 57800, rounded
	CHECK(c.dists[1].max_ns == 31306); // (33000 - 100) x 55000 / 57800
	CHECK(c.dists[1].min_ns + c.dists[1].max_ns == c.nodes[1].total_ns);
	CHECK(c.dists[2].min_ns == 2400);
	CHECK(bucket_count(c.dists[2].buckets) == 20);
	// A leaf's calls lose their own cost exactly (2500 - 100 above); below it they are 0, not negative.
	p.dists[2] = durations({50, 60});
	c = compensate(p);
	CHECK(c.dists[2].min_ns == 0);
	CHECK(c.dists[2].max_ns == 0);
	// Without calibration, or --raw (no compensation), they are as measured.
	p.calibration.reset();
	CHECK(compensate(p).dists[0].min_ns == 68000);
}

TEST_CASE("an average or a single call's duration within one call's spread is marked, longer ones are not",
	  "[compensation][distribution][report]")
{
	// leaf: 20 calls of 2500 ns measured, spread 5 ns a call (calibrated_profile).
	Profile p = with_durations();
	ReportOptions o;
	std::string text = render_as("text", p, o);
	CHECK(text.find("~") == std::string::npos); // 2400 ns a call: far outside 5 ns
	CHECK(text.find("~: within") == std::string::npos);
	// Two of them 104 ns (4 ns left after the own 100), the rest as before;
	// their self time (20 x 2400 - 4792) is far outside its 100 ns spread.
	Distribution leaf = durations({104, 104});
	for (int i = 0; i < 18; i++)
		add_distribution(leaf, durations({2500}));
	p.dists[2] = leaf;
	text = render_as("text", p, o);
	size_t row = text.find("  leaf\n");
	REQUIRE(row != std::string::npos);
	std::string leaf_row = text.substr(text.rfind('\n', row) + 1, row - text.rfind('\n', row) - 1);
	CAPTURE(text);
	CHECK(leaf_row.find("~4 ns") != std::string::npos); // the shortest call
	CHECK(leaf_row.find("2.40 us") != std::string::npos); // the longest: unmarked
	CHECK(leaf_row.find("~2.40") == std::string::npos);
	CHECK(text.find("~: within the calibration's spread") != std::string::npos);
	// --raw: nothing compensated, nothing marked.
	o.raw = true;
	CHECK(render_as("text", p, o).find("~") == std::string::npos);
}

TEST_CASE("a [task] frame's subtree is not taken out of its creator's durations", "[compensation][distribution]")
{
	Profile c = compensate(with_task_frame(with_durations()));
	// root's own call only: the task's work ran on another thread, outside root's duration.
	CHECK(c.dists[0].min_ns == 68000 - 100);
	// The [task] frame's durations lose its children's costs (they ran inside
	// it; it has no probes of its own): 55200 of 58000 kept by each call.
	CHECK(c.nodes[1].total_ns == 58000 - (20 * 40 + 20 * 100));
	CHECK(c.dists[1].min_ns == 23793); // 25000 x 55200 / 58000, rounded
}

// As Python's gettext.find read: 3 calls, 184 us, 12.6 and 13.3 ms, the long
// ones with hundreds of probed children. Each call losing the path's
// average took the short one to 0 ns.
TEST_CASE("a short call of a path whose other calls had many children keeps its share, not 0 ns",
	  "[compensation][distribution]")
{
	// find: 3 calls, 200 us + 2 x 10 ms; child: 2000 calls of 3 us (1 us of it their probes).
	Profile p;
	p.functions = {"find", "child"};
	p.distributions = true;
	p.nodes = {{kNoParent, 0, 1, 3, 0, 14'200'000, 20'200'000}, {0, 1, 1, 2000, 0, 6'000'000, 6'000'000}};
	p.dists = {durations({200'000, 10'000'000, 10'000'000}), durations({3000})};
	Calibration cal;
	cal.kinds = {{"native", 1000, 1000, 0, 0, 24, 0}};
	cal.function_kinds = {0, 0};
	p.calibration = cal;
	Profile c = compensate(p);
	REQUIRE(c.nodes[0].total_ns == 20'200'000 - 3 * 1000 - 2000 * (1000 + 1000));
	// (200 us - 1 us) x 16.197 / 20.197 ms: 80% of it, not 0.
	CHECK(c.dists[0].min_ns == 159'588);
	CHECK(c.dists[0].max_ns == 8'018'706); // (10 ms - 1 us) x the same share: 3 calls add up to the total
	CHECK(c.dists[1].min_ns == 2000);      // a leaf: its own cost, exactly
}

TEST_CASE("recursion: each level's durations shifted by its own path's compensation", "[compensation][distribution]")
{
	// f -> f -> f, one call each, 1000 ns measured per level of self.
	Profile p;
	p.functions = {"f"};
	p.distributions = true;
	p.nodes = {{kNoParent, 0, 1, 1, 0, 1000, 3000}, {0, 0, 1, 1, 0, 1000, 2000}, {1, 0, 1, 1, 0, 1000, 1000}};
	p.dists.resize(3);
	p.dists[0] = durations({3000});
	p.dists[1] = durations({2000});
	p.dists[2] = durations({1000});
	Calibration cal;
	cal.kinds = {{"native", 100, 40, 0, 0, 24, 0}};
	cal.function_kinds = {0};
	p.calibration = cal;
	Profile c = compensate(p);
	for (size_t i = 0; i < c.nodes.size(); i++) {
		CHECK(c.dists[i].min_ns == c.nodes[i].total_ns);
		CHECK(c.dists[i].max_ns == c.nodes[i].total_ns);
	}
	CHECK(c.nodes[0].total_ns == 3000 - 3 * 100 - 2 * 40);
	// Per function: the levels merged, in order.
	FunctionSummary f = summarize_functions(build_call_tree(c))[0];
	CHECK(f.dist.min_ns == c.nodes[2].total_ns);
	CHECK(f.dist.max_ns == c.nodes[0].total_ns);
	CHECK(f.dist.min_ns <= dist_quantile(f.dist, 0.5));
	CHECK(dist_quantile(f.dist, 0.99) <= f.dist.max_ns);
}

TEST_CASE("reports: durations agree with compensated totals; --raw shows them as measured", "[compensation][report][distribution]")
{
	Profile p = with_durations();
	ReportOptions o;
	Profile c = compensate(p);
	std::string root_total = human_ns(c.nodes[0].total_ns); // 64.8 us
	std::string text = render_as("text", p, o);
	// root's row: total, avg, min, p50, p99, max all the same.
	auto row = text.substr(text.rfind('\n', text.find("  root")) + 1);
	row = row.substr(0, row.find('\n'));
	size_t at = 0, seen = 0;
	while ((at = row.find(root_total, at)) != std::string::npos)
		seen++, at++;
	INFO(text);
	CHECK(seen == 6);
	CHECK(text.find("probe overhead taken out as from the totals") != std::string::npos);
	std::string tree = render_as("text", p, ReportOptions{.view = "tree"});
	CHECK(tree.find(root_total + " " + std::string(10 - root_total.size(), ' ')) != std::string::npos);
	std::string json = render_as("json", p, o);
	CHECK(json.find("\"min_ns\": " + std::to_string(c.nodes[0].total_ns)) != std::string::npos);
	CHECK(json.find("\"min_ns\": 68000") == std::string::npos);
	o.raw = true;
	json = render_as("json", p, o);
	CHECK(json.find("\"min_ns\": 68000") != std::string::npos);
	text = render_as("text", p, o);
	CHECK(text.find("68.0 us") != std::string::npos);
	CHECK(text.find("as measured: probe overhead included") != std::string::npos);
}

TEST_CASE("reports say a semaphore held up without its probe slows the runtime, uncompensated", "[compensation][report]")
{
	Profile p;
	auto none = [](std::string_view) -> const char * { return nullptr; };
	auto costs = [](std::string_view probe) -> const char * {
		return probe == "x:y" ? "x runs slower" : probe == "z:w" ? "z too" : nullptr;
	};
	CHECK(held_semaphores(p).empty());
	CHECK(held_semaphore_line(p, costs).empty());
	p.probes.push_back({"/usr/bin/python3.11", "python", "function__entry", "entry", 2});
	CHECK(held_semaphore_line(p, costs).empty());
	// One per probe, though a process tree holds it in several files and processes.
	p.probes.push_back({"/usr/bin/python3.11", "python", "line", "semaphore", 1});
	p.probes.push_back({"/opt/py/libpython3.11.so", "python", "line", "semaphore", 1});
	CHECK(held_semaphores(p) == std::vector<std::string>{"python:line"});
	CHECK(held_semaphore_line(p, none) == "not compensated: what the semaphores usdtprof held up cost the runtime "
					     "(python:line; not probed, held so that the probes recorded fire)\n");
	p.probes.push_back({"/usr/lib/libx.so", "x", "y", "semaphore", 1});
	p.probes.push_back({"/usr/lib/libz.so", "z", "w", "semaphore", 1});
	CHECK(held_semaphores(p) == std::vector<std::string>{"python:line", "x:y", "z:w"});
	CHECK(held_semaphore_line(p, costs) == "not compensated: what the semaphores usdtprof held up cost the runtime "
					      "(python:line, x:y, z:w; not probed, held so that the probes recorded "
					      "fire): under x:y's, x runs slower; under z:w's, z too\n");
}

TEST_CASE("probe time measured in band is taken out whole, beside the calibrated cost of what it leaves out",
	  "[compensation]")
{
	Profile raw = calibrated_profile();
	raw.nodes[1].probe_ns = 3000; // mid: its own hits' halves and its leaves'
	raw.nodes[2].probe_ns = 20000;
	CompensationSummary s;
	Profile c = compensate(raw, &s);
	REQUIRE(s.applied);
	CHECK(s.measured_ns == 23000);
	CHECK(c.nodes[2].self_ns == 50000 - 20000 - 20 * 100);
	CHECK(c.nodes[1].self_ns == 8000 - 3000 - 2 * 100 - 20 * 40);
	CHECK(c.nodes[1].total_ns == 60000 - (3000 + 200 + 800) - (20000 + 2000));
	CHECK(compensated_self_ns(raw)[1] == c.nodes[1].self_ns);
	// Taken out once: a compensated profile has none left (merges of parts
	// compensated apart are compensated again).
	CHECK_FALSE(has_probe_time(c));
	std::string line = compensation_line(raw, s);
	CHECK(line.find("probe time measured in band taken out: 0.023 ms") != std::string::npos);
	// Without a calibration, the measured time alone.
	raw.calibration.reset();
	CHECK(compensates(raw));
	Profile m = compensate(raw, &s);
	CHECK(m.nodes[2].self_ns == 50000 - 20000);
	CHECK(m.nodes[0].self_ns == 10000);
	CHECK(compensation_line(raw, s).find("--raw shows times as measured") != std::string::npos);
}
