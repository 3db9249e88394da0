// `usdtprof record`: attach to a process (or launch one), aggregate in the
// kernel until stopped, save the profile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace usdtprof {

// `usdtprof trace`: every probe hit also becomes a timeline event.
struct TraceOptions {
	std::string output = "trace.json";
	std::string format = "chrome";   // a timeline format of formats.h: chrome, speedscope
	uint64_t max_events = 1000000;    // events kept; later ones are not written
};

struct RecordOptions {
	std::vector<int> pids;            // attach to these processes (-p, several), or
	std::vector<std::string> command; // launch this command, or
	std::string binary;               // attach to every process running this file, new ones too
	bool follow = true;               // a launched command: follow it through exec and into its children
	bool kill_on_stop = false;        // a launched command still running when recording stops is killed
	std::string runtime;              // a preset's name; "": detected
	bool ruby_call_hook = false;      // a launched Ruby gets a call/return hook (the ruby preset)
	double duration_s = 0;            // 0: until Ctrl-C/SIGTERM or the target exits
	std::string output = "usdtprof.data";
	uint32_t max_paths = 1u << 20;    // aggregation map size (javac makes ~780,000 paths)
	std::vector<std::string> pairs;   // custom probe pairs (parse_pair_spec)
	std::vector<std::string> tasks;   // custom task probes, PROVIDER:CREATE/BEGIN/END[:argN]
	std::vector<std::string> spans;   // spans, PROVIDER:START/END[/END...] (parse_span_spec)
	std::optional<TraceOptions> trace;
};

// Returns usdtprof's exit status: the launched command's, else 0. Throws
// UserError for what stops the recording from starting or being saved.
int record(const RecordOptions &options);

} // namespace usdtprof
