#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "interval.h"

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

const PathRecord *find(const IntervalDelta &d, uint64_t path)
{
	for (const PathRecord &r : d.records)
		if (r.path == path)
			return &r;
	return nullptr;
}

} // namespace

TEST_CASE("interval deltas: gains only, ancestors kept for the tree, sums equal the totals", "[interval]")
{
	PathDeltas deltas;
	auto alive = [](uint32_t) { return true; };
	// main(1) -> a(2), main -> b(3)
	IntervalDelta d1 = deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 5, 50), rec(3, 1, 7, 2, 20)}, alive);
	REQUIRE(d1.records.size() == 3);
	IntervalDelta d2 = deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 9, 90), rec(3, 1, 7, 2, 20)}, alive);
	// Only a gained; main is there for the tree, with nothing gained.
	REQUIRE(d2.records.size() == 2);
	REQUIRE(find(d2, 2)->stats.calls == 4);
	REQUIRE(find(d2, 2)->stats.self_ns == 40);
	REQUIRE(find(d2, 1)->stats.calls == 0);
	REQUIRE(find(d2, 3) == nullptr);
	IntervalDelta d3 = deltas.next({rec(1, 0, 7, 1, 10), rec(2, 1, 7, 9, 90), rec(3, 1, 7, 2, 20)}, alive);
	REQUIRE(d3.records.empty());
	REQUIRE(d3.forget.empty());
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
	REQUIRE(after.records.size() == 1);
	REQUIRE(find(after, 5)->stats.calls == 1);
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
	// Fixed costs take their share first: 0.6% of them leaves 0.4% to probes costing 0.8%.
	BudgetEstimate shared = estimate_budget({16'000, 500, 1'000'000'000, 1.0, 0, 6'000'000}, 0.01, 0.01);
	REQUIRE(shared.next_duty == Approx((0.01 - 6e6 / (1e9 - 8e6)) / (8e6 / (1e9 - 8e6))));
	// A sampled window that saw no hit widens step by step.
	REQUIRE(estimate_budget({0, 500, 1'000'000, 0.05}, 0.01, 0.01).next_duty == Approx(0.1));
}

TEST_CASE("retention: oldest intervals go first, by count, bytes and age", "[interval]")
{
	namespace fs = std::filesystem;
	fs::path dir = fs::temp_directory_path() / ("usdtprof-retention-" + std::to_string(getpid()));
	fs::remove_all(dir);
	fs::create_directories(dir);
	auto write = [&](const std::string &name, size_t bytes) { std::ofstream(dir / name) << std::string(bytes, 'x'); };
	for (int i = 1; i <= 5; i++) {
		write("usdtprof-2026010" + std::to_string(i) + ".data", 100);
		write("usdtprof-2026010" + std::to_string(i) + ".pb.gz", 50);
	}
	write("other.txt", 1000);
	auto count = [&] { return std::distance(fs::directory_iterator(dir), fs::directory_iterator()); };
	REQUIRE(apply_retention(dir, "usdtprof-", 3, 0, 0).size() == 4);
	REQUIRE(count() == 7);
	REQUIRE(!fs::exists(dir / "usdtprof-20260101.data"));
	REQUIRE(fs::exists(dir / "usdtprof-20260103.pb.gz"));
	// 3 intervals of 150 bytes; at most 300 bytes keeps the newest two.
	REQUIRE(apply_retention(dir, "usdtprof-", 0, 300, 0).size() == 2);
	REQUIRE(fs::exists(dir / "usdtprof-20260104.data"));
	REQUIRE(!fs::exists(dir / "usdtprof-20260103.data"));
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	REQUIRE(apply_retention(dir, "usdtprof-", 0, 0, 0.01).size() == 4);
	REQUIRE(count() == 1); // other files are never touched
	fs::remove_all(dir);
}
