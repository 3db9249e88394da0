// The timeline `usdtprof trace` writes, replayed from its events: what the
// timeline formats (trace_chrome.cpp, trace_speedscope.cpp) share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/trace.h"

namespace usdtprof::timeline {

using json = nlohmann::ordered_json; // keeps keys in the order written
using ThreadKey = std::pair<uint32_t, uint32_t>; // pid, tid

// One step of the replayed timeline; ts in ns since start_ns.
struct Action {
	enum Kind { Open, Close, FlowStart, FlowEnd } kind;
	ThreadKey thread;
	uint64_t ts;
	std::string_view name = {}; // Open/Close: the slice's name
	bool task = false;          // Open/Close of a "[task]" slice
	uint64_t id = 0;            // task id
	bool paired = false;        // FlowStart: written only once a later TASK_BEGIN takes it
	// Open of a task whose creation was seen (created): the path the profile
	// records it under, root first (docs/report-json.md "Inclusive time and tasks").
	bool created = false;
	std::vector<std::string_view> created_in = {};
};

using Stack = std::vector<std::string_view>;

struct Frame {
	std::string_view name;
	bool task;
	uint64_t id;
	bool created = false;  // a task whose creation was seen,
	Stack created_in = {}; // under its creator's path
};

struct Thread {
	std::vector<Frame> stack;
	uint64_t last_ts = 0;
};

struct Create {
	size_t flow_start; // index of its FlowStart action; kNone when no slice was open
	uint64_t ts;
	Stack path;        // the creating thread's path, as the profile records it
};

// A span (record --span) from its start to its end on one thread: beside the
// thread's stack, never on it; ts in ns since start_ns.
struct SpanSlice {
	uint64_t begin = 0, end = 0;
	bool open = false; // not ended when recording stopped: closed at the stop
};

// A thread's spans of one name, in time order (they never overlap: a span
// started again before its end restarts, as the kernel times it).
using SpanTrackKey = std::pair<ThreadKey, std::string_view>;

struct Timeline {
	std::vector<Action> actions; // in arrival order, which keeps each thread's steps in order
	std::map<ThreadKey, Thread> threads;
	std::map<SpanTrackKey, std::vector<SpanSlice>> spans;
	uint64_t unmatched_exits = 0;
	uint64_t span_restarts = 0; // span starts that replaced an open one (its start dropped)
	uint64_t unmatched_span_ends = 0; // SPAN_ENDs with no span of their name open on their thread
	uint64_t end_ts = 0; // stop_ns, or the latest step if one came after it
};

// The label of a span's slices and track: "[span NAME]".
std::string span_label(std::string_view name);

// Each thread's events replayed on a stack, so that the slices always nest
// whatever probes were missed.
Timeline replay(const TraceInput &input);
// The thread's name, with " (tid N)" appended when with_tid; "tid N" when unnamed.
std::string thread_label(const TraceInput &input, uint32_t tid, bool with_tid);
std::string dump(const json &j);
// ns since the start -> the format's microseconds, keeping the nanoseconds.
double micros(uint64_t ns);

} // namespace usdtprof::timeline
