// `usdtprof trace`: probe events written as a timeline, in Chrome's Trace
// Event format (Perfetto, chrome://tracing) or speedscope's evented format.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

struct TraceEvent {
	uint64_t ts_ns = 0;   // monotonic; per thread non-decreasing
	uint32_t pid = 0, tid = 0;
	usdtprof_event_type type = USDTPROF_EV_ENTER;
	std::string name;     // function name (ENTER/EXIT), span name (SPAN_*); empty for task events
	uint64_t task_id = 0; // TASK_* events
};

struct TraceInput {
	std::vector<TraceEvent> events; // in arrival order
	uint64_t start_ns = 0;          // the recording's start: timestamps are written relative to it
	uint64_t stop_ns = 0;           // frames still open are closed here
	std::map<uint32_t, std::string> process_names; // pid -> name
	std::map<uint32_t, std::string> thread_names;  // tid -> name
	// What a recording adds to Chrome's otherData (lost_events,
	// max_events_reached, compensated: false); nothing when unset.
	std::optional<uint64_t> lost_events;
	bool max_events_reached = false;
};

// Chrome Trace Event JSON: per-thread B/E slices that always nest (exits that
// skip frames close the skipped ones; exits matching no open frame are
// dropped; frames open at the stop are closed at stop_ns), task slices named
// "[task]" with a flow arrow from the TASK_CREATE to the TASK_BEGIN, and
// process/thread names as metadata. Spans (SPAN_START/END) are slices named
// "[span NAME]" on a track of their own per thread and span name, never on
// the thread's stack (docs/trace.md, "Spans").
std::string render_chrome_trace(const TraceInput &input);
// speedscope's evented format: one profile per thread, balanced O/C events;
// one more per thread and span name, after the thread's.
std::string render_speedscope(const TraceInput &input);

} // namespace usdtprof
