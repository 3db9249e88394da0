// Overhead calibration: what one probed call adds to the self times usdtprof
// measures, on this machine, with the probes attached as for the target.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "engine/engine.h"
#include "profile/profile.h"
#include "base/result.h"

namespace usdtprof {

struct CalibrationResult {
	Calibration calibration;          // function_kinds left empty
	std::map<uint32_t, int32_t> spec_kinds; // probe spec index -> index into calibration.kinds
	int32_t native_kind = -1;         // the kind of functions named by a native probe's address
};

// Calibrates every kind of probe spec the engine holds (call after
// attaching the target): the same programs, in the same multi-uprobe attach
// mode, fire at sites of usdtprof's own binary, for this process only, in
// batches of parents calling leaves; own and caller costs solve out of the
// self times the engine records for them. Those records are then forgotten.
// Runs on the calling thread, which must be the main thread.
Result<CalibrationResult> calibrate(Engine &engine, bool offcpu_hook, bool trace);

} // namespace usdtprof
