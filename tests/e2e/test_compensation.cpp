// Overhead compensation against the truth the target times itself, unprobed,
// in the same program (tests/targets/overhead.c).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness.h"

using namespace e2e;

namespace {

double median(std::vector<double> v)
{
	REQUIRE(!v.empty());
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Compared {
	double leaf_truth, leaf, leaf_raw, mid_truth, mid, mid_raw;
	nlohmann::json report;
};

// Records `overhead WORK_NS BATCHES`; per batch, the on-CPU self time per
// call of leaf and mid (compensated and raw) and the program's truth; the
// medians over the batches (a batch the machine disturbed does not count).
Compared record_overhead(long work_ns, int batches, const std::string &program = "overhead")
{
	std::string data = temp_dir() + "/profile.data";
	Output o = run({usdtprof(), "record", "-o", data, "--", target(program), std::to_string(work_ns),
			std::to_string(batches)});
	INFO(o.err);
	REQUIRE(o.status == 0);
	std::map<int, std::pair<double, double>> truth;
	std::istringstream lines(o.out);
	for (std::string line; std::getline(lines, line);) {
		int b;
		double leaf, mid;
		if (sscanf(line.c_str(), "truth %d %lf %lf", &b, &leaf, &mid) == 3)
			truth[b] = {leaf, mid};
	}
	REQUIRE(truth.size() == size_t(batches));
	Compared c{};
	c.report = report_json(data);
	std::vector<double> leaf, leaf_raw, mid, mid_raw, leaf_truth, mid_truth;
	for (const auto &[b, t] : truth) {
		char root[16];
		snprintf(root, sizeof root, "batch%02d", b);
		auto per_call = [&](const std::string &stack, std::vector<double> &comp, std::vector<double> &raw) {
			auto p = path(c.report, std::string(root) + stack);
			REQUIRE(p.is_object());
			double calls = p["calls"].get<double>(), off = p["self_offcpu_ns"].get<double>();
			comp.push_back(p["self_oncpu_ns"].get<double>() / calls);
			raw.push_back((p["raw_self_ns"].get<double>() - off) / calls);
		};
		per_call(";mid;leaf", leaf, leaf_raw);
		per_call(";mid", mid, mid_raw);
		leaf_truth.push_back(t.first);
		mid_truth.push_back(t.second);
	}
	c.leaf_truth = median(leaf_truth);
	c.mid_truth = median(mid_truth);
	c.leaf = median(leaf);
	c.leaf_raw = median(leaf_raw);
	c.mid = median(mid);
	c.mid_raw = median(mid_raw);
	return c;
}

// The acceptance bounds (5% at 1 us, 2% at 10 us; tools/bench/compensation.py)
// hold on a quiet machine only: a hit's cost moves with the machine's speed
// state (docs/design.md, "Limits"). What must hold under any load is that
// compensation brings the times closer to the truth than the measured ones,
// and, when the calibration saw the state the target ran in, that it at
// least halves the error. Which state the target ran in, the run itself
// says: its measured leaf less its own unprobed truth is what a hit cost it
// (implied). Under two CPU-bound processes the calibration and the target
// have been ~200 ns a hit apart (calibrated 479-503 ns, implied 245-296 ns:
// the compensated error then 0.7-0.96x the measured one).
struct Accuracy {
	double implied_own, calibrated_own;
	bool same_state() const { return std::abs(calibrated_own - implied_own) <= kSameStateNs; }
	static constexpr double kSameStateNs = 100; // this host's states: ~290 and ~480 ns a hit
};

void require_closer(double compensated, double raw, double truth, const Accuracy &a)
{
	INFO("compensated " << compensated << " ns per call, measured " << raw << " ns, truth " << truth << " ns");
	INFO("own cost a hit: calibrated " << a.calibrated_own << " ns, implied by the run " << a.implied_own << " ns");
	REQUIRE(std::abs(compensated - truth) < std::abs(raw - truth));
	if (a.same_state())
		REQUIRE(std::abs(compensated - truth) * 2 <= std::abs(raw - truth));
}

} // namespace

TEST_CASE("compensation: 1 us leaves and their 1 us parents come closer to the unprobed truth: half the error or less when the calibration saw the run's speed state", "[compensation]")
{
	Compared c = record_overhead(1000, 15);
	INFO("calibration " << c.report["calibration"]);
	REQUIRE(c.report["calibration"]["compensated"] == true);
	// Measured, each child's probe cost lands in its parent: far off.
	REQUIRE(c.mid_raw > c.leaf_truth * 2);
	Accuracy a{c.leaf_raw - c.leaf_truth, c.report["calibration"]["kinds"][0]["own_ns"].get<double>()};
	require_closer(c.leaf, c.leaf_raw, c.leaf_truth, a);
	// mid's own work is a leaf's loop (in two halves), so its truth is the
	// leaf's, which the target times in ten times as many calls as its own
	// figure for mid: under two CPU-bound processes that figure moves more.
	INFO("the target's own mid figure: " << c.mid_truth << " ns");
	require_closer(c.mid, c.mid_raw, c.leaf_truth, a);
}

// Each hit measured by the program's own clock (usdtprof.h) follows the
// machine wherever it goes, so the bound holds under load too; it is 4x the
// acceptance's (5% at 1 us, tools/bench/compensation.py on a quiet machine)
// for what two CPU-bound processes do to the truth's own chunks.
TEST_CASE("compensation: with each hit measured in band, 1 us leaves and parents are within 20% of the unprobed truth",
	  "[compensation]")
{
	Compared c = record_overhead(1000, 15);
	INFO("calibration " << c.report["calibration"]);
	INFO("leaf: compensated " << c.leaf << " ns, measured " << c.leaf_raw << ", truth " << c.leaf_truth);
	INFO("mid: compensated " << c.mid << " ns, measured " << c.mid_raw << ", truth " << c.mid_truth);
	std::string kind = c.report["calibration"]["kinds"][0]["kind"];
	REQUIRE(kind.size() > 8);
	REQUIRE(kind.substr(kind.size() - 8) == " in-band");
	REQUIRE(c.mid_raw > c.mid_truth * 5);
	REQUIRE(c.report["calibration"]["measured_ns"].get<uint64_t>() > 0);
	REQUIRE(std::abs(c.leaf - c.leaf_truth) <= 0.2 * c.leaf_truth);
	REQUIRE(std::abs(c.mid - c.mid_truth) <= 0.2 * c.mid_truth);
}

// A program built with the header before 2026-12-05 passes three clock reads
// (no measure of the reads' own cost): still measured in band, its kind
// calibrated apart, with the reads' cost.
TEST_CASE("compensation: a program built with the older header is measured in band, its reads' cost calibrated",
	  "[compensation]")
{
	Compared c = record_overhead(1000, 15, "overhead_older_header");
	INFO("calibration " << c.report["calibration"]);
	INFO("leaf: compensated " << c.leaf << " ns, measured " << c.leaf_raw << ", truth " << c.leaf_truth);
	INFO("mid: compensated " << c.mid << " ns, measured " << c.mid_raw << ", truth " << c.mid_truth);
	const nlohmann::json &kinds = c.report["calibration"]["kinds"];
	REQUIRE(kinds.size() == 1);
	REQUIRE(kinds[0]["kind"] == "native nop5 in-band (older header)");
	// What the reads leave out is theirs: a clock read's cost, not nothing.
	REQUIRE(kinds[0]["own_ns"].get<double>() > 0);
	REQUIRE(c.report["calibration"]["measured_ns"].get<uint64_t>() > 0);
	REQUIRE(c.mid_raw > c.mid_truth * 5);
	REQUIRE(std::abs(c.leaf - c.leaf_truth) <= 0.2 * c.leaf_truth);
	// Unlike the current header's, these reads' cost is calibrated, not
	// measured at each hit, and it moves with the host's speed (26-29 ns
	// here, 25-30% more or less when the host moves): mid's 11 gaps each hold
	// one, so its bound also allows a quarter of what their calibration
	// takes out (a mid whose reads were not taken out at all is beyond it:
	// 11 whole reads, ~313 ns against ~243). Beside two CPU-bound processes, mid came
	// out +20.1% once in 20 runs with 20% alone.
	double reads = 11 * kinds[0]["own_ns"].get<double>();
	INFO("mid's reads, calibrated: " << reads << " ns a call");
	REQUIRE(std::abs(c.mid - c.mid_truth) <= 0.2 * c.mid_truth + reads / 4);
	// The current header measures that cost at each hit: less is left to calibrate.
	Compared now = record_overhead(1000, 1);
	const nlohmann::json &current = now.report["calibration"]["kinds"][0];
	INFO("current header's calibration " << current);
	REQUIRE(current["kind"] == "native nop5 in-band");
	REQUIRE(current["own_ns"].get<double>() < kinds[0]["own_ns"].get<double>());
}

TEST_CASE("report --raw shows the measured times; the text report says what was taken out", "[compensation]")
{
	std::string data = temp_dir() + "/profile.data";
	Output o = run({usdtprof(), "record", "-o", data, "--", target("overhead"), "1000", "2"});
	REQUIRE(o.status == 0);
	Output text = run({usdtprof(), "report", data});
	REQUIRE(text.status == 0);
	// Our header's sites: each hit measured in band, the calibration for
	// what the clock reads leave out.
	CHECK(text.out.find("probe time measured in band taken out: ") != std::string::npos);
	CHECK(text.out.find(" in-band own ") != std::string::npos);
	Output raw = run({usdtprof(), "report", "--raw", "--format", "json", data});
	REQUIRE(raw.status == 0);
	auto r = e2e::parse_report(raw.out);
	REQUIRE(r["calibration"]["compensated"] == false);
	auto leaf = path(r, "batch00;mid;leaf");
	REQUIRE(leaf.is_object());
	// --raw: self_ns is the measured one.
	CHECK(leaf["self_ns"] == leaf["raw_self_ns"]);
	auto comp = path(report_json(data), "batch00;mid;leaf");
	CHECK(comp["self_ns"].get<uint64_t>() < leaf["self_ns"].get<uint64_t>());
	CHECK(comp["raw_self_ns"] == leaf["raw_self_ns"]);
}

// Beside its target, record calibrates a round at each 50 ms tick until the
// rounds' places are full, then one a second. Rounds ran at every tick of
// a recording without --binary before (the tick count stayed 0): 8% of a
// CPU spent calibrating beside an idle target.
TEST_CASE("record calibrates beside its target once a second after its first rounds, not at every tick",
	  "[compensation]")
{
	Background app({target("fair_paths"), "--wait", "1"});
	std::string pid = app.wait_for_line("ready").substr(6);
	std::string data = temp_dir() + "/idle.data";
	Output o = run({usdtprof(), "record", "-p", pid, "-d", "3", "-o", data});
	INFO(o.err);
	REQUIRE(o.status == 0);
	nlohmann::json j = report_json(data);
	const nlohmann::json &kinds = j["calibration"]["kinds"];
	INFO("calibration " << j["calibration"]);
	REQUIRE(kinds.size() == 1);
	double seconds = double(j["duration_ns"].get<uint64_t>()) / 1e9;
	uint64_t rounds = kinds[0]["rounds"].get<uint64_t>();
	// 12 places' rounds, one at the start, one a second after: at most 12 +
	// 1 + the recording's seconds (~20 a second before).
	CHECK(rounds >= 4);
	CHECK(double(rounds) <= 13 + std::ceil(seconds));
}
