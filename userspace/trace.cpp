// `usdtprof trace` output: each thread's events are replayed on a stack, so
// the written slices always nest whatever probes were missed, then written as
// Chrome Trace Event JSON or speedscope's evented format.
#include "trace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json; // keeps keys in the order written
using ThreadKey = std::pair<uint32_t, uint32_t>; // pid, tid

constexpr std::string_view kTaskName = "[task]";
constexpr size_t kNone = std::numeric_limits<size_t>::max();

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

struct Timeline {
	std::vector<Action> actions; // in arrival order, which keeps each thread's steps in order
	std::map<ThreadKey, Thread> threads;
	uint64_t unmatched_exits = 0;
	uint64_t end_ts = 0; // stop_ns, or the latest step if one came after it
};

uint64_t since(uint64_t ns, uint64_t start) { return ns > start ? ns - start : 0; }

// A thread's current path as the kernel aggregates it: its own frames down to
// the innermost task it runs for a creator, then that creator's path.
Stack profile_path(const Thread &th)
{
	Stack path;
	size_t bottom = th.stack.size();
	while (bottom > 0 && !th.stack[bottom - 1].created)
		bottom--;
	if (bottom > 0)
		path = th.stack[bottom - 1].created_in;
	for (size_t i = bottom > 0 ? bottom - 1 : 0; i < th.stack.size(); i++)
		path.push_back(th.stack[i].name);
	return path;
}

Timeline replay(const TraceInput &input)
{
	Timeline t;
	std::map<uint64_t, std::vector<Create>> creates; // task id -> unpaired creates, oldest first
	// Closes the frames above `depth`, innermost first.
	auto close_to = [&t](const ThreadKey &key, Thread &th, size_t depth, uint64_t ts) {
		for (; th.stack.size() > depth; th.stack.pop_back())
			t.actions.push_back({Action::Close, key, ts, th.stack.back().name, th.stack.back().task, th.stack.back().id});
	};
	for (const TraceEvent &e : input.events) {
		ThreadKey key{e.pid, e.tid};
		Thread &th = t.threads[key];
		uint64_t ts = th.last_ts = std::max(th.last_ts, since(e.ts_ns, input.start_ns));
		bool task = e.type == USDTPROF_EV_TASK_BEGIN || e.type == USDTPROF_EV_TASK_END;
		switch (e.type) {
		case USDTPROF_EV_ENTER:
		case USDTPROF_EV_TASK_BEGIN: {
			Frame f{task ? kTaskName : std::string_view(e.name), task, task ? e.task_id : 0};
			auto it = task ? creates.find(e.task_id) : creates.end();
			if (it == creates.end()) {
				th.stack.push_back(f);
				t.actions.push_back({Action::Open, key, ts, f.name, f.task, f.id});
				break;
			}
			Create c = std::move(it->second.back());
			if (it->second.pop_back(); it->second.empty())
				creates.erase(it);
			f.created = true;
			f.created_in = c.path;
			th.stack.push_back(f);
			t.actions.push_back({Action::Open, key, ts, f.name, f.task, f.id, false, true, std::move(c.path)});
			// After the Open, so that the flow end binds to the [task] slice.
			if (c.flow_start != kNone && ts >= c.ts) {
				t.actions[c.flow_start].paired = true;
				t.actions.push_back({Action::FlowEnd, key, ts, {}, true, e.task_id});
			}
			break;
		}
		case USDTPROF_EV_EXIT:
		case USDTPROF_EV_TASK_END: {
			// The innermost frame it closes; frames above it missed their exits.
			auto open = std::find_if(th.stack.rbegin(), th.stack.rend(), [&](const Frame &f) {
				return f.task == task && (task ? f.id == e.task_id : f.name == e.name);
			});
			if (open == th.stack.rend())
				t.unmatched_exits++;
			else
				close_to(key, th, th.stack.rend() - open - 1, ts);
			break;
		}
		case USDTPROF_EV_TASK_CREATE: {
			// A flow start binds to the slice enclosing it: without one, no arrow.
			size_t flow = th.stack.empty() ? kNone : t.actions.size();
			if (flow != kNone)
				t.actions.push_back({Action::FlowStart, key, ts, {}, true, e.task_id});
			creates[e.task_id].push_back({flow, ts, profile_path(th)});
			break;
		}
		}
	}
	uint64_t stop = since(input.stop_ns, input.start_ns);
	t.end_ts = stop;
	for (auto &[key, th] : t.threads) {
		close_to(key, th, 0, std::max(th.last_ts, stop));
		t.end_ts = std::max(t.end_ts, th.last_ts);
	}
	return t;
}

// The thread's name, with " (tid N)" appended when with_tid; "tid N" when unnamed.
std::string thread_label(const TraceInput &input, uint32_t tid, bool with_tid)
{
	std::string tid_text = "tid " + std::to_string(tid);
	auto it = input.thread_names.find(tid);
	if (it == input.thread_names.end() || it->second.empty())
		return tid_text;
	return with_tid ? it->second + " (" + tid_text + ")" : it->second;
}

std::string dump(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

// ns since the start -> the format's microseconds, keeping the nanoseconds.
double micros(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

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

} // namespace

std::string render_chrome_trace(const TraceInput &input)
{
	Timeline t = replay(input);
	json events = json::array();
	for (const auto &[pid, name] : input.process_names)
		events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", name}}}});
	for (const auto &[key, th] : t.threads)
		events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", key.first}, {"tid", key.second},
			{"args", {{"name", thread_label(input, key.second, false)}}}});
	// Complete (X) events, not B/E pairs: readers that match an E to the
	// latest B of any thread (the DevTools trace engine) see no mismatch.
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
		case Action::FlowStart: {
			if (!a.paired)
				break;
			// DevTools binds a flow event to the event of the same ts, thread
			// and cat: the creation's own instant; others to the enclosing slice.
			json created = at("i", "task created");
			created.update({{"s", "t"}, {"args", {{"task_id", a.id}}}});
			events.push_back(std::move(created));
			json start = at("s", "task");
			start["id"] = a.id;
			events.push_back(std::move(start));
			break;
		}
		case Action::FlowEnd: {
			// After the [task] slice it binds to (same ts and cat).
			json end = at("f", "task");
			end.update({{"id", a.id}, {"bp", "e"}});
			events.push_back(std::move(end));
			break;
		}
		}
	}
	return dump({{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"},
		{"otherData", {{"unmatched_exits", t.unmatched_exits}, {"events", input.events.size()}}}});
}

std::string render_speedscope(const TraceInput &input)
{
	Timeline t = replay(input);
	json frames = json::array();
	std::map<std::string_view, size_t> frame_ids;
	std::map<ThreadKey, json> events;
	for (const auto &[key, th] : t.threads)
		events[key] = json::array();
	// Per thread, the frames written open, and for each task run for a
	// creator the frames it replaced.
	struct Shown {
		Stack open;
		std::vector<std::pair<Stack, size_t>> replaced; // thread's frames, depth of the task's frame
	};
	std::map<ThreadKey, Shown> shown;
	auto write = [&](const ThreadKey &thread, bool open, std::string_view name, uint64_t ts) {
		auto [it, added] = frame_ids.try_emplace(name, frame_ids.size());
		if (added)
			frames.push_back({{"name", std::string(name)}});
		events[thread].push_back({{"type", open ? "O" : "C"}, {"frame", it->second}, {"at", ts}});
		Shown &sh = shown[thread];
		open ? sh.open.push_back(name) : sh.open.pop_back();
	};
	auto close_all = [&](const ThreadKey &thread, size_t depth, uint64_t ts) {
		while (shown[thread].open.size() > depth)
			write(thread, false, shown[thread].open.back(), ts);
	};
	for (const Action &a : t.actions) {
		if (a.kind != Action::Open && a.kind != Action::Close)
			continue;
		Shown &sh = shown[a.thread];
		if (a.kind == Action::Open && a.created) {
			// A task runs under its creator's path, as in the profile: the
			// thread's own frames are closed while it runs, then reopened.
			Stack own = sh.open;
			close_all(a.thread, 0, a.ts);
			for (std::string_view name : a.created_in)
				write(a.thread, true, name, a.ts);
			write(a.thread, true, a.name, a.ts);
			shown[a.thread].replaced.push_back({std::move(own), shown[a.thread].open.size()});
		} else if (a.kind == Action::Close && !sh.replaced.empty() && sh.open.size() == sh.replaced.back().second) {
			auto [own, depth] = std::move(sh.replaced.back());
			sh.replaced.pop_back();
			close_all(a.thread, 0, a.ts);
			for (std::string_view name : own)
				write(a.thread, true, name, a.ts);
		} else {
			write(a.thread, a.kind == Action::Open, a.name, a.ts);
		}
	}
	json profiles = json::array();
	for (auto &[key, evs] : events) {
		profiles.push_back({{"type", "evented"}, {"name", thread_label(input, key.second, true)}, {"unit", "nanoseconds"}, {"startValue", 0},
			{"endValue", t.end_ts}, {"events", std::move(evs)}});
	}
	return dump({{"$schema", "https://www.speedscope.app/file-format-schema.json"}, {"shared", {{"frames", std::move(frames)}}},
		{"profiles", std::move(profiles)}, {"name", "usdtprof trace"}, {"activeProfileIndex", 0}, {"exporter", "usdtprof"}});
}

} // namespace usdtprof
