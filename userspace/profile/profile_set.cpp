// Several profiles as one: exact merge, monitor directories, time windows.
#include "profile/profile_set.h"
#include "profile/spans.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "profile/compensation.h"

namespace usdtprof {

namespace {

bool same_costs(const Calibration &a, const Calibration &b)
{
	auto key = [](const ProbeCost &k) {
		return std::tie(k.kind, k.own_ns, k.caller_ns, k.own_spread_ns, k.caller_spread_ns, k.batches, k.rounds,
				k.uncompensated_ns);
	};
	return a.offcpu_hook == b.offcpu_hook && a.trace == b.trace &&
	       std::equal(a.kinds.begin(), a.kinds.end(), b.kinds.begin(), b.kinds.end(),
			  [&](const ProbeCost &x, const ProbeCost &y) { return key(x) == key(y); });
}

// Every part calibrated alike (a monitor calibrates once for all its intervals).
bool one_calibration(const std::vector<Profile> &parts)
{
	return std::all_of(parts.begin(), parts.end(), [&](const Profile &p) {
		return p.calibration && parts[0].calibration && same_costs(*p.calibration, *parts[0].calibration);
	});
}

class Merger {
public:
	// drop_threads: a per-thread profile's thread frames are left out, their
	// paths put where their process's roots are (merge_threads).
	explicit Merger(bool keep_kinds, bool drop_threads = false)
		: keep_kinds_(keep_kinds), drop_threads_(drop_threads) {}

	void add(const Profile &p)
	{
		std::vector<uint32_t> moved(p.nodes.size(), kNoParent);
		out_.distributions = out_.distributions || p.distributions;
		fit_dists(out_);
		auto thread = p.thread_nodes.begin();
		for (size_t i = 0; i < p.nodes.size(); i++) {
			const PathNode &n = p.nodes[i];
			uint32_t parent = n.parent < i ? moved[n.parent] : kNoParent;
			bool is_thread = thread != p.thread_nodes.end() && *thread == i;
			thread += is_thread;
			if (is_thread && drop_threads_) {
				moved[i] = parent;
				continue;
			}
			moved[i] = node(n.pid, parent, function(p, n.function));
			if (is_thread)
				thread_nodes_.insert(moved[i]);
			PathNode &m = out_.nodes[moved[i]];
			m.calls += n.calls;
			m.open += n.open;
			m.self_ns += n.self_ns;
			m.total_ns += n.total_ns;
			m.self_offcpu_ns += n.self_offcpu_ns;
			m.probe_ns += n.probe_ns;
			m.uncertain_ns += n.uncertain_ns; // a part compensated apart: its spread
			if (out_.distributions)
				add_distribution(out_.dists[moved[i]], node_dist(p, i));
		}
		out_.per_thread = out_.per_thread || (p.per_thread && !drop_threads_);
		for (const ProfileProcess &proc : p.processes)
			if (pids_.insert(proc.pid).second)
				out_.processes.push_back(proc);
		for (const ProfileProbe &probe : p.probes)
			add_probe(probe);
		for (const auto &[name, count] : p.anomalies)
			out_.anomalies[name] += count;
		for (const ProfileSpan &span : p.spans)
			add_span(out_.spans, span);
		if (out_.command.empty())
			out_.command = p.command;
		with_locations_ = with_locations_ || !p.locations.empty();
	}

	Profile take()
	{
		if (!with_locations_)
			out_.locations.clear();
		out_.thread_nodes.assign(thread_nodes_.begin(), thread_nodes_.end());
		return std::move(out_);
	}

	std::vector<int32_t> kinds; // per merged function, when keep_kinds

private:
	uint32_t function(const Profile &p, uint32_t f)
	{
		static const std::string unknown = "<unknown>";
		const std::string &name = f < p.functions.size() ? p.functions[f] : unknown;
		const std::string &location = f < p.locations.size() ? p.locations[f] : std::string();
		auto [it, added] = functions_.try_emplace({name, location}, uint32_t(out_.functions.size()));
		if (added) {
			out_.functions.push_back(name);
			out_.locations.push_back(location);
			if (keep_kinds_) {
				const auto &fk = p.calibration->function_kinds;
				kinds.push_back(f < fk.size() ? fk[f] : -1);
			}
		}
		return it->second;
	}

	uint32_t node(int32_t pid, uint32_t parent, uint32_t function)
	{
		auto [it, added] = nodes_.try_emplace({pid, parent, function}, uint32_t(out_.nodes.size()));
		if (added) {
			PathNode n;
			n.pid = pid;
			n.parent = parent;
			n.function = function;
			add_node(out_, n);
		}
		return it->second;
	}

	void add_probe(const ProfileProbe &probe)
	{
		for (ProfileProbe &known : out_.probes)
			if (std::tie(known.binary, known.provider, known.name, known.role) ==
			    std::tie(probe.binary, probe.provider, probe.name, probe.role)) {
				known.sites = std::max(known.sites, probe.sites);
				return;
			}
		out_.probes.push_back(probe);
	}

	bool keep_kinds_, drop_threads_, with_locations_ = false;
	std::set<uint32_t> thread_nodes_;
	Profile out_;
	std::map<std::pair<std::string, std::string>, uint32_t> functions_;
	std::map<std::tuple<int32_t, uint32_t, uint32_t>, uint32_t> nodes_;
	std::set<int32_t> pids_;
};

void add_times(Profile &out, const std::vector<Profile> &parts)
{
	double sampled = 0;
	for (const Profile &p : parts) {
		out.duration_ns += p.duration_ns;
		sampled += p.sampled_fraction * double(p.duration_ns);
		if (p.start_unix_ns && (!out.start_unix_ns || p.start_unix_ns < out.start_unix_ns))
			out.start_unix_ns = p.start_unix_ns;
		out.stop_unix_ns = std::max(out.stop_unix_ns, p.stop_unix_ns);
	}
	out.sampled_fraction = out.duration_ns ? sampled / double(out.duration_ns) : 1.0;
	// Each process's own share (monitor -p A,B, --all), over the intervals it is in.
	std::map<int32_t, std::pair<double, double>> shares; // sampled ns, ns
	for (const Profile &p : parts)
		for (const ProfileProcess &proc : p.processes) {
			shares[proc.pid].first += proc.sampled_fraction * double(p.duration_ns);
			shares[proc.pid].second += double(p.duration_ns);
		}
	for (ProfileProcess &proc : out.processes)
		if (auto s = shares.find(proc.pid); s != shares.end() && s->second.second > 0)
			proc.sampled_fraction = std::clamp(s->second.first / s->second.second, 1e-6, 1.0);
}

int64_t stop_of(const Profile &p) { return p.stop_unix_ns ? p.stop_unix_ns : p.start_unix_ns + int64_t(p.duration_ns); }

} // namespace

std::string local_time(int64_t unix_ns)
{
	time_t secs = unix_ns / 1'000'000'000;
	tm t;
	localtime_r(&secs, &t);
	char buf[32];
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &t);
	return buf;
}

namespace {

// A directory stands for its monitor profiles, by name (so by time).
Result<std::vector<std::string>> expand(const std::vector<std::string> &paths)
{
	namespace fs = std::filesystem;
	std::vector<std::string> files;
	for (const std::string &path : paths) {
		std::error_code ec;
		if (!fs::is_directory(path, ec)) {
			files.push_back(path);
			continue;
		}
		std::vector<std::string> found;
		for (const fs::directory_entry &e : fs::directory_iterator(path, ec)) {
			std::string name = e.path().filename();
			// Regular files only: never block on a FIFO someone left there.
			if (name.starts_with("usdtprof-") && name.ends_with(".data") && e.is_regular_file(ec) && !e.is_symlink(ec))
				found.push_back(e.path());
		}
		if (ec)
			return Error{path + ": " + ec.message()};
		if (found.empty())
			return Error{path + ": a directory without usdtprof-*.data profiles (a monitor writes them)"};
		std::sort(found.begin(), found.end());
		files.insert(files.end(), found.begin(), found.end());
	}
	return files;
}

// Keeps the profiles whose recorded span overlaps the window.
Result<std::vector<Profile>> in_window(std::vector<Profile> all, const ProfileInputs &in)
{
	int64_t oldest = INT64_MAX, newest = 0;
	for (const Profile &p : all) {
		oldest = std::min(oldest, p.start_unix_ns);
		newest = std::max(newest, stop_of(p));
	}
	int64_t since = INT64_MIN, until = INT64_MAX;
	if (!in.since.empty()) {
		auto t = parse_clock_time(in.since, newest, false);
		if (!t)
			return t.error();
		since = *t;
	}
	if (!in.until.empty()) {
		auto t = parse_clock_time(in.until, in.since.empty() ? oldest : since, true);
		if (!t)
			return t.error();
		until = *t;
	}
	if (since >= until)
		return Error{"--since " + in.since + " is not before --until " + in.until};
	std::erase_if(all, [&](const Profile &p) { return !(p.start_unix_ns < until && stop_of(p) > since); });
	if (all.empty())
		return Error{"no profile was recorded between " + (since == INT64_MIN ? "the start" : local_time(since)) +
			     " and " + (until == INT64_MAX ? "the end" : local_time(until))};
	return all;
}

} // namespace

Profile merge_profiles(const std::vector<Profile> &parts, bool raw)
{
	bool keep = !parts.empty() && one_calibration(parts);
	Merger merger(keep);
	for (const Profile &p : parts)
		merger.add(keep || raw || !p.calibration ? p : compensate(p));
	Profile out = merger.take();
	add_times(out, parts);
	// A part with call paths but no durations (an older usdtprof's file):
	// the durations of the other parts' calls alone would pass for all of
	// them (min, p50, p99, max of half the calls), so none are shown.
	auto without = std::count_if(parts.begin(), parts.end(), [](const Profile &p) {
		return !p.distributions && !p.nodes.empty();
	});
	if (without && out.distributions) {
		drop_distributions(out);
		out.parts_without_durations = uint32_t(without);
	}
	if (keep) {
		out.calibration = parts[0].calibration;
		out.calibration->function_kinds = merger.kinds;
	} else if (!raw) {
		out.compensated_parts = uint32_t(std::count_if(parts.begin(), parts.end(), [](const Profile &p) {
			return p.calibration.has_value();
		}));
		out.merged_parts = out.compensated_parts ? uint32_t(parts.size()) : 0;
		if (out.compensated_parts)
			for (const Profile &p : parts)
				out.part_uncompensated.push_back(p.calibration ? uncompensated_kinds(*p.calibration) : "");
	}
	return out;
}

Profile merge_threads(const Profile &p)
{
	Merger merger(p.calibration.has_value(), true);
	merger.add(p);
	Profile out = merger.take();
	out.start_unix_ns = p.start_unix_ns;
	out.stop_unix_ns = p.stop_unix_ns;
	out.duration_ns = p.duration_ns;
	out.sampled_fraction = p.sampled_fraction;
	out.compensated_parts = p.compensated_parts;
	out.merged_parts = p.merged_parts;
	out.part_uncompensated = p.part_uncompensated;
	if (p.calibration) {
		out.calibration = p.calibration;
		out.calibration->function_kinds = merger.kinds;
	}
	return out;
}

Result<int64_t> parse_clock_time(const std::string &text, int64_t anchor_ns, bool after)
{
	static const std::regex full(R"((\d{4})-(\d{2})-(\d{2})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)");
	static const std::regex clock(R"((\d{1,2}):(\d{2})(?::(\d{2}))?)");
	std::smatch m;
	time_t anchor = anchor_ns / 1'000'000'000;
	tm t;
	localtime_r(&anchor, &t);
	int at = 0; // index of the hour group
	if (std::regex_match(text, m, full)) {
		t.tm_year = std::stoi(m[1]) - 1900;
		t.tm_mon = std::stoi(m[2]) - 1;
		t.tm_mday = std::stoi(m[3]);
		at = 4;
	} else if (std::regex_match(text, m, clock)) {
		at = 1;
	} else {
		return Error{"'" + text + "' is not a time (HH:MM, HH:MM:SS or YYYY-MM-DD HH:MM[:SS])"};
	}
	int hour = std::stoi(m[at]), min = std::stoi(m[at + 1]), sec = m[at + 2].matched ? std::stoi(m[at + 2]) : 0;
	if (hour > 23 || min > 59 || sec > 59 || (at == 4 && (t.tm_mon > 11 || t.tm_mday < 1 || t.tm_mday > 31)))
		return Error{"'" + text + "' is not a time (HH:MM, HH:MM:SS or YYYY-MM-DD HH:MM[:SS])"};
	t.tm_hour = hour;
	t.tm_min = min;
	t.tm_sec = sec;
	t.tm_isdst = -1;
	time_t secs = mktime(&t);
	// A bare time of day: that time on the day that puts it on the asked side of the anchor.
	for (int step = after ? 1 : -1; at == 1 && (after ? secs < anchor : secs > anchor);) {
		t.tm_mday += step;
		t.tm_isdst = -1;
		secs = mktime(&t);
	}
	return int64_t(secs) * 1'000'000'000;
}

Result<LoadedProfiles> load_profiles(const ProfileInputs &inputs)
{
	auto files = expand(inputs.paths);
	if (!files)
		return files.error();
	std::vector<Profile> parts;
	for (const std::string &file : *files) {
		auto p = load_profile(file);
		if (!p)
			return p.error();
		parts.push_back(std::move(*p));
	}
	if (!inputs.since.empty() || !inputs.until.empty()) {
		auto kept = in_window(std::move(parts), inputs);
		if (!kept)
			return kept.error();
		parts = std::move(*kept);
	}
	LoadedProfiles out;
	out.files = parts.size();
	out.profile = parts.size() == 1 ? std::move(parts[0]) : merge_profiles(parts, inputs.raw);
	if (inputs.per_thread && !out.profile.per_thread)
		return Error{(files->size() == 1 ? (*files)[0] : std::to_string(files->size()) + " profiles") +
			     ": not recorded per thread; --per-thread needs a profile of `usdtprof record --per-thread`"};
	if (!inputs.per_thread && out.profile.per_thread)
		out.profile = merge_threads(out.profile);
	out.first_ns = out.profile.start_unix_ns;
	out.last_ns = out.profile.stop_unix_ns;
	return out;
}

} // namespace usdtprof
