// `usdtprof monitor`'s pure logic: per-interval deltas of the kernel's
// cumulative path totals, the overhead budget, and file retention.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/id_index.h"
#include "engine/call_paths.h"

namespace usdtprof {

struct IntervalDelta {
	// What each path gained since the last interval, with its ancestors
	// (zero where they gained nothing) so the tree can be rebuilt.
	PathColumns paths;
	// Paths of processes that are gone, reported in full: to delete (with their slots).
	std::vector<uint64_t> forget;
	std::vector<uint32_t> forget_slots;
	std::vector<uint32_t> gone; // those processes

};

// Each path's totals as last read, packed for the next delta: its id, then
// only what a gain subtracts (the counts, the extremes, the nonzero buckets)
// as LEB128 varints, most of them a byte or two: ~30 bytes a path where a
// PathRecord is 112. Written in the order read, read back in that order.
class PackedTotals {
public:
	void reserve(size_t paths);
	void append(uint64_t path, const PathStats &s);
	void append(uint64_t path, const PathNode &counts, const Distribution &durations);
	size_t size() const { return count_; }
	size_t bytes() const { return bytes_.size(); }
	bool empty() const { return count_ == 0; }

	// Where each path is, by its id: read through in order, each path looked
	// for first right after the last one found (the kernel's map is read
	// bucket by bucket, the same order from one read to the next for the
	// paths it kept); an open-addressed index of them is built only when
	// that misses.
	class Finder {
	public:
		explicit Finder(const PackedTotals &totals) : t_(totals) {}
		// The totals of path into out (its buckets' memory reused); false
		// when it was not read last time.
		bool find(uint64_t path, PathStats &out);

	private:
		const PackedTotals &t_;
		size_t at_ = 0;   // the byte offset of the next path in order
		std::vector<size_t> offsets_; // of each path, with the index
		std::optional<IdIndex> index_;
	};

private:
	std::vector<uint8_t> bytes_;
	size_t count_ = 0;
};

// The kernel's totals only grow: a path's gain is its total now minus its
// total at the last read. Nothing is counted twice, and what the kernel adds
// while the map is read is in the next delta.
// At a million paths an interval's read is a million paths: next() takes
// them (by value: moved in), turns them into the deltas in place and keeps
// what it subtracts next time packed (PackedTotals, ~30 MB at 1M paths).
// unordered_maps of the totals, the gains and the ancestors placed cost
// 3.5-4.8 s of CPU an interval and ~500 MB; a flat array of the totals as
// PathRecords, 112 MB and, in the first interval, a copy of every record
// (docs/benchmarks.md, "What a monitor interval pays for a million paths").
class PathDeltas {
public:
	IntervalDelta next(PathColumns totals, const std::function<bool(uint32_t tgid)> &alive);
	IntervalDelta next(const std::vector<PathRecord> &totals, const std::function<bool(uint32_t tgid)> &alive)
	{
		return next(PathColumns::of(totals), alive);
	}
	size_t tracked() const { return last_.size(); }
	size_t tracked_bytes() const { return last_.bytes(); }

private:
	PackedTotals last_; // each path's totals at the last read, in the order read
};

// The share of the time probes may stay attached so that their estimated
// cost stays within budget (a fraction of the target's own CPU time).
struct BudgetInput {
	uint64_t hits = 0;           // probe hits in the interval
	double trap_ns = 0;          // measured cost of one hit's trap
	uint64_t target_cpu_ns = 0;  // the target's CPU time in the interval, probe cost included
	double attached = 1;         // the share of the interval probes were attached
	double probe_ns = 0;         // run time of the probes' programs in the interval
	double fixed_ns = 0;         // costs sampling cannot cut: the context-switch hook, usdtprof's own CPU
	double window_ns = 0;        // usdtprof's CPU to close the window and open it again, in the same span
};

struct BudgetEstimate {
	double overhead = 0;  // estimated cost, fixed costs included, over the target's own CPU time
	// Its parts, for /metrics' counters: the target's CPU time as read (probes
	// included), the probes' estimated cost and the fixed costs.
	uint64_t target_cpu_ns = 0, probe_ns = 0, fixed_ns = 0;
	double probe_share = 0; // what the budget leaves the probes, a share of the CPU time (fair_duties)
	double next_duty = 1; // attached share for the next interval, in [min_duty, 1]: the probes get
	                      // what the fixed costs leave of the budget; a sampled interval's next
	                      // window is at most twice its own
};

BudgetEstimate estimate_budget(const BudgetInput &in, double budget, double min_duty);

// monitor -p A,B and --all: one process's probes in the time measured.
struct ProcessLoad {
	int pid = 0;
	uint64_t hits = 0;   // its probe hits
	double attached = 1; // the share of the time its probes were attached
	uint64_t cpu_ns = 0; // its CPU time, its probes' included
	double duty = 1;     // its attached share now
	double window_ns = 0; // usdtprof's CPU to close its window and open it again (detach and attach its probes)
};

// One budget for the host, shared fairly among the processes. Each process
// has its own share of it: probe_share (what the budget leaves the probes,
// estimate_budget) of its own CPU time (its probes' cost, its hits at hit_ns
// each, taken out). A process whose probes, attached all the time (its hits
// over its attached share), cost no more keeps them all (duty 1), whatever
// the others do. What those leave unused is shared by the others max-min
// fairly ("water-filling"): each gets at most an equal part of what is
// left, on top of its own share, and is attached for that part of its
// cost, at least min_duty. A process whose probes, attached all the time,
// cost no more than closing and opening its window once (window_ns) keeps
// them all too: cutting them would cost usdtprof more than it saves (a
// process that barely ran: a few hits against a few us of its CPU); what
// it takes over its own share comes out of the others'. The sum stays
// within the host's budget. As
// estimate_budget, per process: a sampled window grows at most twofold an
// interval, one that saw no hit doubles, and hits with no CPU time read (it
// exited between the reads) keep its duty. By pid.
std::map<int, double> fair_duties(const std::vector<ProcessLoad> &loads, double hit_ns, double probe_share,
				  double min_duty);

struct ProfileTrim {
	uint64_t bytes_before = 0; // the profile's serialised size before
	size_t paths_before = 0;
	size_t paths_kept = 0;
};

// Caps an interval's profile at max_bytes serialised (0: no cap): keeps the
// heaviest call paths by inclusive time, each with its ancestors, and the
// functions they name; what a target floods in distinct names or paths
// cannot make one interval's files any larger. nullopt when it fitted.
std::optional<ProfileTrim> trim_profile(Profile &profile, uint64_t max_bytes);

// Milliseconds since the epoch of a monitor file's stamp, YYYYMMDDTHHMMSSmmmZ (UTC).
std::optional<int64_t> parse_interval_stamp(const std::string &stamp);

// Interval files in dir named PREFIX<stamp><extension>, one of extensions
// (the monitor's formats: .data, .pb.gz):
// the oldest intervals are removed while there are more than keep, their
// bytes exceed max_bytes or their stamps are older than max_age_s (0: no
// limit). Only regular files owned by the caller's euid with one link, whose
// stamps are not in the future, count: files planted by others (or stamped
// ahead to outlive the real ones) are neither counted nor removed, and the
// age is the stamp's, not a modification time anyone could set. Returns the
// files removed.
std::vector<std::string> apply_retention(const std::string &dir, const std::string &prefix,
					 const std::vector<std::string> &extensions, size_t keep,
					 uint64_t max_bytes, double max_age_s);

} // namespace usdtprof
