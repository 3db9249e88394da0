// What a session attaches to, whichever command asked (record, trace,
// monitor): the processes, the probes beyond the presets', and the limits.
// Planned into sites by session/targets.h's plan_attach.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace usdtprof {

struct TargetSpec {
	// Exactly one of:
	std::vector<int> pids;            // running processes
	std::vector<std::string> command; // a command to launch (record, trace)
	std::string binary;               // every process running this file, new ones too

	// How a command is launched.
	bool follow = true;          // followed through exec and into its children
	bool kill_on_stop = false;   // still running when recording stops: killed
	bool ruby_call_hook = false; // a launched Ruby gets a call/return hook (the ruby preset)

	// The probes.
	std::string runtime;            // a preset's name; "": detected
	std::vector<std::string> pairs; // custom probe pairs (parse_pair_spec)
	std::vector<std::string> tasks; // custom task probes, PROVIDER:CREATE/BEGIN/END[:argN]
	std::vector<std::string> spans; // spans, PROVIDER:START/END[/END...] (parse_span_spec)

	// The limits.
	uint32_t max_paths = 1u << 20; // aggregation map size (javac makes ~780,000 paths)
	bool per_thread = false;       // record --per-thread: each thread's call paths apart, under a root of its own
};

} // namespace usdtprof
