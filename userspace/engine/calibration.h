// Overhead calibration: what one probed call adds to the self times usdtprof
// measures, on this machine, with the probes attached as for the target.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "profile/profile.h"
#include "base/result.h"

namespace usdtprof {

struct CalibrationResult {
	Calibration calibration;          // function_kinds left empty
	std::map<uint32_t, int32_t> spec_kinds; // probe spec index -> index into calibration.kinds
	int32_t native_kind = -1;         // the kind of functions named by a native probe's address
};

// A cost from its per-batch values: their median (their mean reads ~40 ns a
// hit high: a batch holds nothing but hits, so an interrupt that lands in
// one counts as probe cost; docs/benchmarks.md); the spread is half their
// 10th-90th percentile range.
struct CostEstimate {
	double cost_ns = 0, spread_ns = 0;
};
CostEstimate estimate_cost(const std::vector<double> &per_batch);
double percentile(std::vector<double> values, double q); // q in [0, 1], linear between ranks

// Calibrates every kind of probe spec the engine holds (call after
// attaching the target): the same programs, in the same multi-uprobe attach
// mode, fire at sites of usdtprof's own binary, for this process only, in
// batches of parents calling leaves; own and caller costs solve out of the
// self times the engine records for them. Those records are then forgotten.
// Runs on the calling thread, which must be the main thread.
//
// A hit's cost moves with the machine's speed state (docs/benchmarks.md,
// "Overhead compensation accuracy"), so a recording calibrates while its
// target runs: a round now and then (run_round), the rest at the end
// (finish). Each round runs a warm-up batch and 8 batches of every kind;
// the 12 rounds' 96 batch places are reused, round after round, so a long
// recording's places sum moments spread over it.
class Calibrator {
public:
	Calibrator(Engine &engine, bool offcpu_hook, bool trace);
	~Calibrator();
	Calibrator(const Calibrator &) = delete;
	Calibrator &operator=(const Calibrator &) = delete;
	// Plans the kinds of specs attached since the last call (the first:
	// all) and attaches their calibration sites.
	Result<void> add_kinds();
	// One round of every kind planned; how many rounds ran.
	void run_round();
	int rounds() const { return rounds_; }
	// Plans kinds attached since, runs rounds (8 ms apart) until every kind
	// has min_rounds, then solves the costs from all its batches.
	Result<CalibrationResult> finish(int min_rounds);

private:
	struct Plans;
	Engine &engine_;
	CalibrationResult out_;
	std::unique_ptr<Plans> plans_;
	int rounds_ = 0;
	uint64_t busy_ns_ = 0; // time spent calibrating (calibration.cost_ns)
};

// The kinds a calibration of these specs would measure, by name, and each
// spec's kind (an index into names): what add_kinds plans, nothing attached.
struct PlannedKinds {
	std::vector<std::string> names;
	std::map<uint32_t, int32_t> spec_kinds;
};
PlannedKinds plan_calibration_kinds(const std::vector<usdtprof_probe_spec> &specs);

// Rounds a calibration at once runs (over ~0.1 s): the places kept.
constexpr int kCalibrationRounds = 12;

// Start to finish at once: monitor's, and a recording's with --trace.
Result<CalibrationResult> calibrate(Engine &engine, bool offcpu_hook, bool trace);

} // namespace usdtprof
