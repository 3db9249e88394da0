// Overhead compensation: the probes' own cost, as calibrated at the start of
// the recording (calibration.h), taken out of the measured times.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"

namespace usdtprof {

struct CompensationSummary {
	bool applied = false;    // the profile has a calibration
	uint64_t removed_ns = 0; // probe cost taken out of self times
	uint64_t clamped = 0;    // self times that would have gone below zero, set to zero
	uint64_t measured_ns = 0; // probe time measured in band (PathNode::probe_ns), all of it
};

// Whether compensate() changes anything: the profile has a calibration or
// probe time measured in band.
bool compensates(const Profile &raw);

// The profile with compensated times (raw times are the profile's own).
// Per path: self = raw self - its probe time measured in band (probe_ns) -
// calls x own cost - (calls of its direct children) x their caller cost
// (for probes measured in band the calibration gives what their measure
// leaves out: the clock reads' own cost), taken from the on-CPU part (probes run on
// the CPU) and never below zero (counted in summary.clamped); totals lose
// what their subtree's selfs lost. Each node's uncertain_ns is the
// calibration's spread over the same calls. Frames no probe kind times
// ([running at attach], [truncated] ...) keep their time; a [task] frame is
// charged its children's caller cost (they run on its thread) but charges
// none to its creator's path (its probes ran on another thread).
Profile compensate(const Profile &raw, CompensationSummary *summary = nullptr);
// The same without a copy (a million paths are 70 MB).
void compensate_in_place(Profile &profile, CompensationSummary *summary = nullptr);

// Each path's self time as compensate() makes it, nothing else copied (a
// million paths: 8 MB, not a 60 MB copy of the profile); empty when the
// profile has no calibration (its times stay as measured).
std::vector<uint64_t> compensated_self_ns(const Profile &raw);

// One line for reports: the costs taken out, what is left uncompensated,
// the clamped count; "" without calibration.
std::string compensation_line(const Profile &raw, const CompensationSummary &summary);
// What a calibration leaves uncompensated (the runtime's own probe code):
// "KIND[, KIND N ns]...; per call: unknown", "" for nothing.
std::string uncompensated_kinds(const Calibration &calibration);
// A merged profile whose parts were compensated apart (compensated_parts):
// says so, as compensation_line would of one profile, with what the parts
// left uncompensated (part_uncompensated: once when all alike, else which
// part left what); else "".
std::string merged_compensation_line(const Profile &profile);
// A merge of profiles with and without durations shows none: what says so.
std::string merged_durations_line(const Profile &profile);
// The probes a recording held the semaphore of without probing them
// ("provider:name"): held so that the runtime fires the probes it records
// (CPython 3.11's python:line), they make it run slower between probes,
// which no calibration measures.
std::vector<std::string> held_semaphores(const Profile &profile);
// What held_semaphores says in a report, "" for none; cost_of(probe) says
// what holding that one up costs, nullptr when nothing is known (the
// runtimes' knowledge is the presets': target/presets.h).
std::string held_semaphore_line(const Profile &profile,
				const std::function<const char *(std::string_view probe)> &cost_of);

} // namespace usdtprof
