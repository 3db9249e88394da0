// Overhead calibration: what one probed call adds to the self times usdtprof
// measures, on this machine, with the probes attached as for the target.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
Result<CalibrationResult> calibrate(Engine &engine, bool offcpu_hook, bool trace);

} // namespace usdtprof
