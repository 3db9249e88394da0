#include "recorder.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "call_paths.h"
#include "engine.h"
#include "output_file.h"
#include "probes.h"
#include "process.h"
#include "profile.h"
#include "trace.h"

namespace usdtprof {

namespace {

std::string pid_text(int pid)
{
	ProfileProcess p = describe_process(pid);
	return "pid " + std::to_string(pid) + (p.comm.empty() ? "" : " (" + p.comm + ")");
}

enum class StopReason { Duration, Signal, TargetExited };

sigset_t stop_signals()
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	return set;
}

// tick runs at least every 50 ms, to drain the trace buffer.
StopReason wait_for_stop(int pid, double duration_s, const std::function<void()> &tick)
{
	sigset_t set = stop_signals();
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	int pfd = open_pidfd(pid);
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::duration<double>(duration_s > 0 ? duration_s : 1e9);
	StopReason reason = StopReason::Duration;
	for (;;) {
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			break;
		pollfd fds[2] = {{sfd, POLLIN, 0}, {pfd, POLLIN, 0}};
		int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 50)));
		tick();
		if (n < 0 && errno != EINTR)
			break;
		if (fds[0].revents) {
			reason = StopReason::Signal;
			break;
		}
		if (fds[1].revents || (pfd < 0 && !process_exists(pid))) {
			reason = StopReason::TargetExited;
			break;
		}
	}
	close(sfd);
	if (pfd >= 0)
		close(pfd);
	return reason;
}

int64_t unix_now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

const char *anomaly_name(int a)
{
	switch (a) {
	case USDTPROF_ANOM_EXIT_MISMATCH: return "exit_mismatch";
	case USDTPROF_ANOM_EXIT_NO_FRAME: return "exit_no_frame";
	case USDTPROF_ANOM_DEPTH_OVERFLOW: return "depth_overflow";
	case USDTPROF_ANOM_AGG_FULL: return "agg_full";
	case USDTPROF_ANOM_DROPPED_NS: return "dropped_ns";
	case USDTPROF_ANOM_NO_STORAGE: return "no_storage";
	default: return "lost_events";
	}
}

// A process that exited (a zombie too) maps nothing: that is not a lack of probes.
bool has_exited(int pid)
{
	int fd = open_pidfd(pid);
	if (fd < 0)
		return true;
	pollfd p = {fd, POLLIN, 0};
	bool exited = poll(&p, 1, 0) == 1;
	close(fd);
	return exited;
}

// The trace buffer: at ~40 bytes an event, room for ~400,000 between drains.
constexpr uint32_t kTraceBufferBytes = 16 << 20;

// Collects trace events up to a limit, counting the rest.
struct EventLog {
	uint64_t max_events;
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

void write_trace(const TraceOptions &t, const EventLog &log, uint64_t lost, uint64_t start_ns, uint64_t stop_ns,
		 const Profile &profile, const NameLookup &lookup)
{
	TraceInput input;
	input.start_ns = start_ns;
	input.stop_ns = stop_ns;
	std::map<std::pair<uint32_t, uint64_t>, std::string> names;
	for (const usdtprof_event &e : log.events) {
		TraceEvent ev;
		ev.ts_ns = e.ts;
		ev.pid = e.pid;
		ev.tid = e.tid;
		ev.type = static_cast<usdtprof_event_type>(e.type);
		if (ev.type == USDTPROF_EV_ENTER || ev.type == USDTPROF_EV_EXIT) {
			auto [it, added] = names.try_emplace({e.pid, e.func});
			if (added)
				it->second = function_name(lookup, e.pid, e.func);
			ev.name = it->second;
		} else {
			ev.task_id = e.func;
		}
		if (!input.thread_names.count(e.tid))
			input.thread_names[e.tid] = describe_process(int(e.tid)).comm;
		input.events.push_back(std::move(ev));
	}
	for (const ProfileProcess &p : profile.processes)
		input.process_names[uint32_t(p.pid)] = p.comm;
	auto doc = nlohmann::json::parse(t.speedscope ? render_speedscope(input) : render_chrome_trace(input));
	if (!t.speedscope) {
		doc["otherData"]["lost_events"] = lost;
		doc["otherData"]["max_events_reached"] = log.not_kept > 0;
	}
	if (auto r = write_file_atomically(t.output, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
	    !r)
		throw UserError(r.error().message);
	fprintf(stderr, "usdtprof: wrote %s (%zu events%s%s)\n", t.output.c_str(), log.events.size(),
		lost ? (", " + std::to_string(lost) + " lost: ring buffer full").c_str() : "",
		log.not_kept ? (", " + std::to_string(log.not_kept) + " beyond --max-events not written").c_str() : "");
}

void check_output_dir(const std::string &output)
{
	std::string dir = output.find('/') == std::string::npos ? "." : output.substr(0, output.rfind('/') + 1);
	if (access(dir.c_str(), W_OK) != 0)
		throw UserError("cannot write " + output + ": " + strerror(errno));
}

} // namespace

int record(const RecordOptions &o)
{
	std::vector<ProbeRole> roles = native_probe_roles();
	using Parser = Result<std::vector<ProbeRole>> (*)(std::string_view);
	for (const auto &[specs, parse] : {std::pair<const std::vector<std::string> *, Parser>{&o.pairs, parse_pair_spec},
					   std::pair<const std::vector<std::string> *, Parser>{&o.tasks, parse_task_spec}})
		for (const std::string &spec : *specs) {
			auto parsed = parse(spec);
			if (!parsed)
				throw UserError(parsed.error().message, 2);
			for (const ProbeRole &r : *parsed) {
				// A probe named again replaces its earlier role: never attach a site twice.
				std::erase_if(roles, [&](const ProbeRole &e) { return e.provider == r.provider && e.name == r.name; });
				roles.push_back(r);
			}
		}
	check_output_dir(o.output);
	if (o.trace)
		check_output_dir(o.trace->output);
	if (o.pid && !process_exists(o.pid))
		throw UserError("no process with pid " + std::to_string(o.pid));
	// Blocked from here on, read by wait_for_stop: a signal during attach then
	// stops the recording as soon as it starts, and the profile is saved.
	sigset_t stop = stop_signals();
	sigprocmask(SIG_BLOCK, &stop, nullptr);
	auto engine = Engine::load(o.max_paths, o.trace ? kTraceBufferBytes : 0);
	if (!engine)
		throw UserError(engine.error().message);

	std::optional<HeldChild> child;
	int pid = o.pid;
	if (!o.command.empty()) {
		auto launched = HeldChild::launch(o.command);
		if (!launched)
			throw UserError(launched.error().message);
		child.emplace(std::move(*launched));
		pid = child->pid();
	}
	auto maps = read_proc_maps(pid);
	if (!maps)
		throw UserError(maps.error().message);
	auto sites = find_sites(*maps, roles);
	if (sites.empty())
		throw UserError(has_exited(pid) ? pid_text(pid) + " exited before its probes could be attached"
				: o.pairs.empty() && o.tasks.empty() ? pid_text(pid) + ": no usdtprof probes in its binaries"
								     : pid_text(pid) + ": none of the given probes in its binaries");

	Profile profile;
	profile.command = o.command;
	profile.processes.push_back(describe_process(pid));
	profile.probes = attach_sites(**engine, pid, sites);
	profile.start_unix_ns = unix_now_ns();
	auto started = std::chrono::steady_clock::now();
	if (child)
		if (auto r = child->release(); !r)
			throw UserError(r.error().message);
	fprintf(stderr, "usdtprof: recording %s: %zu probe sites attached; Ctrl-C to stop\n",
		pid_text(pid).c_str(), (*engine)->attached_sites());

	EventLog log{o.trace ? o.trace->max_events : 0, {}, 0};
	std::function<void(const usdtprof_event &)> collect = [&](const usdtprof_event &e) { log.add(e); };
	StopReason reason = wait_for_stop(pid, o.duration_s, [&] { (*engine)->drain_events(collect); });
	auto stopped = std::chrono::steady_clock::now();
	// steady_clock is CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().
	auto monotonic_ns = [](std::chrono::steady_clock::time_point t) {
		return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
	};
	(*engine)->stop(monotonic_ns(stopped));
	(*engine)->drain_events(collect);
	if (auto r = (*engine)->flush_open_frames(); !r)
		throw UserError(r.error().message);
	profile.stop_unix_ns = unix_now_ns();
	profile.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(stopped - started).count();
	auto anomalies = (*engine)->anomalies();
	for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
		profile.anomalies[anomaly_name(a)] = anomalies[a];
	// A process that has exited maps nothing any more: then names are read
	// from the files it mapped at attach time.
	auto fresh_maps = read_proc_maps(pid);
	const auto &name_maps = fresh_maps && !fresh_maps->empty() ? *fresh_maps : *maps;
	NameLookup lookup = [&](uint32_t tgid, uint64_t func) {
		return read_target_string(int(tgid), int(tgid) == pid ? name_maps : std::vector<Mapping>{}, func);
	};
	add_call_paths(profile, (*engine)->read_paths(), lookup);

	if (auto r = save_profile(profile, o.output); !r)
		throw UserError(r.error().message);
	uint64_t calls = 0;
	for (const PathNode &n : profile.nodes)
		calls += n.calls;
	const char *why = reason == StopReason::Signal ? "stopped by signal"
			  : reason == StopReason::TargetExited ? "target exited"
							       : "duration elapsed";
	fprintf(stderr, "usdtprof: %s; wrote %s (%zu call paths, %llu calls, %.3f s)\n", why,
		o.output.c_str(), profile.nodes.size(), (unsigned long long)calls,
		profile.duration_ns / 1e9);
	if (o.trace)
		write_trace(*o.trace, log, anomalies[USDTPROF_ANOM_LOST_EVENTS], monotonic_ns(started), monotonic_ns(stopped),
			    profile, lookup);
	return child ? child->wait() : 0;
}

} // namespace usdtprof
