// speedscope's evented format (formats.cpp): one profile per thread.
#include "report/trace_timeline.h"

namespace usdtprof {

using namespace timeline;

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
	// A thread's spans of one name: a profile after the thread's, its frame
	// "[span NAME]" open from each start to its end.
	std::map<ThreadKey, std::vector<std::pair<std::string, json>>> span_profiles;
	std::map<std::string_view, size_t> span_frames; // by span name: a frame apart from any function's
	for (const auto &[track, slices] : t.spans) {
		std::string label = span_label(track.second);
		auto [it, added] = span_frames.try_emplace(track.second, frames.size());
		if (added)
			frames.push_back({{"name", label}});
		json evs = json::array();
		for (const SpanSlice &sp : slices) {
			evs.push_back({{"type", "O"}, {"frame", it->second}, {"at", sp.begin}});
			evs.push_back({{"type", "C"}, {"frame", it->second}, {"at", sp.end}});
		}
		span_profiles[track.first].push_back({label + " " + thread_label(input, track.first.second, true), std::move(evs)});
		events.try_emplace(track.first, json::array());
	}
	json profiles = json::array();
	for (auto &[key, evs] : events) {
		if (t.threads.count(key))
			profiles.push_back({{"type", "evented"}, {"name", thread_label(input, key.second, true)}, {"unit", "nanoseconds"},
				{"startValue", 0}, {"endValue", t.end_ts}, {"events", std::move(evs)}});
		for (auto &[name, span_evs] : span_profiles[key])
			profiles.push_back({{"type", "evented"}, {"name", name}, {"unit", "nanoseconds"}, {"startValue", 0},
				{"endValue", t.end_ts}, {"events", std::move(span_evs)}});
	}
	return dump({{"$schema", "https://www.speedscope.app/file-format-schema.json"}, {"shared", {{"frames", std::move(frames)}}},
		{"profiles", std::move(profiles)}, {"name", "usdtprof trace"}, {"activeProfileIndex", 0}, {"exporter", "usdtprof"}});
}

} // namespace usdtprof
