#include "session/interval.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "base/huge_pages.h"
#include "base/id_index.h"
#include "base/sink.h"

namespace usdtprof {

namespace {

// The buckets of now less those of before (both in bucket order); a count
// only grows.
Buckets minus(const Buckets &now, const Buckets &before)
{
	Buckets left;
	const BucketCount *was = before.begin();
	for (auto [b, n] : now) {
		while (was != before.end() && was->first < b)
			was++;
		uint64_t had = was != before.end() && was->first == b ? was->second : 0;
		if (n > had)
			left.emplace_back(b, n - had);
	}
	return left;
}

PathStats minus(const PathStats &now, const PathStats &before)
{
	PathStats d = now;
	d.calls -= before.calls;
	d.open -= before.open;
	d.self_ns -= before.self_ns;
	d.total_ns -= before.total_ns;
	d.self_offcpu_ns -= before.self_offcpu_ns;
	// The interval's durations: the counts subtract; an extreme is exact
	// when the interval set it, else bounded by the interval's own buckets.
	d.buckets = minus(now.buckets, before.buckets);
	if (d.buckets.empty()) {
		d.min_ns = d.max_ns = 0;
		return d;
	}
	uint32_t lowest = d.buckets[0].first, highest = d.buckets.back().first;
	if (before.max_ns && now.min_ns >= before.min_ns)
		d.min_ns = std::max<uint64_t>(now.min_ns, dist_bucket_low(lowest));
	if (before.max_ns && now.max_ns <= before.max_ns)
		d.max_ns = std::min<uint64_t>(now.max_ns, dist_bucket_high(highest) - 1);
	return d;
}

bool gained(const PathStats &d)
{
	return d.calls || d.open || d.self_ns || d.total_ns;
}

// Whether each process is alive, asked once per process: records come
// grouped by nothing, so the last answer is kept beside the cache.
class AliveCache {
public:
	explicit AliveCache(const std::function<bool(uint32_t)> &alive) : alive_(alive) {}
	bool operator()(uint32_t tgid)
	{
		if (tgid == last_tgid_ && known_)
			return last_;
		auto [it, fresh] = seen_.try_emplace(tgid, true);
		if (fresh)
			it->second = alive_(tgid);
		known_ = true;
		last_tgid_ = tgid;
		return last_ = it->second;
	}
	const std::map<uint32_t, bool> &seen() const { return seen_; }

private:
	const std::function<bool(uint32_t)> &alive_;
	std::map<uint32_t, bool> seen_;
	bool known_ = false, last_ = false;
	uint32_t last_tgid_ = 0;
};

// A path kept only for the tree: nothing gained.
void clear_gain(PathStats &s)
{
	s.calls = s.open = s.self_ns = s.total_ns = s.self_offcpu_ns = 0;
	s.min_ns = s.max_ns = 0;
	s.buckets.clear();
}

// Where each path of a read was in the last one. The kernel's map is read
// bucket by bucket, in the same order from one read to the next for the
// paths it kept, and last_ keeps that order (paths first seen are appended):
// each path is looked for first right after the last one found; the index
// of last_ is built only when that misses.
class LastRead {
public:
	explicit LastRead(const std::vector<PathRecord> &last) : last_(last) {}
	uint32_t find(uint64_t path)
	{
		if (next_ < last_.size() && last_[next_].path == path)
			return uint32_t(next_++);
		if (!index_) {
			index_.emplace(last_.size());
			for (size_t j = 0; j < last_.size(); j++)
				index_->set(last_[j].path, uint32_t(j));
		}
		uint32_t j = index_->find(path);
		if (j != IdIndex::kNone)
			next_ = j + 1;
		return j;
	}

private:
	const std::vector<PathRecord> &last_;
	size_t next_ = 0;
	std::optional<IdIndex> index_;
};

} // namespace

// In place: each of totals becomes its gain (minus its last totals, which
// it replaces in last_); those that gained nothing and are no gainer's
// ancestor are dropped; what is left, in the order read, is the delta.
IntervalDelta PathDeltas::next(std::vector<PathRecord> totals, const std::function<bool(uint32_t)> &alive)
{
	IntervalDelta out;
	// Per record of totals: gained, an ancestor of one (nothing gained) or
	// dropped; per path of last_: still in the map, its process alive.
	enum : uint8_t { kDropped, kGained, kAncestor };
	std::vector<uint8_t> kept = huge_vector<uint8_t>(totals.size(), kDropped);
	std::vector<uint8_t> tracked = huge_vector<uint8_t>(last_.size(), 0);
	std::vector<PathRecord> fresh; // paths first seen now, their totals
	reserve_huge(fresh, totals.size()); // address space: only what is used is touched
	AliveCache is_alive(alive);
	LastRead was(last_);
	size_t gainers = 0;
	for (size_t i = 0; i < totals.size(); i++) {
		PathRecord &r = totals[i];
		bool lives = is_alive(r.stats.tgid);
		if (!lives)
			out.forget.push_back(r.path);
		uint32_t j = was.find(r.path);
		if (j == IdIndex::kNone) {
			if (lives)
				fresh.push_back(r);
		} else {
			PathStats gain = minus(r.stats, last_[j].stats);
			last_[j].stats = std::move(r.stats);
			r.stats = std::move(gain);
			tracked[j] = lives;
		}
		if (gained(r.stats))
			kept[i] = kGained, gainers++;
	}
	// Ancestors of what gained, with nothing gained themselves: up to the
	// first one already kept (whose own ancestors are walked from it). None
	// when nothing gained, or everything did.
	if (gainers && gainers < totals.size()) {
		IdIndex now(totals.size());
		for (size_t i = 0; i < totals.size(); i++)
			now.set(totals[i].path, uint32_t(i));
		for (size_t i = 0; i < totals.size(); i++) {
			if (kept[i] != kGained)
				continue;
			for (uint64_t parent = totals[i].stats.parent; parent;) {
				uint32_t a = now.find(parent);
				if (a == IdIndex::kNone || kept[a] != kDropped)
					break;
				kept[a] = kAncestor;
				clear_gain(totals[a].stats);
				parent = totals[a].stats.parent;
			}
		}
	}
	// Paths no longer in the map (deleted) or of processes gone are no
	// longer tracked; those first seen are.
	size_t left = 0;
	for (size_t j = 0; j < last_.size(); j++)
		if (tracked[j])
			last_[left++] = std::move(last_[j]);
	last_.resize(left);
	if (last_.empty())
		last_ = std::move(fresh);
	else
		last_.insert(last_.end(), std::make_move_iterator(fresh.begin()), std::make_move_iterator(fresh.end()));
	size_t delta = 0;
	for (size_t i = 0; i < totals.size(); i++)
		if (kept[i] != kDropped)
			totals[delta++] = std::move(totals[i]);
	totals.resize(delta);
	out.records = std::move(totals);
	for (const auto &[tgid, lives] : is_alive.seen())
		if (!lives)
			out.gone.push_back(tgid);
	return out;
}

BudgetEstimate estimate_budget(const BudgetInput &in, double budget, double min_duty)
{
	BudgetEstimate e;
	double probes = in.hits * in.trap_ns + in.probe_ns;
	// The probes run in the target and count as its CPU time.
	double own = std::max(1.0, double(in.target_cpu_ns) - probes);
	e.overhead = (probes + in.fixed_ns) / own;
	e.target_cpu_ns = in.target_cpu_ns;
	e.probe_ns = uint64_t(std::max(0.0, probes));
	e.fixed_ns = uint64_t(std::max(0.0, in.fixed_ns));
	double attached = std::clamp(in.attached, 1e-6, 1.0);
	// What the probes would cost attached all the time.
	double full = probes / own / attached;
	// Fixed costs take their share of the budget first, the probes get the
	// rest, but never less than half: sampling cannot cut the fixed costs,
	// and in an interval where the target barely ran (it waits, starts or
	// exits; it is starved) usdtprof's own CPU alone may exceed the budget:
	// cutting the probes to nothing would then lose their calls and still
	// not meet it.
	double left = std::max(budget / 2, budget - in.fixed_ns / own);
	e.probe_share = left;
	e.next_duty = full <= left ? 1.0 : std::clamp(left / full, min_duty, 1.0);
	// A window that saw nothing says little: widen it step by step, never
	// jump to attaching all the time.
	if (in.attached < 1 && in.hits == 0)
		e.next_duty = std::clamp(in.attached * 2, min_duty, 1.0);
	// Hits with no CPU time read: the target exited between the reads.
	// Nothing is learnt: the window stays. (Not so for a CPU time merely
	// below the estimated cost: a hot target's CPU time is nearly all probes.)
	else if (in.target_cpu_ns == 0)
		e.next_duty = std::clamp(in.attached, min_duty, 1.0);
	// A sampled interval's estimate rests on its window alone, which may
	// have fallen in a quiet moment (a server before its load arrives, a
	// lull): the window grows at most twofold an interval, never jumps to
	// attaching all the time. Cutting it is immediate.
	else if (in.attached < 1)
		e.next_duty = std::min(e.next_duty, std::clamp(in.attached * 2, min_duty, 1.0));
	return e;
}

std::map<int, double> fair_duties(const std::vector<ProcessLoad> &loads, double hit_ns, double probe_share,
				  double min_duty)
{
	// Each one's own share and its cost attached all the time; what the
	// processes within their shares leave unused is pooled.
	struct Need {
		double own, full;
		const ProcessLoad *load;
	};
	std::vector<Need> over;
	double pool = 0;
	std::map<int, double> duties;
	for (const ProcessLoad &l : loads) {
		double probes = double(l.hits) * hit_ns;
		double own = probe_share * std::max(0.0, double(l.cpu_ns) - probes);
		double full = probes / std::clamp(l.attached, 1e-6, 1.0);
		if (full <= own) {
			duties[l.pid] = 1;
			pool += own - full;
		} else {
			over.push_back({own, full, &l});
		}
	}
	// The pool by water-filling, the least needy first.
	std::sort(over.begin(), over.end(),
		  [](const Need &a, const Need &b) { return a.full - a.own < b.full - b.own; });
	for (size_t i = 0; i < over.size(); i++) {
		const auto &[own, full, l] = over[i];
		double extra = std::min(full - own, pool / double(over.size() - i));
		pool -= extra;
		duties[l->pid] = std::clamp((own + extra) / full, min_duty, 1.0);
	}
	for (const ProcessLoad &l : loads) {
		double &duty = duties[l.pid];
		// As estimate_budget: a window that saw nothing doubles; hits with no
		// CPU time read teach nothing; a sampled window grows at most twofold.
		if (l.attached < 1 && l.hits == 0)
			duty = std::clamp(l.attached * 2, min_duty, 1.0);
		else if (l.cpu_ns == 0)
			duty = std::clamp(l.duty, min_duty, 1.0);
		else if (l.attached < 1)
			duty = std::min(duty, std::clamp(l.attached * 2, min_duty, 1.0));
	}
	return duties;
}

namespace {

// The nodes to keep within budget bytes: the heaviest by inclusive time
// first, each with its ancestors; per node its share of the fixed bytes,
// per function its name and location the first time.
std::vector<bool> heaviest_nodes(const Profile &p, double node_bytes, double budget)
{
	std::vector<uint32_t> order(p.nodes.size());
	for (uint32_t i = 0; i < order.size(); i++)
		order[i] = i;
	std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
		return std::tie(p.nodes[a].total_ns, p.nodes[a].calls) > std::tie(p.nodes[b].total_ns, p.nodes[b].calls);
	});
	std::vector<bool> keep(p.nodes.size()), named(p.functions.size());
	double used = 0;
	for (uint32_t n : order) {
		double cost = 0;
		std::vector<uint32_t> added;
		std::vector<uint32_t> names;
		for (uint32_t a = n; a != kNoParent && a < keep.size() && !keep[a]; a = p.nodes[a].parent) {
			added.push_back(a);
			cost += node_bytes;
			uint32_t f = p.nodes[a].function;
			if (f < named.size() && !named[f] && std::find(names.begin(), names.end(), f) == names.end()) {
				names.push_back(f);
				cost += double(p.functions[f].size() + (f < p.locations.size() ? p.locations[f].size() : 0));
			}
		}
		if (used + cost > budget)
			break;
		used += cost;
		for (uint32_t a : added)
			keep[a] = true;
		for (uint32_t f : names)
			named[f] = true;
	}
	return keep;
}

// The profile with only the kept nodes, and only the functions they name.
void keep_nodes(Profile &p, const std::vector<bool> &keep)
{
	std::vector<uint32_t> node_index(p.nodes.size(), kNoParent), function_index(p.functions.size(), kNoParent);
	std::vector<PathNode> nodes;
	std::vector<Distribution> dists;
	std::vector<std::string> functions, locations;
	std::vector<int32_t> kinds; // the calibration's, per function
	for (size_t i = 0; i < p.nodes.size(); i++) {
		if (!keep[i])
			continue;
		PathNode n = p.nodes[i];
		if (function_index[n.function] == kNoParent) {
			function_index[n.function] = uint32_t(functions.size());
			functions.push_back(std::move(p.functions[n.function]));
			if (!p.locations.empty())
				locations.push_back(std::move(p.locations[n.function]));
			if (p.calibration)
				kinds.push_back(n.function < p.calibration->function_kinds.size()
							? p.calibration->function_kinds[n.function] : -1);
		}
		n.function = function_index[n.function];
		n.parent = n.parent == kNoParent ? kNoParent : node_index[n.parent];
		node_index[i] = uint32_t(nodes.size());
		nodes.push_back(n);
		if (i < p.dists.size())
			dists.push_back(std::move(p.dists[i]));
	}
	p.nodes = std::move(nodes);
	p.dists = std::move(dists);
	p.functions = std::move(functions);
	p.locations = std::move(locations);
	if (p.calibration)
		p.calibration->function_kinds = std::move(kinds);
}

} // namespace

namespace {

// The size of the profile's file, counted as it is made, never held.
uint64_t file_size(const Profile &profile)
{
	ByteCounter counter;
	write_profile(profile, counter);
	return counter.bytes;
}

} // namespace

std::optional<ProfileTrim> trim_profile(Profile &profile, uint64_t max_bytes)
{
	if (max_bytes == 0)
		return std::nullopt;
	uint64_t bytes = file_size(profile);
	if (bytes <= max_bytes)
		return std::nullopt;
	ProfileTrim trim{bytes, profile.nodes.size(), 0};
	double names = 0;
	for (size_t f = 0; f < profile.functions.size(); f++)
		names += double(profile.functions[f].size() + (f < profile.locations.size() ? profile.locations[f].size() : 0));
	double node_bytes = std::max(1.0, (double(bytes) - names) / double(std::max<size_t>(1, profile.nodes.size())));
	// The estimate ignores what is not per node; aim lower until it fits.
	for (double budget = double(max_bytes) * 0.9;; budget *= 0.8) {
		Profile candidate = profile;
		keep_nodes(candidate, heaviest_nodes(profile, node_bytes, budget));
		if (file_size(candidate) <= max_bytes || candidate.nodes.empty()) {
			profile = std::move(candidate);
			break;
		}
	}
	trim.paths_kept = profile.nodes.size();
	return trim;
}

std::optional<int64_t> parse_interval_stamp(const std::string &stamp)
{
	// YYYYMMDDTHHMMSSmmmZ, as the monitor names its files.
	if (stamp.size() != 19 || stamp[8] != 'T' || stamp[18] != 'Z')
		return std::nullopt;
	for (size_t i = 0; i < 18; i++)
		if (i != 8 && !isdigit(static_cast<unsigned char>(stamp[i])))
			return std::nullopt;
	auto num = [&](size_t at, size_t len) { return std::stoi(stamp.substr(at, len)); };
	tm t{};
	t.tm_year = num(0, 4) - 1900;
	t.tm_mon = num(4, 2) - 1;
	t.tm_mday = num(6, 2);
	t.tm_hour = num(9, 2);
	t.tm_min = num(11, 2);
	t.tm_sec = num(13, 2);
	if (t.tm_mon > 11 || t.tm_mday < 1 || t.tm_mday > 31 || t.tm_hour > 23 || t.tm_min > 59 || t.tm_sec > 60)
		return std::nullopt;
	return int64_t(timegm(&t)) * 1000 + num(15, 3);
}

std::vector<std::string> apply_retention(const std::string &dir, const std::string &prefix,
					 const std::vector<std::string> &extensions, size_t keep,
					 uint64_t max_bytes, double max_age_s)
{
	namespace fs = std::filesystem;
	struct Interval {
		std::vector<fs::path> files;
		uint64_t bytes = 0;
		int64_t stamp_ms = 0;
	};
	std::map<std::string, Interval> intervals; // by stamp: names sort by time
	int64_t now_ms = int64_t(time(nullptr)) * 1000;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator(dir, ec)) {
		// Only what the monitor writes: PREFIX<stamp><one of extensions>, a
		// regular file of ours with one link, stamped no later than now
		// (a day of slack for clock steps). Anything else, planted by whoever
		// can write the directory, is neither counted nor removed.
		std::string name = e.path().filename().string();
		if (name.rfind(prefix, 0) != 0)
			continue;
		std::string stamp = name.substr(prefix.size(), 19), suffix = name.substr(std::min(name.size(), prefix.size() + 19));
		auto stamp_ms = parse_interval_stamp(stamp);
		if (!stamp_ms || *stamp_ms > now_ms + 86400 * 1000 || std::find(extensions.begin(), extensions.end(), suffix) == extensions.end())
			continue;
		struct stat st;
		if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
			continue;
		Interval &i = intervals[stamp];
		i.files.push_back(e.path());
		i.bytes += uint64_t(st.st_size);
		i.stamp_ms = *stamp_ms;
	}
	uint64_t total = 0;
	for (const auto &[stamp, i] : intervals)
		total += i.bytes;
	std::vector<std::string> removed;
	for (auto it = intervals.begin(); it != intervals.end(); it = intervals.erase(it)) {
		double age = double(now_ms - it->second.stamp_ms) / 1000;
		bool too_many = keep && intervals.size() > keep;
		bool too_big = max_bytes && total > max_bytes;
		bool too_old = max_age_s > 0 && age > max_age_s;
		if (!too_many && !too_big && !too_old)
			break;
		for (const fs::path &f : it->second.files)
			if (unlink(f.c_str()) == 0)
				removed.push_back(f.string());
		total -= it->second.bytes;
	}
	return removed;
}

} // namespace usdtprof
