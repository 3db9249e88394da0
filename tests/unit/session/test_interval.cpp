#include <optional>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <ctime>
#include <unistd.h>

#include "session/interval.h"

using namespace usdtprof;

namespace {

PathRecord rec(uint64_t path, uint64_t parent, uint32_t tgid, uint64_t calls, uint64_t self_ns)
{
	PathRecord r;
	r.path = path;
	r.stats.parent = parent;
	r.stats.func = path * 16;
	r.stats.tgid = tgid;
	r.stats.calls = calls;
	r.stats.self_ns = self_ns;
	r.stats.total_ns = self_ns;
	return r;
}

std::optional<PathRecord> find(const IntervalDelta &d, uint64_t path)
{
	for (const PathRecord &r : d.paths.records())
		if (r.path == path)
			return r;
	return std::nullopt;
}

} // namespace

TEST_CASE("interval deltas: gains only, ancestors kept for the tree, sums equal the totals", "[interval]")
{
	PathDeltas deltas;
	auto alive = [](uint32_t) { return true; };
	// main(1) -> a(2), main -> b(3)
	IntervalDelta d1 = deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 5, 50), rec(3, 1, 7, 2, 20)}, alive);
	REQUIRE(d1.paths.size() == 3);
	IntervalDelta d2 = deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 9, 90), rec(3, 1, 7, 2, 20)}, alive);
	// Only a gained; main is there for the tree, with nothing gained.
	REQUIRE(d2.paths.size() == 2);
	REQUIRE(find(d2, 2)->stats.calls == 4);
	REQUIRE(find(d2, 2)->stats.self_ns == 40);
	REQUIRE(find(d2, 1)->stats.calls == 0);
	REQUIRE(find(d2, 3) == std::nullopt);
	IntervalDelta d3 = deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 9, 90), rec(3, 1, 7, 2, 20)}, alive);
	REQUIRE(d3.paths.empty());
	REQUIRE(d3.forget.empty());
}

TEST_CASE("interval deltas: every ancestor of a gain is kept, however few gained nothing, and no idle path else",
	  "[interval]")
{
	PathDeltas deltas;
	auto alive = [](uint32_t) { return true; };
	// A first read: most paths gained, a few (counts 0: a path inserted,
	// its calls not yet flushed) did not. 1 idle root; 2 -> 3 gained under
	// it; 7 idle under 2; 6 gained under 5 under 4 under 1, 4 and 5 idle;
	// 8 gained, its parent 99 not read; 10 idle -> 11 gained -> 12 idle ->
	// 13 gained; 20 idle, nobody's ancestor.
	IntervalDelta d = deltas.next({rec(2, 1, 7, 1, 10), rec(3, 2, 7, 1, 10), rec(6, 5, 7, 1, 10), rec(7, 2, 7, 0, 0),
				       rec(1, 0, 7, 0, 0), rec(4, 1, 7, 0, 0), rec(5, 4, 7, 0, 0), rec(8, 99, 7, 2, 20),
				       rec(13, 12, 7, 1, 10), rec(12, 11, 7, 0, 0), rec(11, 10, 7, 3, 30),
				       rec(10, 0, 7, 0, 0), rec(20, 0, 7, 0, 0)},
				      alive);
	std::vector<uint64_t> kept;
	for (const PathRecord &r : d.paths.records())
		kept.push_back(r.path);
	// In the order read.
	REQUIRE(kept == std::vector<uint64_t>{2, 3, 6, 1, 4, 5, 8, 13, 12, 11, 10});
	for (uint64_t idle : {1, 4, 5, 12, 10})
		REQUIRE(find(d, idle)->stats.calls == 0);
	REQUIRE(find(d, 11)->stats.calls == 3);
	REQUIRE(deltas.tracked() == 13);
}

TEST_CASE("interval deltas: a slot read halfway through a program's adds gains its parts in the next interval, "
	  "none lost or counted twice", "[interval]")
{
	PathDeltas deltas;
	auto alive = [](uint32_t) { return true; };
	auto read = [](uint64_t self, uint64_t total, uint64_t probe, uint64_t offcpu) {
		PathRecord r = rec(1, 0, 7, 1, self);
		r.stats.total_ns = total;
		r.stats.probe_ns = probe;
		r.stats.self_offcpu_ns = offcpu;
		return r;
	};
	uint64_t self = 0, total = 0, probe = 0, offcpu = 0;
	auto gain = [&](const PathRecord &r) {
		IntervalDelta d = deltas.next({r}, alive);
		if (d.paths.empty())
			return;
		const PathStats &g = d.paths.records().front().stats;
		// Each interval's node as its profile's readers require.
		REQUIRE(g.self_ns <= g.total_ns);
		REQUIRE(g.probe_ns <= g.self_ns);
		REQUIRE(g.self_offcpu_ns <= g.self_ns);
		self += g.self_ns, total += g.total_ns, probe += g.probe_ns, offcpu += g.self_offcpu_ns;
	};
	gain(read(100, 100, 10, 5));
	// A flush of 50 ns self (20 of them probe time, 10 off-CPU) read with its
	// self time added, its probe and off-CPU parts not yet.
	gain(read(150, 150, 10, 5));
	REQUIRE(probe == 10);
	// The rest of it, with no more self time: held back.
	gain(read(150, 150, 30, 15));
	REQUIRE(probe == 10);
	REQUIRE(offcpu == 5);
	// Another flush's self time, ahead of its total.
	gain(read(200, 150, 30, 15));
	REQUIRE(self == 150);
	gain(read(200, 200, 30, 15));
	REQUIRE(self == 200);
	// In the end, every nanosecond once.
	REQUIRE(total == 200);
	REQUIRE(probe == 30);
	REQUIRE(offcpu == 15);
}

TEST_CASE("interval deltas: a path's histogram gains bucket by bucket, its extremes bounded by them", "[interval]")
{
	PathDeltas deltas;
	auto alive = [](uint32_t) { return true; };
	// Calls of 3 us and 5 us, then one more of 5 us and two of 300 us: the
	// interval's calls are those three.
	uint32_t b3 = dist_bucket_of(3000), b5 = dist_bucket_of(5000), b300 = dist_bucket_of(300000);
	REQUIRE(b3 < b5);
	PathRecord before = rec(1, 0, 7, 2, 8000);
	before.stats.buckets = {{b3, 1}, {b5, 1}};
	before.stats.min_ns = 3000;
	before.stats.max_ns = 5000;
	PathRecord after = rec(1, 0, 7, 5, 613000);
	after.stats.buckets = {{b3, 1}, {b5, 2}, {b300, 2}};
	after.stats.min_ns = 3000;
	after.stats.max_ns = 300000;
	deltas.next({before}, alive);
	IntervalDelta d = deltas.next({after}, alive);
	PathStats s = find(d, 1)->stats;
	REQUIRE(s.calls == 3);
	REQUIRE(s.buckets == std::vector<BucketCount>{{b5, 1}, {b300, 2}});
	// The minimum was set before: the interval's is at least its lowest
	// bucket's low end. The maximum was set in the interval: exact.
	REQUIRE(s.min_ns == dist_bucket_low(b5));
	REQUIRE(s.max_ns == 300000);
	// Nothing more: no histogram, no extremes.
	after.stats.calls = 5;
	IntervalDelta none = deltas.next({after, rec(2, 1, 7, 1, 10)}, alive);
	REQUIRE(find(none, 1)->stats.buckets.empty());
	REQUIRE(find(none, 1)->stats.max_ns == 0);
}

TEST_CASE("interval deltas: a process that is gone is reported once more, then forgotten", "[interval]")
{
	PathDeltas deltas;
	bool alive7 = true;
	auto alive = [&](uint32_t tgid) { return tgid != 7 || alive7; };
	deltas.next({rec(1, 0, 7, 1, 10), rec(5, 0, 8, 1, 10)}, alive);
	alive7 = false;
	IntervalDelta d = deltas.next({rec(1, 0, 7, 3, 30), rec(5, 0, 8, 1, 10)}, alive);
	REQUIRE(find(d, 1)->stats.calls == 2);
	REQUIRE(d.forget == std::vector<uint64_t>{1});
	REQUIRE(d.gone == std::vector<uint32_t>{7});
	REQUIRE(deltas.tracked() == 1);
	// Deleted from the map: nothing more is reported for it.
	IntervalDelta after = deltas.next({rec(5, 0, 8, 2, 20)}, alive);
	REQUIRE(after.paths.size() == 1);
	REQUIRE(find(after, 5)->stats.calls == 1);
}

TEST_CASE("packed totals: each path's counts back as appended, found in order or out of it", "[interval]")
{
	PackedTotals packed;
	packed.reserve(3);
	PathStats big, small, none;
	big.calls = UINT64_MAX;
	big.open = 1ull << 63;
	big.self_ns = 127;
	big.total_ns = 128;
	big.self_offcpu_ns = 16383;
	big.min_ns = 16384;
	big.max_ns = (1ull << 40) + 3;
	for (uint32_t b = 0; b < kDistBuckets; b++)
		big.buckets.emplace_back(b, uint64_t(b) << (b % 64));
	small.calls = small.total_ns = small.self_ns = 1;
	small.buckets = {{3, 1}};
	packed.append(10, big);
	packed.append(20, small);
	packed.append(30, none);
	REQUIRE(packed.size() == 3);
	auto same = [](const PathStats &a, const PathStats &b) {
		return a.calls == b.calls && a.open == b.open && a.self_ns == b.self_ns && a.total_ns == b.total_ns &&
		       a.self_offcpu_ns == b.self_offcpu_ns && a.min_ns == b.min_ns && a.max_ns == b.max_ns &&
		       a.buckets == std::vector<BucketCount>(b.buckets.begin(), b.buckets.end());
	};
	PathStats out;
	PackedTotals::Finder in_order(packed);
	REQUIRE(in_order.find(10, out));
	REQUIRE(same(out, big));
	REQUIRE(in_order.find(20, out));
	REQUIRE(same(out, small));
	REQUIRE(in_order.find(30, out));
	REQUIRE(same(out, none));
	PackedTotals::Finder out_of_order(packed);
	REQUIRE(out_of_order.find(30, out));
	REQUIRE(same(out, none));
	REQUIRE_FALSE(out_of_order.find(40, out));
	REQUIRE(out_of_order.find(10, out));
	REQUIRE(same(out, big));
	REQUIRE(out_of_order.find(20, out)); // next in order again
	REQUIRE(same(out, small));
	PackedTotals empty;
	PackedTotals::Finder nothing(empty);
	REQUIRE_FALSE(nothing.find(10, out));
}

TEST_CASE("interval deltas: paths read in another order, deleted or new, gain what they gained", "[interval]")
{
	PathDeltas deltas;
	auto alive = [](uint32_t) { return true; };
	deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 5, 50), rec(3, 1, 7, 2, 20), rec(4, 1, 7, 1, 10)}, alive);
	// 2 deleted meanwhile (not read), 5 new, the rest in another order.
	IntervalDelta d = deltas.next({rec(4, 1, 7, 3, 30), rec(5, 1, 7, 1, 10), rec(1, 0, 7, 2, 20), rec(3, 1, 7, 2, 20)},
				      alive);
	REQUIRE(d.paths.size() == 3);
	REQUIRE(find(d, 4)->stats.calls == 2);
	REQUIRE(find(d, 5)->stats.calls == 1);
	REQUIRE(find(d, 1)->stats.calls == 1);
	REQUIRE(find(d, 3) == std::nullopt);
	REQUIRE(deltas.tracked() == 4);
	IntervalDelta again = deltas.next({rec(2, 1, 7, 1, 10), rec(4, 1, 7, 3, 30)}, alive);
	REQUIRE(find(again, 2)->stats.calls == 1); // back after its deletion: new
	REQUIRE(find(again, 4) == std::nullopt);
}

TEST_CASE("budget: attached all the time while cheap, a proportional share when not", "[interval]")
{
	// 1,000 hits of 500 ns against 1 s of target CPU: 0.05% overhead.
	BudgetEstimate cheap = estimate_budget({1000, 500, 1'000'000'000, 1.0}, 0.01, 0.01);
	REQUIRE(cheap.next_duty == 1.0);
	REQUIRE(cheap.overhead == Approx(500e3 / (1e9 - 500e3)));
	// 1M hits of 500 ns: 0.5 s of a 1 s CPU time is the probes': 100% over the target's own 0.5 s.
	BudgetEstimate hot = estimate_budget({1'000'000, 500, 1'000'000'000, 1.0}, 0.01, 0.01);
	REQUIRE(hot.overhead == Approx(1.0));
	REQUIRE(hot.next_duty == Approx(0.01));
	// Measured while attached a quarter of the time: the full-time overhead is 4x.
	BudgetEstimate sampled = estimate_budget({10'000, 500, 1'000'000'000, 0.25}, 0.01, 0.001);
	REQUIRE(sampled.next_duty == Approx(0.01 / (4 * 5e6 / (1e9 - 5e6))));
	// Never below the minimum share.
	REQUIRE(estimate_budget({1'000'000, 500, 1'000'000'000, 0.01}, 0.01, 0.05).next_duty == 0.05);
	// The probe programs' run time counts against the budget; fixed costs
	// (the switch hook, usdtprof's own CPU) are in the overhead only.
	BudgetEstimate programs = estimate_budget({1000, 500, 1'000'000'000, 1.0, 20'000'000}, 0.01, 0.01);
	REQUIRE(programs.overhead == Approx(20.5e6 / (1e9 - 20.5e6)));
	REQUIRE(programs.next_duty < 1.0);
	BudgetEstimate fixed = estimate_budget({1000, 500, 1'000'000'000, 1.0, 0, 2'000'000}, 0.01, 0.01);
	REQUIRE(fixed.overhead == Approx(2.5e6 / (1e9 - 500e3)));
	REQUIRE(fixed.next_duty == 1.0);
	// Its parts, summed by /metrics' cost counters.
	REQUIRE(fixed.target_cpu_ns == 1'000'000'000);
	REQUIRE(fixed.probe_ns == 500'000);
	REQUIRE(fixed.fixed_ns == 2'000'000);
	// Fixed costs take their share first: 0.3% of them leaves 0.7% to probes costing 0.8%.
	BudgetEstimate shared = estimate_budget({16'000, 500, 1'000'000'000, 1.0, 0, 3'000'000}, 0.01, 0.01);
	REQUIRE(shared.next_duty == Approx((0.01 - 3e6 / (1e9 - 8e6)) / (8e6 / (1e9 - 8e6))));
	// ... but never more than half: the probes keep half of the budget.
	BudgetEstimate half = estimate_budget({16'000, 500, 1'000'000'000, 1.0, 0, 6'000'000}, 0.01, 0.01);
	REQUIRE(half.next_duty == Approx(0.005 / (8e6 / (1e9 - 8e6))));
	// A target that barely ran (1 ms of CPU, 20 hits) beside 5 ms of usdtprof's
	// own: the fixed costs alone exceed even a budget of 1, which sampling cannot
	// mend; the probes' 10 us stay attached all the time.
	REQUIRE(estimate_budget({20, 500, 1'000'000, 1.0, 0, 5'000'000}, 1.0, 0.01).next_duty == 1.0);
	// Hits and no CPU time read (the target exited between the reads): nothing
	// is learnt, the window keeps its share.
	REQUIRE(estimate_budget({5, 5'000, 0, 1.0, 17'685, 2'500'000}, 1.0, 0.01).next_duty == 1.0);
	REQUIRE(estimate_budget({5, 5'000, 0, 0.25, 17'685, 2'500'000}, 0.01, 0.01).next_duty == 0.25);
	// A hot target's CPU time is nearly all probes: sampled hard, not left alone.
	REQUIRE(estimate_budget({100'000, 5'000, 480'000'000, 1.0, 10'000'000}, 0.01, 0.01).next_duty == 0.01);
	// A target that barely ran, over budget by its 2 hits, is not cut when
	// detaching and attaching its probes costs more than they do.
	REQUIRE(estimate_budget({2, 668, 34'000, 1.0}, 0.01, 0.01).next_duty < 1.0);
	REQUIRE(estimate_budget({2, 668, 34'000, 1.0, 0, 0, 200'000}, 0.01, 0.01).next_duty == 1.0);
	REQUIRE(estimate_budget({100'000, 5'000, 480'000'000, 1.0, 10'000'000, 0, 200'000}, 0.01, 0.01).next_duty ==
		0.01);
	// A sampled window that saw no hit widens step by step.
	REQUIRE(estimate_budget({0, 500, 1'000'000, 0.05}, 0.01, 0.01).next_duty == Approx(0.1));
	// So does one whose few hits say the probes are cheap now (a quiet
	// moment): 10 hits of 500 ns in 1 s of CPU while attached 5%, 0.1% full time.
	REQUIRE(estimate_budget({10, 500, 1'000'000'000, 0.05}, 0.01, 0.01).next_duty == Approx(0.1));
	// Attached all along, cheap: all the time (nothing sampled to grow from).
	REQUIRE(estimate_budget({10, 500, 1'000'000'000, 1.0}, 0.01, 0.01).next_duty == 1.0);
}

TEST_CASE("fair budget: a hot process is sampled alone, quiet ones keep every probe", "[interval]")
{
	// A quiet process: 10 hits of 5 us in 100 ms of CPU, 0.05% of it; a hot
	// one with 1,000x the hits in 60 ms of CPU, mostly its probes'. With 1%
	// for the probes the quiet one keeps all of them; the hot one gets its
	// own 1% of its 10 ms and what the quiet one leaves (1 ms - 50 us).
	auto d = fair_duties({{1, 10'000, 1.0, 60'000'000}, {2, 10, 1.0, 100'000'000}}, 5'000, 0.01, 0.001);
	REQUIRE(d.at(2) == 1.0);
	REQUIRE(d.at(1) == Approx((0.01 * 10e6 + 0.01 * (100e6 - 50e3) - 50e3) / 50e6));
	// Within their own shares: both attached all the time.
	d = fair_duties({{1, 100, 1.0, 100'000'000}, {2, 150, 1.0, 100'000'000}}, 5'000, 0.01, 0.01);
	REQUIRE(d.at(1) == 1.0);
	REQUIRE(d.at(2) == 1.0);
	// Two over their shares and one under: the pool the quiet one leaves goes
	// to the least needy first, at most an equal part each.
	d = fair_duties({{1, 8'000, 1.0, 108'000'000}, {2, 4'000, 1.0, 104'000'000}, {3, 100, 1.0, 500'100'000}},
			1'000, 0.01, 0.001);
	REQUIRE(d.at(3) == 1.0);
	double pool = 0.01 * 500e6 - 100e3; // 4.9 ms
	REQUIRE(d.at(2) * 4e6 == Approx(1e6 + pool / 2));
	REQUIRE(d.at(1) * 8e6 == Approx(1e6 + pool / 2));
	// Measured while attached a quarter of the time: its full cost is 4x,
	// and its window grows at most twofold.
	d = fair_duties({{1, 1'000, 0.25, 1'000'000'000}}, 1'000, 0.01, 0.01);
	REQUIRE(d.at(1) == 0.5);
	// A sampled window that saw no hit doubles; never below the minimum.
	d = fair_duties({{1, 0, 0.05, 1'000'000, 0.05}, {2, 1'000'000, 1.0, 1'000'000'000}}, 1'000, 0.01, 0.02);
	REQUIRE(d.at(1) == Approx(0.1));
	REQUIRE(d.at(2) == 0.02);
	// Hits and no CPU time read (it exited between the reads): it keeps its duty.
	d = fair_duties({{1, 10, 0.3, 0, 0.3}}, 1'000, 0.01, 0.01);
	REQUIRE(d.at(1) == 0.3);
	REQUIRE(fair_duties({}, 1'000, 0.01, 0.01).empty());
	// CI's case: a process that barely ran (2 hits of 668 ns against 34 us of
	// its CPU) beside a hot one is over its own share, but cutting 1.3 us of
	// probes would cost more (its window's detach and attach, 200 us) than it
	// saves: kept; the hot one pays what it takes over its share.
	d = fair_duties({{1, 95'524, 1.0, 100'000'000, 1.0, 200'000}, {2, 2, 1.0, 34'000, 1.0, 200'000}}, 668, 0.025,
			0.01);
	REQUIRE(d.at(2) == 1.0);
	double hot_probes = 95'524 * 668.0, quiet_over = 2 * 668.0 - 0.025 * (34'000 - 2 * 668.0);
	REQUIRE(d.at(1) * hot_probes == Approx(0.025 * (100e6 - hot_probes) - quiet_over));
	// Without the window's cost known, it is sampled as before.
	d = fair_duties({{1, 95'524, 1.0, 100'000'000}, {2, 2, 1.0, 34'000}}, 668, 0.025, 0.01);
	REQUIRE(d.at(2) < 1.0);
}

TEST_CASE("retention: oldest intervals go first, by count, bytes and age", "[interval]")
{
	namespace fs = std::filesystem;
	fs::path dir = fs::temp_directory_path() / ("usdtprof-retention-" + std::to_string(getpid()));
	fs::remove_all(dir);
	fs::create_directories(dir);
	auto write = [&](const std::string &name, size_t bytes) { std::ofstream(dir / name) << std::string(bytes, 'x'); };
	auto name = [](int day, const char *suffix) {
		return "usdtprof-2026010" + std::to_string(day) + "T120000000Z" + suffix;
	};
	for (int i = 1; i <= 5; i++) {
		write(name(i, ".data"), 100);
		write(name(i, ".pb.gz"), 50);
	}
	write("other.txt", 1000);
	auto count = [&] { return std::distance(fs::directory_iterator(dir), fs::directory_iterator()); };
	REQUIRE(apply_retention(dir, "usdtprof-", {".data", ".pb.gz"}, 3, 0, 0).size() == 4);
	REQUIRE(count() == 7);
	REQUIRE(!fs::exists(dir / name(1, ".data")));
	REQUIRE(fs::exists(dir / name(3, ".pb.gz")));
	// 3 intervals of 150 bytes; at most 300 bytes keeps the newest two.
	REQUIRE(apply_retention(dir, "usdtprof-", {".data", ".pb.gz"}, 0, 300, 0).size() == 2);
	REQUIRE(fs::exists(dir / name(4, ".data")));
	REQUIRE(!fs::exists(dir / name(3, ".data")));
	// Age by the stamp: 2026-01-04 is long past, a minute ago is not.
	time_t recent = time(nullptr) - 60;
	tm t;
	gmtime_r(&recent, &t);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S000Z", &t);
	write(std::string("usdtprof-") + stamp + ".data", 10);
	REQUIRE(apply_retention(dir, "usdtprof-", {".data", ".pb.gz"}, 0, 0, 3600).size() == 4);
	REQUIRE(count() == 2); // other files are never touched
	REQUIRE(fs::exists(dir / (std::string("usdtprof-") + stamp + ".data")));
	fs::remove_all(dir);
}

TEST_CASE("retention: files planted by others, or stamped in the future, are neither counted nor removed", "[interval]")
{
	namespace fs = std::filesystem;
	fs::path dir = fs::temp_directory_path() / ("usdtprof-planted-" + std::to_string(getpid()));
	fs::remove_all(dir);
	fs::create_directories(dir);
	auto write = [&](const std::string &name) { std::ofstream(dir / name) << std::string(100, 'x'); };
	for (int i = 1; i <= 3; i++)
		write("usdtprof-2026010" + std::to_string(i) + "T120000000Z.data");
	// Stamped ahead: they would sort after every real interval.
	for (int i = 1; i <= 5; i++)
		write("usdtprof-2099010" + std::to_string(i) + "T120000000Z.data");
	// Another user's files, a second link, a symlink, other names.
	write("usdtprof-20260104T120000000Z.data");
	REQUIRE(chown((dir / "usdtprof-20260104T120000000Z.data").c_str(), 65534, 65534) == 0);
	fs::create_hard_link(dir / "usdtprof-20260101T120000000Z.data", dir / "usdtprof-20260105T120000000Z.pb.gz");
	fs::create_symlink("/etc/passwd", dir / "usdtprof-20260106T120000000Z.data");
	write("usdtprof-20260107T120000000Z.txt");
	write("usdtprof-2026010.data");
	size_t before = size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
	// Two real intervals (the third has a second link): nothing to remove with --keep 2.
	CHECK(apply_retention(dir, "usdtprof-", {".data", ".pb.gz"}, 2, 0, 0).empty());
	CHECK(size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator())) == before);
	// --keep 1: only the oldest real one goes.
	auto removed = apply_retention(dir, "usdtprof-", {".data", ".pb.gz"}, 1, 0, 0);
	REQUIRE(removed.size() == 1);
	CHECK(removed[0] == (dir / "usdtprof-20260102T120000000Z.data").string());
	CHECK(fs::exists(dir / "usdtprof-20260103T120000000Z.data"));
	CHECK(fs::exists("/etc/passwd"));
	fs::remove_all(dir);
}

TEST_CASE("interval stamps parse as the monitor writes them", "[interval]")
{
	CHECK(parse_interval_stamp("19700101T000001250Z") == std::optional<int64_t>(1250));
	CHECK(parse_interval_stamp("20261201T150000000Z") == std::optional<int64_t>(int64_t(1796137200) * 1000));
	for (const char *bad : {"", "2026", "20261201T150000000", "20261201X150000000Z", "2026120aT150000000Z",
				"20261301T150000000Z", "20261201T250000000Z"})
		CHECK(!parse_interval_stamp(bad));
}

TEST_CASE("trim_profile keeps the heaviest call paths with their ancestors under the cap", "[interval]")
{
	Profile p;
	p.functions.push_back("main");
	PathNode root;
	root.function = 0;
	root.pid = 1;
	root.calls = 1;
	root.total_ns = 1000000;
	p.nodes.push_back(root);
	// 2000 distinct long names under main, heavier as i grows.
	for (uint32_t i = 0; i < 2000; i++) {
		p.functions.push_back("f" + std::to_string(i) + std::string(1000, 'n'));
		PathNode n;
		n.parent = 0;
		n.function = i + 1;
		n.pid = 1;
		n.calls = 1;
		n.self_ns = n.total_ns = 10 + i;
		p.nodes.push_back(n);
	}
	size_t full = serialize_profile(p).size();
	REQUIRE(full > 2000000);
	CHECK(!trim_profile(p, 0));
	CHECK(!trim_profile(p, full));
	auto trim = trim_profile(p, 200000);
	REQUIRE(trim);
	CHECK(trim->bytes_before == full);
	CHECK(trim->paths_before == 2001);
	CHECK(trim->paths_kept == p.nodes.size());
	CHECK(serialize_profile(p).size() <= 200000);
	CHECK(p.nodes.size() > 150);
	CHECK(p.functions.size() == p.nodes.size());
	// The root and the heaviest children stay, each child under the root.
	CHECK(p.functions[p.nodes[0].function] == "main");
	uint64_t lightest = UINT64_MAX;
	for (size_t i = 1; i < p.nodes.size(); i++) {
		CHECK(p.nodes[i].parent == 0);
		lightest = std::min(lightest, p.nodes[i].total_ns);
	}
	CHECK(lightest == 10 + 2000 - (p.nodes.size() - 1));
	CHECK(parse_profile(serialize_profile(p)).ok());
}
