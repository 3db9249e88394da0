// Structural checks of `usdtprof trace` output, shared by the unit and e2e
// tests. Each returns "" when the file is valid, else a one-line description
// of the first problem found.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace trace_validate_detail {

inline bool has(const nlohmann::json &o, const char *key) { return o.is_object() && o.contains(key); }
inline bool has_string(const nlohmann::json &o, const char *key) { return has(o, key) && o[key].is_string(); }
inline bool has_number(const nlohmann::json &o, const char *key) { return has(o, key) && o[key].is_number(); }
inline bool has_index(const nlohmann::json &o, const char *key) { return has(o, key) && o[key].is_number_unsigned(); }

} // namespace trace_validate_detail

// Chrome Trace Event JSON: per (pid, tid), complete (X) slices in
// non-decreasing ts, each ending within the slice enclosing it (ends compared
// as a reader computes them, ts + dur); instants (i) and flows inside a slice
// of their thread; every flow "f" (bp "e") ends a preceding "s" of the same
// id, and an "s" is at the ts of an instant of its thread and cat, an "f" at
// that of a slice, so that the DevTools trace engine binds them.
inline std::string validate_chrome_trace(const nlohmann::json &trace)
{
	using namespace trace_validate_detail;
	if (!has(trace, "traceEvents") || !trace["traceEvents"].is_array())
		return "no traceEvents array";
	struct Slice {
		std::string name;
		double end;
	};
	struct Thread {
		std::vector<Slice> open; // enclosing slices, innermost last
		double last_ts = 0;
		double slice_ts = -1, instant_ts = -1; // the latest of each kind, for flow binding
	};
	std::map<std::pair<uint64_t, uint64_t>, Thread> threads;
	std::map<std::string, std::vector<double>> flows; // id -> ts of each "s" not yet ended
	const nlohmann::json &events = trace["traceEvents"];
	for (size_t i = 0; i < events.size(); i++) {
		const nlohmann::json &e = events[i];
		std::string at = "traceEvents[" + std::to_string(i) + "]: ";
		if (!has_string(e, "ph"))
			return at + "no ph";
		std::string ph = e["ph"];
		if (ph == "M") {
			if (!has_string(e, "name") || !has_index(e, "pid") || !has(e, "args") || !has_string(e["args"], "name"))
				return at + "metadata without name, pid or args.name";
			continue;
		}
		if (ph != "X" && ph != "i" && ph != "s" && ph != "f")
			return at + "unexpected ph " + ph;
		if (!has_index(e, "pid") || !has_index(e, "tid") || !has_number(e, "ts") || !has_string(e, "name") ||
		    !has_string(e, "cat"))
			return at + "missing pid, tid, ts, name or cat";
		uint64_t pid = e["pid"], tid = e["tid"];
		std::string thread = std::to_string(pid) + "/" + std::to_string(tid);
		Thread &th = threads[{pid, tid}];
		double ts = e["ts"];
		if (ts < th.last_ts)
			return at + "ts " + std::to_string(ts) + " before " + std::to_string(th.last_ts) + " on " + thread;
		th.last_ts = ts;
		// Slices that ended by now enclose nothing more.
		while (!th.open.empty() && ts >= th.open.back().end && !(ph != "X" && ts == th.open.back().end))
			th.open.pop_back();
		if (ph == "X") {
			if (!has_number(e, "dur") || e["dur"].get<double>() < 0)
				return at + "X without a dur >= 0";
			double end = ts + e["dur"].get<double>();
			if (!th.open.empty() && end > th.open.back().end)
				return at + "slice " + e["name"].dump() + " ends after the enclosing \"" + th.open.back().name + "\" on " + thread;
			th.open.push_back({e["name"], end});
			th.slice_ts = ts;
			continue;
		}
		if (th.open.empty())
			return at + ph + " outside any slice on " + thread;
		if (ph == "i") {
			th.instant_ts = ts;
			continue;
		}
		if (!has(e, "id"))
			return at + "flow without id";
		std::vector<double> &starts = flows[e["id"].dump()];
		if (ph == "s") {
			if (th.instant_ts != ts)
				return at + "s with no instant at its ts on " + thread;
			starts.push_back(ts);
			continue;
		}
		if (!has_string(e, "bp") || e["bp"] != "e")
			return at + "f without bp \"e\"";
		if (th.slice_ts != ts)
			return at + "f with no slice beginning at its ts on " + thread;
		// The latest start not after this end.
		auto s = starts.rbegin();
		while (s != starts.rend() && *s > ts)
			++s;
		if (s == starts.rend())
			return at + "f of id " + e["id"].dump() + " with no earlier s";
		starts.erase(std::next(s).base());
	}
	for (const auto &[id, starts] : flows)
		if (!starts.empty())
			return "flow id " + id + " started but never ended";
	return "";
}

// speedscope evented profiles: frame indexes valid, "at" non-decreasing within
// [startValue, endValue], O/C balanced and closed in LIFO order.
inline std::string validate_speedscope(const nlohmann::json &file)
{
	using namespace trace_validate_detail;
	if (!has_string(file, "$schema") || file["$schema"] != "https://www.speedscope.app/file-format-schema.json")
		return "missing or wrong $schema";
	if (!has(file, "shared") || !has(file["shared"], "frames") || !file["shared"]["frames"].is_array())
		return "no shared.frames array";
	const nlohmann::json &frames = file["shared"]["frames"];
	for (size_t i = 0; i < frames.size(); i++)
		if (!has_string(frames[i], "name"))
			return "frames[" + std::to_string(i) + "] without name";
	if (!has(file, "profiles") || !file["profiles"].is_array())
		return "no profiles array";
	const nlohmann::json &profiles = file["profiles"];
	if (!profiles.empty() && (!has_index(file, "activeProfileIndex") || file["activeProfileIndex"] >= profiles.size()))
		return "activeProfileIndex missing or out of range";
	for (size_t p = 0; p < profiles.size(); p++) {
		const nlohmann::json &profile = profiles[p];
		std::string where = "profiles[" + std::to_string(p) + "]";
		if (!has_string(profile, "type") || profile["type"] != "evented" || !has_string(profile, "name") || !has_string(profile, "unit"))
			return where + ": not an evented profile with name and unit";
		if (!has_number(profile, "startValue") || !has_number(profile, "endValue") || !has(profile, "events") || !profile["events"].is_array())
			return where + ": missing startValue, endValue or events";
		double last = profile["startValue"], end = profile["endValue"];
		std::vector<uint64_t> open;
		const nlohmann::json &events = profile["events"];
		for (size_t i = 0; i < events.size(); i++) {
			const nlohmann::json &e = events[i];
			std::string at = where + ".events[" + std::to_string(i) + "]: ";
			if (!has_string(e, "type") || (e["type"] != "O" && e["type"] != "C"))
				return at + "type is neither O nor C";
			if (!has_index(e, "frame") || e["frame"] >= frames.size())
				return at + "frame index missing or out of range";
			if (!has_number(e, "at") || e["at"] < last || e["at"] > end)
				return at + "at missing, decreasing or beyond endValue";
			last = e["at"];
			if (e["type"] == "O") {
				open.push_back(e["frame"]);
				continue;
			}
			if (open.empty() || open.back() != e["frame"])
				return at + "C of frame " + e["frame"].dump() + " is not the innermost open frame";
			open.pop_back();
		}
		if (!open.empty())
			return where + ": frame " + std::to_string(open.back()) + " never closed";
	}
	return "";
}
