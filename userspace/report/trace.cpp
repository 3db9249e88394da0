// `usdtprof trace`: each thread's events are replayed on a stack, so the
// written slices always nest whatever probes were missed; the timeline
// formats (formats.cpp: trace_chrome.cpp, trace_speedscope.cpp) write the result.
#include "report/trace_timeline.h"

#include <algorithm>
#include <limits>

namespace usdtprof::timeline {

namespace {

constexpr std::string_view kTaskName = "[task]";
constexpr size_t kNone = std::numeric_limits<size_t>::max();

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

} // namespace

Timeline replay(const TraceInput &input)
{
	Timeline t;
	std::map<uint64_t, std::vector<Create>> creates; // task id -> unpaired creates, oldest first
	// Closes the frames above `depth`, innermost first.
	auto close_to = [&t](const ThreadKey &key, Thread &th, size_t depth, uint64_t ts) {
		for (; th.stack.size() > depth; th.stack.pop_back())
			t.actions.push_back({Action::Close, key, ts, th.stack.back().name, th.stack.back().task, th.stack.back().id});
	};
	// Spans: per thread, when each open one started, apart from the stack.
	struct SpanThread {
		std::map<std::string_view, uint64_t> open;
		uint64_t last_ts = 0;
	};
	std::map<ThreadKey, SpanThread> span_threads;
	for (const TraceEvent &e : input.events) {
		ThreadKey key{e.pid, e.tid};
		if (e.type == USDTPROF_EV_SPAN_START || e.type == USDTPROF_EV_SPAN_END) {
			SpanThread &st = span_threads[key];
			uint64_t ts = st.last_ts = std::max(st.last_ts, since(e.ts_ns, input.start_ns));
			std::string_view name = e.name;
			auto open = st.open.find(name);
			if (e.type == USDTPROF_EV_SPAN_START) {
				t.span_restarts += open != st.open.end();
				st.open[name] = ts;
			} else if (open == st.open.end()) {
				t.unmatched_span_ends++;
			} else {
				t.spans[{key, name}].push_back({open->second, ts, false});
				st.open.erase(open);
			}
			continue;
		}
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
		case USDTPROF_EV_SPAN_START:
		case USDTPROF_EV_SPAN_END:
			break; // above
		}
	}
	uint64_t stop = since(input.stop_ns, input.start_ns);
	t.end_ts = stop;
	for (auto &[key, th] : t.threads) {
		close_to(key, th, 0, std::max(th.last_ts, stop));
		t.end_ts = std::max(t.end_ts, th.last_ts);
	}
	for (auto &[key, st] : span_threads) {
		for (const auto &[name, begin] : st.open)
			t.spans[{key, name}].push_back({begin, std::max(st.last_ts, stop), true});
		t.end_ts = std::max(t.end_ts, st.last_ts);
	}
	return t;
}

std::string span_label(std::string_view name) { return "[span " + std::string(name) + "]"; }

std::string thread_label(const TraceInput &input, uint32_t tid, bool with_tid)
{
	std::string tid_text = "tid " + std::to_string(tid);
	auto it = input.thread_names.find(tid);
	if (it == input.thread_names.end() || it->second.empty())
		return tid_text;
	return with_tid ? it->second + " (" + tid_text + ")" : it->second;
}

std::string dump(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

double micros(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

} // namespace usdtprof::timeline
