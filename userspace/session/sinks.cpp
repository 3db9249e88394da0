#include "session/sinks.h"

#include <cstdio>
#include <ctime>

#include "base/output_file.h"
#include "base/result.h"
#include "base/text_escape.h"
#include "profile/compensation.h"
#include "report/formats.h"
#include "serve/metrics_server.h"
#include "serve/pusher.h"
#include "session/interval.h"

namespace usdtprof {

namespace {

// The extensions of the files monitor writes per interval (formats.h).
std::vector<std::string> monitor_extensions()
{
	std::vector<std::string> out;
	for (const Format &f : formats())
		if (f.uses & kUseMonitor)
			out.push_back(f.extension);
	return out;
}

} // namespace

void write_all(const ProfileSinks &sinks, ProfileOutput &out)
{
	for (const auto &sink : sinks)
		sink->write(out);
}

void ProfileFileSink::write(ProfileOutput &out)
{
	if (auto r = save_profile(out.profile, path_); !r)
		throw UserError(r.error().message);
	uint64_t calls = 0;
	for (const PathNode &n : out.profile.nodes)
		calls += n.calls;
	log_line("%s; wrote %s (%zu call paths, %llu calls, %.3f s)", why_.c_str(), path_.c_str(),
		 out.profile.nodes.size(), (unsigned long long)calls, out.profile.duration_ns / 1e9);
}

std::string interval_stamp(int64_t unix_ns)
{
	time_t secs = unix_ns / 1000000000;
	tm t;
	gmtime_r(&secs, &t);
	char buf[48];
	size_t n = strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &t);
	// No dot: retention groups an interval's files by what precedes the first one.
	snprintf(buf + n, sizeof buf - n, "%03dZ", int(unix_ns / 1000000 % 1000));
	return buf;
}

void IntervalFilesSink::write(ProfileOutput &out)
{
	std::string base = dir_ + "/" + prefix_ + interval_stamp(out.begin_unix_ns);
	for (const Format &f : formats()) {
		if (!(f.uses & kUseMonitor))
			continue;
		std::string text = render_profile(f, out.profile, ReportOptions{});
		// Names usdtprof chose: replaced, never followed or written through.
		if (auto r = write_file_atomically(base + f.extension, text); !r)
			log_line("%s", r.error().message.c_str());
		if (f.name == std::string("pprof"))
			out.rendered["pprof"] = std::move(text);
	}
	apply_retention(dir_, prefix_, monitor_extensions(), limits_.keep, limits_.max_bytes, limits_.max_age_s);
}

void MetricsSink::write(ProfileOutput &out)
{
	metrics_.add_interval(compensate(out.profile));
	say_limits();
	metrics_.set_health(health_);
}

void MetricsSink::say_limits()
{
	if (!processes_full_said_ && metrics_.other_processes_full()) {
		processes_full_said_ = true;
		fprintf(stderr, "usdtprof: /metrics: more than %zu process names need an [other] series; later ones share "
				"process=\"[other]\"\n", MetricsRegistry::kDefaultOtherProcesses);
	}
	if (server_ && server_->connections_cut() > connections_cut_said_) {
		MetricsServerLimits limits;
		fprintf(stderr, "usdtprof: /metrics: %llu connections cut since the last interval (past the %.3g s "
				"deadline, or the oldest of more than %zu)\n",
			(unsigned long long)(server_->connections_cut() - connections_cut_said_),
			double(limits.deadline.count()) / 1000, limits.max_connections);
		connections_cut_said_ = server_->connections_cut();
	}
}

void PushSink::write(ProfileOutput &out)
{
	say_limits();
	pusher_.push({out.rendered["pprof"], out.begin_unix_ns / 1000000000, out.profile.stop_unix_ns / 1000000000,
		       out.pid, out.container_id});
}

void PushSink::say_limits()
{
	// A refused certificate or credential, a receiver down: each new reason once.
	if (pusher_.last_error() != error_said_) {
		error_said_ = pusher_.last_error();
		log_line("%s (pushes so far: %llu sent, %llu given up, %llu dropped from the full queue)",
			 error_said_.c_str(), (unsigned long long)pusher_.sent(), (unsigned long long)pusher_.failed(),
			 (unsigned long long)pusher_.dropped());
	}
}

} // namespace usdtprof
