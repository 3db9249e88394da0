// pprof export: the profile as a gzip-compressed perftools.profiles.Profile
// (google/pprof's proto/profile.proto), for `go tool pprof` and other tools.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/sink.h"
#include "profile/profile.h"
#include "report/report.h"

namespace usdtprof {

// One sample per call path with calls or self time, leaf first; sample types
// calls/count and self_time/nanoseconds, plus self_oncpu_time and
// self_offcpu_time when the profile has off-CPU time or time is not wall.
// The default sample type is time's: self_time, self_oncpu_time or
// self_offcpu_time, so pprof's cum is the report's total in that domain.
// See docs/pprof.md.
// Written into `out` as it is made, gzipped on the way: only the tables of
// functions, locations and strings are held, never the samples.
// self_ns, when not empty: each node's self time instead of its own (as
// compensated_self_ns makes them), nothing else of the profile changed.
void write_pprof(const Profile &profile, TimeMode time, Sink &out, const std::vector<uint64_t> &self_ns = {});
std::string render_pprof(const Profile &profile, TimeMode time = TimeMode::Wall);

} // namespace usdtprof
