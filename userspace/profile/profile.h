// The recorded profile: what `record` writes and `report`/`export` read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "profile/distribution.h"

namespace usdtprof {

// The version record writes, and the versions a reader accepts
// (docs/profile-format.md).
inline constexpr int kProfileVersionJson = 1; // a JSON body
inline constexpr int kProfileVersionBinary = 2; // binary records, JSON metadata
inline constexpr int kProfileVersion = kProfileVersionBinary;
inline constexpr uint32_t kNoParent = UINT32_MAX;
// "writes version 2, reads versions 1 and 2" (usdtprof --version).
std::string profile_format_versions();

struct ProfileProcess {
	int32_t pid = 0; // as the host (usdtprof's pid namespace) numbers it
	std::string comm;
	std::vector<std::string> cmdline;
	// Its container identity (container.h); 0 / "" when none.
	int32_t ns_pid = 0;            // its pid in its own pid namespace, when that is another
	std::string cgroup{};          // its cgroup path, bounded and escaped
	std::string container_runtime{}; // the runtime its cgroup's name shows (docker, crio ...)
	std::string container_id{};    // the container id in its cgroup's name: 64 hex digits
	// monitor -p A,B, --all: the share of the interval its own probes were
	// attached (each process has its own window); 1: all of it.
	double sampled_fraction = 1.0;
};

struct ProfileProbe {
	std::string binary;   // file the probe sites are in
	std::string provider;
	std::string name;
	std::string role;     // "entry" or "exit"
	uint32_t sites = 0;
};

// One call path of one process. Times are nanoseconds.
struct PathNode {
	uint32_t parent = kNoParent; // index into Profile::nodes; parents come before children
	uint32_t function = 0;       // index into Profile::functions
	int32_t pid = 0;
	uint64_t calls = 0;          // activations, including open ones
	uint64_t open = 0;           // activations still running when recording stopped
	uint64_t self_ns = 0;        // exclusive time
	uint64_t total_ns = 0;       // inclusive time
	uint64_t self_offcpu_ns = 0; // the part of self_ns spent switched out
	// The part of self_ns that probe hits took, as the program's clock
	// measured them (our header's probes: "Probe time measured in band",
	// docs/design.md); 0 where nothing was measured so.
	uint64_t probe_ns = 0;
	// Its durations are Profile::dists[i], out of line: most profiles read
	// (generated, older, exported) have none, and a million paths each
	// carrying an empty 40-byte Distribution cost 40 MB to zero.
	// Not saved: after compensate(), the calibration's spread over this
	// path's calls; a self time below it is not precise.
	uint64_t uncertain_ns = 0;
};

// What one probed call adds to the self times usdtprof measures, for one
// kind of probe, calibrated on the recording's machine (calibration.h).
struct ProbeCost {
	std::string kind;          // "native", "value", "content", "content cached", "sql", "const"
	double own_ns = 0;         // added to the call's own self time
	double caller_ns = 0;      // added to its caller's self time
	double own_spread_ns = 0;  // half the 10th-90th percentile range over batches
	double caller_spread_ns = 0;
	uint32_t batches = 0;
	// Per call, what the runtime's own probe code adds that usdtprof cannot
	// calibrate in its own process: < 0 unknown, 0 none (native probes).
	double uncompensated_ns = -1;
	uint32_t rounds = 0; // rounds run over the recording (0: not known, older profiles)
};

struct Calibration {
	std::vector<ProbeCost> kinds;
	// Per function (as long as Profile::functions): index into kinds, -1 for
	// frames no probe of a known kind times ([running at attach], [task] ...).
	std::vector<int32_t> function_kinds;
	uint64_t cost_ns = 0;      // what calibrating took at the start
	bool offcpu_hook = true;   // the context-switch hook was on
	bool trace = false;        // trace mode (a ring-buffer event per hit)
};

// A span (record --span) of one process: intervals from its start probe to
// an end probe on one thread, beside the call tree. Times are nanoseconds.
struct ProfileSpan {
	std::string name;      // its spec, "PROVIDER:START/END"
	int32_t pid = 0;
	uint64_t count = 0;    // spans ended
	uint64_t total_ns = 0;
	uint64_t min_ns = 0, max_ns = 0;
	uint64_t open = 0;      // started, not ended at the stop (or their thread exited)
	uint64_t restarted = 0; // started again on a thread with one open: the open one dropped
	uint64_t unstarted = 0; // ended on a thread with none open (started before the attach)
	// Non-zero buckets of the durations' histogram (usdtprof_span_stats):
	// bucket index, count; ascending.
	std::vector<std::pair<uint32_t, uint64_t>> buckets;
};

// Bucket i of a span histogram holds durations in [lo, hi) ns.
uint64_t span_bucket_low(uint32_t bucket);
uint64_t span_bucket_high(uint32_t bucket);

struct Profile {
	std::vector<std::string> command;        // the launched command, empty when attached with -p
	std::vector<ProfileProcess> processes;
	std::vector<ProfileProbe> probes;
	int64_t start_unix_ns = 0;               // wall-clock start and stop
	int64_t stop_unix_ns = 0;
	uint64_t duration_ns = 0;                // monotonic recording time
	std::map<std::string, uint64_t> anomalies; // counter name -> count (see docs/profile-format.md)
	std::vector<std::string> functions;      // function names
	// Where each function is defined, "file:line" or "file" ("" when unknown);
	// empty, or as long as functions.
	std::vector<std::string> locations;
	// The share of the recording during which probes were attached (the
	// monitor's duty cycle); counts and times are as measured, never scaled.
	double sampled_fraction = 1.0;
	std::vector<PathNode> nodes;
	// The nodes carry duration distributions (recorded by a usdtprof that
	// keeps them; older profiles do not).
	bool distributions = false;
	// Per node, the inclusive durations of the calls the kernel timed
	// (completed ones, each ended by its own exit): as long as nodes when
	// distributions, else empty. Read them with node_dist().
	std::vector<Distribution> dists;
	// Absent in profiles of older versions and when calibration failed:
	// then times are shown as measured.
	std::optional<Calibration> calibration;
	// Profiles merged though calibrated apart (separate `record` runs): how
	// many of them were each compensated with its own calibration before
	// merging, and how many were merged; 0 otherwise. The merged profile has
	// no calibration, yet its times are compensated. Not saved.
	uint32_t compensated_parts = 0;
	uint32_t merged_parts = 0;
	// Then per merged part, in the order read: what its calibration left
	// uncompensated (uncompensated_kinds), "" for none or no calibration.
	std::vector<std::string> part_uncompensated;
	// Profiles merged with others that carry durations though they carry
	// none (recorded by a usdtprof older than them): the merge then has no
	// durations, rather than those of only some of its calls. Not saved.
	uint32_t parts_without_durations = 0;
	std::vector<ProfileSpan> spans;         // record --span, by name then pid
	// record --per-thread: each thread's call paths hang under a frame of
	// its own, "NAME (tid N)"; these are those frames' nodes, ascending.
	// Reports merge them away unless asked --per-thread (merge_threads).
	bool per_thread = false;
	std::vector<uint32_t> thread_nodes;
};

// The thread nodes' indices after a pass that moved the profile's nodes
// (moved[old] = new, kNoParent for a node dropped; new indices ascend with the
// old ones): those dropped are left out.
std::vector<uint32_t> moved_thread_nodes(const std::vector<uint32_t> &thread_nodes, const std::vector<uint32_t> &moved);

// Node i's durations; empty when the profile has none.
const Distribution &node_dist(const Profile &profile, size_t i);
// Adds a node, and its durations when the profile has them.
void add_node(Profile &profile, const PathNode &node, Distribution dist = {});
// Without its durations, for what never shows them (folded, pprof): their
// memory back, and compensation and the call tree skip them.
void drop_distributions(Profile &profile);
// A copy of profile as drop_distributions leaves it, without copying the
// durations first (40 bytes a path); profile is left as it was.
Profile copy_without_distributions(Profile &profile);
// Makes dists as long as nodes when the profile has distributions (new
// nodes without durations), else empty.
void fit_dists(Profile &profile);

// Whether any node has probe time measured in band (PathNode::probe_ns).
bool has_probe_time(const Profile &profile);

// Writes to a path the user gave, as write_output does (output_file.h).
Result<void> save_profile(const Profile &profile, const std::string &path);
// check_output's checks (output_file.h) for a profile's path, made before a
// recording; and a regular file already there must be a profile or empty:
// `record -o ./app -- ./app` never replaces the program (or a document) with one.
Result<void> check_profile_output(const std::string &path);
// Fails with one clear line for a missing, empty, truncated, corrupt,
// wrong-version or non-profile file.
Result<Profile> load_profile(const std::string &path);
class Sink;
// The file's bytes (header line + body) in a format version, into out as
// they are made (the body is made twice: its size and checksum lead).
void write_profile(const Profile &profile, Sink &out, int version = kProfileVersion);
// The size of write_profile's bytes in the current version, its body made
// once (not twice: no checksum).
uint64_t profile_file_size(const Profile &profile);
// The same as one string, and their parser, for tests and fuzzing.
std::string serialize_profile(const Profile &profile, int version = kProfileVersion);
Result<Profile> parse_profile(const std::string &bytes);

} // namespace usdtprof
