// Chrome's Trace Event format (formats.cpp): Perfetto, chrome://tracing.
#include <cmath>

#include "report/trace_timeline.h"

namespace usdtprof {

using namespace timeline;

namespace {

// A duration in microseconds with which a reader's ts + dur is the end's own
// double, when one exists (else the nearest below): a slice that ends with
// its parent then never appears to outlast it (viewers drop such a child).
double micros_between(double begin, double end)
{
	double dur = end - begin;
	while (dur > 0 && begin + dur > end)
		dur = std::nextafter(dur, 0.0);
	if (double up = std::nextafter(dur, end); begin + up == end)
		dur = up;
	return std::max(dur, 0.0);
}

// Sets a slice's dur at its close. Slices of a thread closed at the same ns
// close innermost first; where the doubles cannot make their ends equal, the
// inner ones are shortened by a few ulps to end within the outer one.
void close_slice(json &events, std::vector<size_t> &same_end, size_t slice, double end)
{
	json &e = events[slice];
	double begin = e["ts"].get<double>(), dur = micros_between(begin, end);
	e["dur"] = dur;
	for (size_t inner : same_end) {
		json &in = events[inner];
		double in_begin = in["ts"].get<double>(), in_dur = in["dur"].get<double>();
		while (in_dur > 0 && in_begin + in_dur > begin + dur)
			in_dur = std::nextafter(in_dur, 0.0);
		in["dur"] = in_dur;
	}
	same_end.push_back(slice);
}

json slice_event(const Action &a)
{
	json e = {{"ph", "X"}, {"name", std::string(a.name)}, {"cat", a.task ? "task" : "function"},
		{"pid", a.thread.first}, {"tid", a.thread.second}, {"ts", micros(a.ts)}, {"dur", 0.0}};
	if (a.task) {
		e["args"] = {{"task_id", a.id}};
		if (a.created)
			e["args"]["created_in"] = std::vector<std::string>(a.created_in.begin(), a.created_in.end());
	}
	return e;
}

// Span tracks' tids: above any Linux tid (PID_MAX_LIMIT is 2^22), one per
// thread and span name, in (pid, tid, name) order.
constexpr uint32_t kSpanTrackTid = 1u << 30;

// The processes' and threads' names; each thread's spans of one name get a
// track (a tid) of their own: returned.
std::map<SpanTrackKey, uint32_t> add_names(json &events, const TraceInput &input, const Timeline &t)
{
	for (const auto &[pid, name] : input.process_names)
		events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", name}}}});
	for (const auto &[key, th] : t.threads)
		events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", key.first}, {"tid", key.second},
			{"args", {{"name", thread_label(input, key.second, false)}}}});
	// Spans need not nest with the thread's calls: each thread's spans of one
	// name are a track of their own, a thread of the same process to viewers.
	std::map<SpanTrackKey, uint32_t> span_tids;
	for (const auto &[track, slices] : t.spans) {
		uint32_t tid = kSpanTrackTid + uint32_t(span_tids.size());
		span_tids[track] = tid;
		events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", track.first.first}, {"tid", tid},
			{"args", {{"name", span_label(track.second) + " " + thread_label(input, track.first.second, true)}}}});
	}
	return span_tids;
}

// A paired task creation: its instant and the flow's start.
void add_flow_start(json &events, const Action &a, const json &at_instant, const json &at_start)
{
	json created = at_instant;
	created.update({{"s", "t"}, {"args", {{"task_id", a.id}}}});
	events.push_back(std::move(created));
	json start = at_start;
	start["id"] = a.id;
	events.push_back(std::move(start));
}

// The calls and tasks as complete (X) events, not B/E pairs: readers that
// match an E to the latest B of any thread (the DevTools trace engine) see no
// mismatch; and the flows from a task's creation to its start.
void add_slices(json &events, const Timeline &t)
{
	std::map<ThreadKey, std::vector<size_t>> open; // per thread, its unclosed slices' indices in events
	struct Closing {
		uint64_t ts = 0;
		std::vector<size_t> slices; // closed at ts, innermost first
	};
	std::map<ThreadKey, Closing> closing;
	for (const Action &a : t.actions) {
		auto at = [&a](const char *ph, const char *name) {
			return json{{"ph", ph}, {"name", name}, {"cat", "task"}, {"pid", a.thread.first}, {"tid", a.thread.second},
				{"ts", micros(a.ts)}};
		};
		switch (a.kind) {
		case Action::Open:
			open[a.thread].push_back(events.size());
			events.push_back(slice_event(a));
			break;
		case Action::Close: {
			// Closes come innermost first (replay's close_to).
			size_t slice = open[a.thread].back();
			open[a.thread].pop_back();
			Closing &c = closing[a.thread];
			if (c.ts != a.ts)
				c = {a.ts, {}};
			close_slice(events, c.slices, slice, micros(a.ts));
			break;
		}
		case Action::FlowStart:
			// DevTools binds a flow event to the event of the same ts, thread
			// and cat: the creation's own instant; others to the enclosing slice.
			if (a.paired)
				add_flow_start(events, a, at("i", "task created"), at("s", "task"));
			break;
		case Action::FlowEnd: {
			// After the [task] slice it binds to (same ts and cat).
			json end = at("f", "task");
			end.update({{"id", a.id}, {"bp", "e"}});
			events.push_back(std::move(end));
			break;
		}
		}
	}
}

void add_spans(json &events, const Timeline &t, const std::map<SpanTrackKey, uint32_t> &span_tids)
{
	for (const auto &[track, slices] : t.spans) {
		for (const SpanSlice &sp : slices) {
			json e = {{"ph", "X"}, {"name", span_label(track.second)}, {"cat", "span"}, {"pid", track.first.first},
				{"tid", span_tids.at(track)}, {"ts", micros(sp.begin)},
				{"dur", micros_between(micros(sp.begin), micros(sp.end))},
				{"args", {{"span", std::string(track.second)}, {"thread", track.first.second}}}};
			if (sp.open)
				e["args"]["open"] = true;
			events.push_back(std::move(e));
		}
	}
}

json other_data(const TraceInput &input, const Timeline &t)
{
	json other = {{"unmatched_exits", t.unmatched_exits}, {"events", input.events.size()}};
	if (!t.spans.empty() || t.span_restarts || t.unmatched_span_ends) {
		other["span_restarts"] = t.span_restarts;
		other["unmatched_span_ends"] = t.unmatched_span_ends;
	}
	if (input.lost_events) {
		other["lost_events"] = *input.lost_events;
		other["max_events_reached"] = input.max_events_reached;
		// Per-thread shifts would reorder events across threads (a task's
		// begin before its creation): the timeline keeps measured times.
		other["compensated"] = false;
	}
	return other;
}

} // namespace

std::string render_chrome_trace(const TraceInput &input)
{
	Timeline t = replay(input);
	json events = json::array();
	std::map<SpanTrackKey, uint32_t> span_tids = add_names(events, input, t);
	add_slices(events, t);
	add_spans(events, t, span_tids);
	return dump({{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", other_data(input, t)}});
}

} // namespace usdtprof
