#include "interval.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_set>

namespace usdtprof {

namespace {

usdtprof_path_stats minus(const usdtprof_path_stats &now, const usdtprof_path_stats &before)
{
	usdtprof_path_stats d = now;
	d.calls -= before.calls;
	d.open -= before.open;
	d.self_ns -= before.self_ns;
	d.total_ns -= before.total_ns;
	d.self_offcpu_ns -= before.self_offcpu_ns;
	return d;
}

bool gained(const usdtprof_path_stats &d)
{
	return d.calls || d.open || d.self_ns || d.total_ns;
}

} // namespace

IntervalDelta PathDeltas::next(const std::vector<PathRecord> &totals, const std::function<bool(uint32_t)> &alive)
{
	IntervalDelta out;
	std::unordered_map<uint64_t, const PathRecord *> by_path;
	for (const PathRecord &r : totals)
		by_path[r.path] = &r;
	std::unordered_map<uint64_t, usdtprof_path_stats> delta;
	for (const PathRecord &r : totals) {
		auto last = last_.find(r.path);
		usdtprof_path_stats d = last == last_.end() ? r.stats : minus(r.stats, last->second);
		if (gained(d))
			delta[r.path] = d;
		last_[r.path] = r.stats;
	}
	// Ancestors of what gained, with nothing gained themselves.
	std::unordered_set<uint64_t> placed;
	for (const auto &[path, d] : delta) {
		for (uint64_t p = path; p && placed.insert(p).second;) {
			auto it = by_path.find(p);
			if (it == by_path.end())
				break;
			usdtprof_path_stats s = it->second->stats;
			auto gain = delta.find(p);
			if (gain != delta.end())
				s = gain->second;
			else
				s.calls = s.open = s.self_ns = s.total_ns = s.self_offcpu_ns = 0;
			out.records.push_back({p, s});
			p = it->second->stats.parent;
		}
	}
	std::map<uint32_t, bool> alive_cache;
	for (const PathRecord &r : totals) {
		auto [it, fresh] = alive_cache.try_emplace(r.stats.tgid, true);
		if (fresh)
			it->second = alive(r.stats.tgid);
		if (!it->second) {
			out.forget.push_back(r.path);
			last_.erase(r.path);
		}
	}
	for (const auto &[tgid, is_alive] : alive_cache)
		if (!is_alive)
			out.gone.push_back(tgid);
	// Paths no longer in the map (deleted) are no longer tracked.
	for (auto it = last_.begin(); it != last_.end();)
		it = by_path.count(it->first) ? std::next(it) : last_.erase(it);
	return out;
}

BudgetEstimate estimate_budget(const BudgetInput &in, double budget, double min_duty)
{
	BudgetEstimate e;
	double probes = in.hits * in.trap_ns + in.probe_ns;
	// The probes run in the target and count as its CPU time.
	double own = std::max(1.0, double(in.target_cpu_ns) - probes);
	e.overhead = (probes + in.fixed_ns) / own;
	double attached = std::clamp(in.attached, 1e-6, 1.0);
	// What the probes would cost attached all the time.
	double full = probes / own / attached;
	// Fixed costs take their share of the budget first; the probes get the rest.
	double left = std::max(0.0, budget - in.fixed_ns / own);
	e.next_duty = full <= left ? 1.0 : std::clamp(left / full, min_duty, 1.0);
	// A window that saw nothing says little: widen it step by step, never
	// jump to attaching all the time.
	if (in.attached < 1 && in.hits == 0)
		e.next_duty = std::clamp(in.attached * 2, min_duty, 1.0);
	return e;
}

std::vector<std::string> apply_retention(const std::string &dir, const std::string &prefix, size_t keep,
					 uint64_t max_bytes, double max_age_s)
{
	namespace fs = std::filesystem;
	struct Interval {
		std::vector<fs::path> files;
		uint64_t bytes = 0;
		fs::file_time_type newest = fs::file_time_type::min(); // file_clock's zero is in the future
	};
	std::map<std::string, Interval> intervals; // by stamp: names sort by time
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(dir, ec)) {
		std::string name = e.path().filename().string();
		if (name.rfind(prefix, 0) != 0 || !e.is_regular_file(ec))
			continue;
		std::string stamp = name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size());
		Interval &i = intervals[stamp];
		i.files.push_back(e.path());
		i.bytes += e.file_size(ec);
		i.newest = std::max(i.newest, e.last_write_time(ec));
	}
	uint64_t total = 0;
	for (const auto &[stamp, i] : intervals)
		total += i.bytes;
	auto now = fs::file_time_type::clock::now();
	std::vector<std::string> removed;
	for (auto it = intervals.begin(); it != intervals.end(); it = intervals.erase(it)) {
		double age = std::chrono::duration<double>(now - it->second.newest).count();
		bool too_many = keep && intervals.size() > keep;
		bool too_big = max_bytes && total > max_bytes;
		bool too_old = max_age_s > 0 && age > max_age_s;
		if (!too_many && !too_big && !too_old)
			break;
		for (const fs::path &f : it->second.files)
			if (fs::remove(f, ec))
				removed.push_back(f.string());
		total -= it->second.bytes;
	}
	return removed;
}

} // namespace usdtprof
