// The outputs of an interval or a recording as a list of sinks, each given
// the profile made in turn: record and trace write the profile file (and the
// trace), monitor an interval's files, /metrics and a push.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "report/trace.h"
#include "serve/metrics.h"
#include "target/naming.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

class MetricsServer;
class ProfilePusher;

// What a sink is given: the profile (measured times) and what the sinks
// before it rendered, for those after it to reuse.
struct ProfileOutput {
	ProfileOutput(Profile &p, int64_t begin_unix) : profile(p), begin_unix_ns(begin_unix) {}
	Profile &profile;
	int64_t begin_unix_ns = 0;                  // the interval's or the recording's start
	std::map<std::string, std::string> rendered; // by format name (IntervalFilesSink's keep_rendered)
	int32_t pid = 0;                            // a push's labels: -p's process, or 0,
	std::string container_id;                   // and the container of the processes, or ""
};

class ProfileSink {
public:
	virtual ~ProfileSink() = default;
	virtual void write(ProfileOutput &out) = 0;
	// Limits reached since the last call, said once each.
	virtual void say_limits() {}
};

using ProfileSinks = std::vector<std::unique_ptr<ProfileSink>>;

// Gives out to every sink, in order.
void write_all(const ProfileSinks &sinks, ProfileOutput &out);

// record's and trace's profile file (save_profile); says what was written
// and why the recording stopped. Throws UserError.
class ProfileFileSink : public ProfileSink {
public:
	ProfileFileSink(std::string path, std::string why) : path_(std::move(path)), why_(std::move(why)) {}
	void write(ProfileOutput &out) override;

private:
	std::string path_, why_;
};

// `usdtprof trace`: every probe hit also becomes a timeline event.
struct TraceOptions {
	std::string output = "trace.json";
	std::string format = "chrome";   // a timeline format of formats.h: chrome, speedscope
	uint64_t max_events = 1000000;    // events kept; later ones are not written
};

// Collects trace events up to a limit, counting the rest.
struct EventLog {
	uint64_t max_events = 0;
	std::vector<usdtprof_event> events;
	uint64_t not_kept = 0;

	void add(const usdtprof_event &e)
	{
		if (events.size() < max_events)
			events.push_back(e);
		else
			not_kept++;
	}
};

// What names a recording's events, and its bounds.
struct TraceNames {
	uint64_t start_ns = 0, stop_ns = 0; // the recording's, monotonic
	uint64_t lost = 0;                  // events the full ring buffer lost
	NameLookup functions;               // ENTER and EXIT's functions
	std::map<uint32_t, std::string> thread_comms; // threads that have exited, by tid
	std::map<uint32_t, std::string> spans;        // --span specs, by span id
};

// The timeline of log's events: functions, spans and threads named (a span
// no spec names is left out), processes named as in processes.
TraceInput timeline_input(const EventLog &log, const TraceNames &names, const std::vector<ProfileProcess> &processes);

// record's and trace's trace file: the timeline of log's events in the
// options' format; says what was written and what was lost or not kept.
// Throws UserError.
class TraceFileSink : public ProfileSink {
public:
	TraceFileSink(const TraceOptions &options, const EventLog &log, TraceNames names)
		: options_(options), log_(log), names_(std::move(names)) {}
	void write(ProfileOutput &out) override;

private:
	const TraceOptions &options_;
	const EventLog &log_;
	TraceNames names_;
};

// How a monitor's interval files are kept.
struct IntervalFileLimits {
	size_t keep = 0;         // intervals (0: no limit)
	uint64_t max_bytes = 0;  // bytes in dir (0: no limit)
	double max_age_s = 0;    // oldest (0: no limit)
};

// An interval's file stamp: its start, UTC, "20261203T041500123Z".
std::string interval_stamp(int64_t unix_ns);

// A monitor's files: DIR/PREFIX<stamp>.<extension> for every format monitor
// writes (formats.h), each written into its file as it is made (write_format),
// never held whole; those named in keep_rendered kept in out.rendered too, for
// a sink after it (PushSink::kFormat when a push follows); then the retention.
class IntervalFilesSink : public ProfileSink {
public:
	IntervalFilesSink(std::string dir, std::string prefix, IntervalFileLimits limits,
			  std::set<std::string> keep_rendered)
		: dir_(std::move(dir)), prefix_(std::move(prefix)), limits_(limits),
		  keep_rendered_(std::move(keep_rendered)) {}
	void write(ProfileOutput &out) override;

private:
	std::string dir_, prefix_;
	IntervalFileLimits limits_;
	std::set<std::string> keep_rendered_;
};

// /metrics: each interval compensated into the registry, then the health
// given (the monitor's, as it is when the interval is written).
class MetricsSink : public ProfileSink {
public:
	MetricsSink(MetricsRegistry &metrics, const MetricsServer *server, const MonitorHealth &health)
		: metrics_(metrics), server_(server), health_(health) {}
	void write(ProfileOutput &out) override;
	void say_limits() override;

private:
	MetricsRegistry &metrics_;
	const MetricsServer *server_; // nullptr: not served (still counted, for nothing)
	const MonitorHealth &health_;
	bool processes_full_said_ = false;
	uint64_t connections_cut_said_ = 0;
};

// A push of the interval's pprof (rendered by IntervalFilesSink).
class PushSink : public ProfileSink {
public:
	static constexpr const char *kFormat = "pprof"; // what it pushes, from out.rendered
	explicit PushSink(ProfilePusher &pusher) : pusher_(pusher) {}
	void write(ProfileOutput &out) override;
	void say_limits() override;

private:
	ProfilePusher &pusher_;
	std::string error_said_;
};

} // namespace usdtprof
