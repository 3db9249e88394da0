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

// replay's state: the timeline being built, the task creations not yet
// taken by a task, and each thread's open spans.
class Replayer {
public:
	explicit Replayer(const TraceInput &input) : input_(input) {}

	Timeline run()
	{
		for (const TraceEvent &e : input_.events) {
			ThreadKey key{e.pid, e.tid};
			if (e.type == USDTPROF_EV_SPAN_START || e.type == USDTPROF_EV_SPAN_END)
				span(key, e);
			else
				step(key, e);
		}
		uint64_t stop = since(input_.stop_ns, input_.start_ns);
		t_.end_ts = stop;
		for (auto &[key, th] : t_.threads) {
			close_to(key, th, 0, std::max(th.last_ts, stop));
			t_.end_ts = std::max(t_.end_ts, th.last_ts);
		}
		for (auto &[key, st] : span_threads_) {
			for (const auto &[name, begin] : st.open)
				t_.spans[{key, name}].push_back({begin, std::max(st.last_ts, stop), true});
			t_.end_ts = std::max(t_.end_ts, st.last_ts);
		}
		return std::move(t_);
	}

private:
	// Spans: per thread, when each open one started, apart from the stack.
	struct SpanThread {
		std::map<std::string_view, uint64_t> open;
		uint64_t last_ts = 0;
	};

	// Closes the frames above `depth`, innermost first.
	void close_to(const ThreadKey &key, Thread &th, size_t depth, uint64_t ts)
	{
		for (; th.stack.size() > depth; th.stack.pop_back())
			t_.actions.push_back({Action::Close, key, ts, th.stack.back().name, th.stack.back().task, th.stack.back().id});
	}

	void span(const ThreadKey &key, const TraceEvent &e)
	{
		SpanThread &st = span_threads_[key];
		uint64_t ts = st.last_ts = std::max(st.last_ts, since(e.ts_ns, input_.start_ns));
		std::string_view name = e.name;
		auto open = st.open.find(name);
		if (e.type == USDTPROF_EV_SPAN_START) {
			t_.span_restarts += open != st.open.end();
			st.open[name] = ts;
		} else if (open == st.open.end()) {
			t_.unmatched_span_ends++;
		} else {
			t_.spans[{key, name}].push_back({open->second, ts, false});
			st.open.erase(open);
		}
	}

	void enter(const ThreadKey &key, Thread &th, const TraceEvent &e, uint64_t ts, bool task)
	{
		Frame f{task ? kTaskName : std::string_view(e.name), task, task ? e.task_id : 0};
		auto it = task ? creates_.find(e.task_id) : creates_.end();
		if (it == creates_.end()) {
			th.stack.push_back(f);
			t_.actions.push_back({Action::Open, key, ts, f.name, f.task, f.id});
			return;
		}
		Create c = std::move(it->second.back());
		if (it->second.pop_back(); it->second.empty())
			creates_.erase(it);
		f.created = true;
		f.created_in = c.path;
		th.stack.push_back(f);
		t_.actions.push_back({Action::Open, key, ts, f.name, f.task, f.id, false, true, std::move(c.path)});
		// After the Open, so that the flow end binds to the [task] slice.
		if (c.flow_start != kNone && ts >= c.ts) {
			t_.actions[c.flow_start].paired = true;
			t_.actions.push_back({Action::FlowEnd, key, ts, {}, true, e.task_id});
		}
	}

	void step(const ThreadKey &key, const TraceEvent &e)
	{
		Thread &th = t_.threads[key];
		uint64_t ts = th.last_ts = std::max(th.last_ts, since(e.ts_ns, input_.start_ns));
		bool task = e.type == USDTPROF_EV_TASK_BEGIN || e.type == USDTPROF_EV_TASK_END;
		switch (e.type) {
		case USDTPROF_EV_ENTER:
		case USDTPROF_EV_TASK_BEGIN:
			enter(key, th, e, ts, task);
			break;
		case USDTPROF_EV_EXIT:
		case USDTPROF_EV_TASK_END: {
			// The innermost frame it closes; frames above it missed their exits.
			auto open = std::find_if(th.stack.rbegin(), th.stack.rend(), [&](const Frame &f) {
				return f.task == task && (task ? f.id == e.task_id : f.name == e.name);
			});
			if (open == th.stack.rend())
				t_.unmatched_exits++;
			else
				close_to(key, th, th.stack.rend() - open - 1, ts);
			break;
		}
		case USDTPROF_EV_TASK_CREATE: {
			// A flow start binds to the slice enclosing it: without one, no arrow.
			size_t flow = th.stack.empty() ? kNone : t_.actions.size();
			if (flow != kNone)
				t_.actions.push_back({Action::FlowStart, key, ts, {}, true, e.task_id});
			creates_[e.task_id].push_back({flow, ts, profile_path(th)});
			break;
		}
		case USDTPROF_EV_SPAN_START:
		case USDTPROF_EV_SPAN_END:
			break; // span()
		}
	}

	const TraceInput &input_;
	Timeline t_;
	std::map<uint64_t, std::vector<Create>> creates_; // task id -> unpaired creates, oldest first
	std::map<ThreadKey, SpanThread> span_threads_;
};

} // namespace

Timeline replay(const TraceInput &input) { return Replayer(input).run(); }

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
