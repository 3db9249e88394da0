#include "session/interval.h"

#include <algorithm>
#include <cctype>
#include <cstring>
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

// counts become their gain since before (a count only grows).
void subtract_counts(PathNode &counts, const PathStats &before)
{
	counts.calls -= before.calls;
	counts.open -= before.open;
	counts.self_ns -= before.self_ns;
	counts.total_ns -= before.total_ns;
	counts.self_offcpu_ns -= std::min(counts.self_offcpu_ns, before.self_offcpu_ns);
	counts.probe_ns -= std::min(counts.probe_ns, before.probe_ns);
}

// A slot read while a program adds to it, one field after another, can show
// a time in one read and the part of it that is probe or off-CPU time (or
// the total it is in) only in the next: the gain would then have more probe
// time than self time, which no profile may hold (its readers reject such a
// node). The gain keeps its fields within each other (self within total,
// probe and off-CPU time within self); returned is what it holds back, for
// the next interval's gain: nothing is lost or counted twice.
PathNode hold_back_torn(PathNode &gain)
{
	PathNode held;
	held.self_ns = gain.self_ns - std::min(gain.self_ns, gain.total_ns);
	gain.self_ns -= held.self_ns;
	held.self_offcpu_ns = gain.self_offcpu_ns - std::min(gain.self_offcpu_ns, gain.self_ns);
	gain.self_offcpu_ns -= held.self_offcpu_ns;
	held.probe_ns = gain.probe_ns - std::min(gain.probe_ns, gain.self_ns);
	gain.probe_ns -= held.probe_ns;
	return held;
}

// now becomes its gain since before: the buckets of both are in bucket
// order; an extreme is exact when the interval set it, else bounded by the
// interval's own buckets.
void subtract_durations(Distribution &now, const PathStats &before)
{
	size_t left = 0;
	const BucketCount *was = before.buckets.begin();
	for (auto [b, n] : now.buckets) {
		while (was != before.buckets.end() && was->first < b)
			was++;
		uint64_t had = was != before.buckets.end() && was->first == b ? was->second : 0;
		if (n > had)
			now.buckets[left++] = {b, n - had};
	}
	now.buckets.truncate(left);
	if (left == 0) {
		now.min_ns = now.max_ns = 0;
		return;
	}
	uint32_t lowest = now.buckets[0].first, highest = now.buckets.back().first;
	if (before.max_ns && now.min_ns >= before.min_ns)
		now.min_ns = std::max<uint64_t>(now.min_ns, dist_bucket_low(lowest));
	if (before.max_ns && now.max_ns <= before.max_ns)
		now.max_ns = std::min<uint64_t>(now.max_ns, dist_bucket_high(highest) - 1);
}

bool gained(const PathNode &d)
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
void clear_gain(PathNode &s, Distribution &d)
{
	s.calls = s.open = s.self_ns = s.total_ns = s.self_offcpu_ns = s.probe_ns = 0;
	d.min_ns = d.max_ns = 0;
	d.buckets.clear();
}

} // namespace

namespace {

void put_varint(uint8_t *&at, uint64_t v)
{
	while (v >= 0x80) {
		*at++ = uint8_t(v) | 0x80;
		v >>= 7;
	}
	*at++ = uint8_t(v);
}

// Written by put_varint into memory of ours: no check of its end.
uint64_t get_varint(const uint8_t *&at)
{
	uint64_t v = 0;
	for (int shift = 0;; shift += 7) {
		uint8_t byte = *at++;
		v |= uint64_t(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
}

uint64_t get_id(const uint8_t *at)
{
	uint64_t id;
	memcpy(&id, at, sizeof id);
	return id;
}

// The path at `at`: its totals into out; returns where the next one starts.
size_t unpack(const std::vector<uint8_t> &bytes, size_t at, PathStats &out)
{
	const uint8_t *p = bytes.data() + at + sizeof(uint64_t);
	for (uint64_t *field : {&out.calls, &out.open, &out.self_ns, &out.total_ns, &out.self_offcpu_ns, &out.probe_ns,
				&out.min_ns, &out.max_ns})
		*field = get_varint(p);
	out.buckets.clear();
	for (uint64_t n = get_varint(p); n; n--) {
		uint32_t b = uint32_t(get_varint(p));
		out.buckets.emplace_back(b, get_varint(p));
	}
	return size_t(p - bytes.data());
}

// The bytes of a path's id, its eight counts (each at most 10 bytes as a
// varint) and its number of buckets.
constexpr size_t kPackedFixed = sizeof(uint64_t) + 8 * 10 + 10;
constexpr size_t kPackedBucket = 5 + 10;

} // namespace

void PackedTotals::reserve(size_t paths)
{
	// Address space: only the pages written are touched. ~30 bytes a path
	// measured (path_fill); more grows the vector.
	reserve_fresh(bytes_, paths * 48);
}

void PackedTotals::append(uint64_t path, const PathStats &s)
{
	PathNode counts;
	counts.calls = s.calls;
	counts.open = s.open;
	counts.self_ns = s.self_ns;
	counts.total_ns = s.total_ns;
	counts.self_offcpu_ns = s.self_offcpu_ns;
	counts.probe_ns = s.probe_ns;
	append(path, counts, Distribution{s.min_ns, s.max_ns, s.buckets});
}

void PackedTotals::append(uint64_t path, const PathNode &s, const Distribution &d)
{
	uint8_t packed[kPackedFixed];
	uint8_t *p = packed;
	memcpy(p, &path, sizeof path);
	p += sizeof path;
	for (uint64_t field : {s.calls, s.open, s.self_ns, s.total_ns, s.self_offcpu_ns, s.probe_ns, d.min_ns, d.max_ns})
		put_varint(p, field);
	put_varint(p, d.buckets.size());
	bytes_.insert(bytes_.end(), packed, p);
	for (auto [b, n] : d.buckets) {
		uint8_t bucket[kPackedBucket], *q = bucket;
		put_varint(q, b);
		put_varint(q, n);
		bytes_.insert(bytes_.end(), bucket, q);
	}
	count_++;
}

bool PackedTotals::Finder::find(uint64_t path, PathStats &out)
{
	const std::vector<uint8_t> &bytes = t_.bytes_;
	if (at_ < bytes.size() && get_id(bytes.data() + at_) == path) {
		at_ = unpack(bytes, at_, out);
		return true;
	}
	if (t_.empty())
		return false;
	if (!index_) {
		index_.emplace(t_.count_);
		offsets_.reserve(t_.count_);
		PathStats skipped;
		for (size_t at = 0; at < bytes.size(); at = unpack(bytes, at, skipped)) {
			index_->set(get_id(bytes.data() + at), uint32_t(offsets_.size()));
			offsets_.push_back(at);
		}
	}
	uint32_t j = index_->find(path);
	if (j == IdIndex::kNone)
		return false;
	at_ = unpack(bytes, offsets_[j], out);
	return true;
}

// In place: each of totals becomes its gain (minus its last totals); those
// that gained nothing and are no gainer's ancestor are dropped; what is
// left, in the order read, is the delta. The totals of the paths of
// processes alive are packed, in the order read, for the next one.
IntervalDelta PathDeltas::next(PathColumns totals, const std::function<bool(uint32_t)> &alive)
{
	IntervalDelta out;
	// Per path of totals: gained, an ancestor of one (nothing gained) or
	// dropped.
	enum : uint8_t { kDropped, kGained, kAncestor };
	std::vector<uint8_t> kept(totals.size(), kDropped);
	PackedTotals packed;
	packed.reserve(totals.size());
	AliveCache is_alive(alive);
	PackedTotals::Finder was(last_);
	PathStats before;
	size_t gainers = 0;
	for (size_t i = 0; i < totals.size(); i++) {
		PathNode &counts = totals.nodes[i];
		Distribution &durations = totals.dists[i];
		bool had = was.find(totals.path[i], before);
		PathNode gain = counts;
		if (had)
			subtract_counts(gain, before);
		PathNode held = hold_back_torn(gain);
		// Paths no longer in the map (deleted) or of processes gone are no
		// longer kept; those first seen are, as far as their gains went.
		if (is_alive(totals.tgid(i))) {
			counts.self_ns -= held.self_ns;
			counts.self_offcpu_ns -= held.self_offcpu_ns;
			counts.probe_ns -= held.probe_ns;
			packed.append(totals.path[i], counts, durations);
		} else {
			out.forget.push_back(totals.path[i]);
			out.forget_slots.push_back(i < totals.slot.size() ? totals.slot[i] : USDTPROF_NO_SLOT);
		}
		counts = gain;
		if (had)
			subtract_durations(durations, before);
		if (gained(counts))
			kept[i] = kGained, gainers++;
	}
	last_ = std::move(packed);
	// Ancestors of what gained, with nothing gained themselves: up to the
	// first one already kept (whose own ancestors are walked from it). None
	// when nothing gained, or everything did. Only a path that gained
	// nothing can be such an ancestor, so only those are indexed: a parent
	// not among them is kept already or not read, and the walk stops there
	// as it would. In a first interval nearly every path gained; an index of
	// the whole read (24 MB at a million paths, faulted in) found none.
	if (gainers && gainers < totals.size()) {
		IdIndex idle(totals.size() - gainers);
		for (size_t i = 0; i < totals.size(); i++)
			if (kept[i] == kDropped)
				idle.set(totals.path[i], uint32_t(i));
		for (size_t i = 0; i < totals.size(); i++) {
			if (kept[i] != kGained)
				continue;
			for (uint64_t parent = totals.parent[i]; parent;) {
				uint32_t a = idle.find(parent);
				if (a == IdIndex::kNone || kept[a] != kDropped)
					break;
				kept[a] = kAncestor;
				clear_gain(totals.nodes[a], totals.dists[a]);
				parent = totals.parent[a];
			}
		}
	}
	totals.keep_if([&](size_t i) { return kept[i] != kDropped; });
	out.paths = std::move(totals);
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
	// Probes that cost no more than the window's detach and attach are not
	// cut: sampling would cost usdtprof more than it saves.
	bool cheap = probes / attached <= in.window_ns;
	e.next_duty = full <= left || cheap ? 1.0 : std::clamp(left / full, min_duty, 1.0);
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
		if (full <= own || full <= l.window_ns) {
			duties[l.pid] = 1;
			pool += own - full; // less than nothing for one kept for its window's cost
		} else {
			over.push_back({own, full, &l});
		}
	}
	// The pool by water-filling, the least needy first.
	std::sort(over.begin(), over.end(),
		  [](const Need &a, const Need &b) { return a.full - a.own < b.full - b.own; });
	for (size_t i = 0; i < over.size(); i++) {
		const auto &[own, full, l] = over[i];
		double extra = std::min(full - own, pool / double(over.size() - i)); // < 0: pays for those kept
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
	return profile_file_size(profile);
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
