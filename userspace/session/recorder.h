// `usdtprof record`: attach to a process (or launch one), aggregate in the
// kernel until stopped, save the profile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "session/sinks.h"
#include "target/target_spec.h"

namespace usdtprof {

struct RecordOptions {
	TargetSpec target;                // -p (several), --binary or a command; the probes; --max-paths
	double duration_s = 0;            // 0: until Ctrl-C/SIGTERM or the target exits
	std::string output = "usdtprof.data";
	std::optional<TraceOptions> trace;
};

// Returns usdtprof's exit status: the launched command's, else 0. Throws
// UserError for what stops the recording from starting or being saved.
int record(const RecordOptions &options);

} // namespace usdtprof
