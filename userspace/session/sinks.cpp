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
#include "target/process.h"

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

namespace {

// The names of the events' functions, each (process, id) looked up once; a
// Java lambda's hidden class by the method it calls, as the profile names it
// (JavaLambdaNames): here what its thread entered while it was on top.
std::map<std::pair<uint32_t, uint64_t>, std::string> event_names(const EventLog &log, const NameLookup &lookup)
{
	std::map<std::pair<uint32_t, uint64_t>, std::string> names;
	std::map<uint32_t, std::vector<const std::string *>> stacks; // by thread
	JavaLambdaNames lambdas;
	bool any = false;
	for (const usdtprof_event &e : log.events) {
		if (e.type != USDTPROF_EV_ENTER && e.type != USDTPROF_EV_EXIT)
			continue;
		auto [it, added] = names.try_emplace({e.pid, e.func});
		if (added) {
			it->second = function_name(lookup, e.pid, e.func).name;
			any |= JavaLambdaNames::is_lambda(it->second);
		}
		std::vector<const std::string *> &stack = stacks[e.tid];
		if (e.type == USDTPROF_EV_EXIT) {
			if (!stack.empty())
				stack.pop_back();
			continue;
		}
		if (!stack.empty() && JavaLambdaNames::is_lambda(*stack.back()))
			lambdas.add_call(e.pid, *stack.back(), it->second);
		stack.push_back(&it->second);
	}
	if (any)
		for (auto &[id, name] : names)
			name = lambdas.name(id.first, name);
	return names;
}

} // namespace

TraceInput timeline_input(const EventLog &log, const TraceNames &names, const std::vector<ProfileProcess> &processes)
{
	TraceInput input;
	input.start_ns = names.start_ns;
	input.stop_ns = names.stop_ns;
	std::map<std::pair<uint32_t, uint64_t>, std::string> functions = event_names(log, names.functions);
	for (const usdtprof_event &e : log.events) {
		TraceEvent ev;
		ev.ts_ns = e.ts;
		ev.pid = e.pid;
		ev.tid = e.tid;
		ev.type = static_cast<usdtprof_event_type>(e.type);
		if (ev.type == USDTPROF_EV_ENTER || ev.type == USDTPROF_EV_EXIT) {
			ev.name = functions[{e.pid, e.func}];
		} else if (ev.type == USDTPROF_EV_SPAN_START || ev.type == USDTPROF_EV_SPAN_END) {
			auto span = names.spans.find(uint32_t(e.func));
			if (span == names.spans.end())
				continue;
			ev.name = span->second;
		} else {
			ev.task_id = e.func;
		}
		if (!input.thread_names.count(e.tid))
			input.thread_names[e.tid] = thread_name(e.pid, e.tid, names.thread_comms);
		input.events.push_back(std::move(ev));
	}
	for (const ProfileProcess &p : processes)
		input.process_names[uint32_t(p.pid)] = p.comm;
	input.lost_events = names.lost;
	input.max_events_reached = log.not_kept > 0;
	return input;
}

void TraceFileSink::write(ProfileOutput &out)
{
	const Format *format = find_format(options_.format, kUseTrace);
	if (!format)
		throw UserError("unknown trace format '" + options_.format + "'", 2);
	if (auto r = write_output(options_.output, format->timeline(timeline_input(log_, names_, out.profile.processes)));
	    !r)
		throw UserError(r.error().message);
	uint64_t lost = names_.lost;
	log_line("wrote %s (%zu events%s%s)", options_.output.c_str(), log_.events.size(),
		 lost ? (", " + std::to_string(lost) + " lost: ring buffer full").c_str() : "",
		 log_.not_kept ? (", " + std::to_string(log_.not_kept) + " beyond --max-events not written").c_str()
			       : "");
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
		// Streamed: at a million paths (30 MB of files) each was rendered
		// whole, from its own copy of the profile, before it was written.
		bool keep = keep_rendered_.count(f.name) > 0;
		StringSink kept;
		// Names usdtprof chose: replaced, never followed or written through.
		auto r = write_file_atomically(base + f.extension, [&](Sink &file) {
			TeeSink both(file, kept);
			write_format(f, out.profile, ReportOptions{}, keep ? static_cast<Sink &>(both) : file);
		});
		if (!r)
			log_line("%s", r.error().message.c_str());
		// No file made (its directory gone) or one cut short (its disk
		// full): the sink after it (a push) still gets the whole, never the part written.
		if (!r && keep) {
			kept.text.clear();
			write_format(f, out.profile, ReportOptions{}, kept);
		}
		if (keep)
			out.rendered[f.name] = std::move(kept.text);
	}
	apply_retention(dir_, prefix_, monitor_extensions(), limits_.keep, limits_.max_bytes, limits_.max_age_s);
}

void MetricsSink::write(ProfileOutput &out)
{
	metrics_.add_interval(compensate(out.profile), process_exists, health_.process_shares);
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
	pusher_.push({out.rendered[kFormat], out.begin_unix_ns / 1000000000, out.profile.stop_unix_ns / 1000000000,
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
