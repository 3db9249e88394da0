#include "recorder.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <map>
#include <optional>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "calibration.h"
#include "call_paths.h"
#include "engine.h"
#include "output_file.h"
#include "presets.h"
#include "targets.h"
#include "probes.h"
#include "process.h"
#include "profile.h"
#include "trace.h"

namespace usdtprof {

namespace {

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
	int pfd = pid ? open_pidfd(pid) : -1; // pid 0: no target to wait for
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
		if (fds[1].revents || (pid && pfd < 0 && !process_exists(pid))) {
			reason = StopReason::TargetExited;
			break;
		}
	}
	close(sfd);
	if (pfd >= 0)
		close(pfd);
	return reason;
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
	std::map<std::pair<uint32_t, uint64_t>, FunctionName> names;
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
			ev.name = it->second.name;
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
		// Per-thread shifts would reorder events across threads (a task's
		// begin before its creation): the timeline keeps measured times.
		doc["otherData"]["compensated"] = false;
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

// The command's executable, as execvp finds it.
std::string resolve_command(const std::string &name)
{
	if (name.find('/') != std::string::npos)
		return name;
	const char *path = getenv("PATH");
	std::string dirs = path ? path : "/usr/bin:/bin";
	for (size_t start = 0; start <= dirs.size();) {
		size_t end = dirs.find(':', start);
		std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
		std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate;
		if (end == std::string::npos)
			break;
		start = end + 1;
	}
	return name;
}

// A preset's launch script, in a temporary file removed when recording ends.
class LaunchScript {
public:
	explicit LaunchScript(const char *content)
	{
		char name[] = "/tmp/usdtprof-launch-XXXXXX.rb";
		int fd = mkstemps(name, 3);
		if (fd < 0)
			throw UserError(std::string("cannot create a launch script: ") + strerror(errno));
		bool ok = write(fd, content, strlen(content)) == ssize_t(strlen(content));
		close(fd);
		path_ = name;
		if (!ok)
			throw UserError("cannot write " + path_);
	}
	~LaunchScript() { unlink(path_.c_str()); }
	const std::string &path() const { return path_; }

private:
	std::string path_;
};

// Sets what the presets need in a launched command's environment; says so.
bool apply_launch_env(const std::vector<const Preset *> &chosen, bool use_scripts,
		      std::vector<std::unique_ptr<LaunchScript>> &scripts)
{
	bool changed = false;
	for (const Preset *p : chosen)
		for (const auto &[var, templ] : p->launch_env) {
			const char *old = getenv(var);
			std::string now = old && *old ? std::string(old) : "", value = templ;
			if (size_t at = value.find("{script}"); at != std::string::npos) {
				if (now.find("usdtprof-launch-") != std::string::npos)
					continue;
				if (!use_scripts) {
					fprintf(stderr, "usdtprof: %s: %s\n", p->name, p->without_script);
					continue;
				}
				scripts.push_back(std::make_unique<LaunchScript>(p->launch_script));
				value.replace(at, 8, scripts.back()->path());
			} else if (now.find(value) != std::string::npos) {
				continue;
			}
			now += (now.empty() ? "" : " ") + value;
			setenv(var, now.c_str(), 1);
			fprintf(stderr, "usdtprof: %s: launching with %s=%s\n", p->name, var, now.c_str());
			changed = true;
		}
	return changed;
}

// The files a launched command maps at its entry point, and those its presets load later.
std::vector<std::string> launch_files(const HeldChild &child, const std::string &executable)
{
	auto maps = read_proc_maps(child.pid());
	if (!maps)
		throw UserError(maps.error().message);
	std::vector<std::string> files = executable_files(*maps);
	for (const Preset &p : presets())
		if (std::string lib = p.late_library(executable); !lib.empty())
			files.push_back(lib);
	return files;
}

} // namespace

std::optional<CalibrationResult> calibrate_or_warn(Engine &engine, bool offcpu_hook, bool trace)
{
	auto r = calibrate(engine, offcpu_hook, trace);
	if (!r) {
		fprintf(stderr, "usdtprof: %s; times will be shown as measured, probe overhead included\n",
			r.error().message.c_str());
		return std::nullopt;
	}
	if (!r->calibration.kinds.empty())
		fprintf(stderr, "usdtprof: probe overhead calibrated in %.0f ms\n", r->calibration.cost_ns / 1e6);
	return *r;
}

int record(const RecordOptions &o)
{
	std::vector<ProbeRole> custom = custom_roles(o);
	check_output_dir(o.output);
	if (o.trace)
		check_output_dir(o.trace->output);
	if (o.pid && !process_exists(o.pid))
		throw UserError("no process with pid " + std::to_string(o.pid));
	if (!o.binary.empty() && access(o.binary.c_str(), R_OK) != 0)
		throw UserError("cannot read " + o.binary + ": " + strerror(errno));
	// Blocked from here on, read by wait_for_stop: a signal during attach then
	// stops the recording as soon as it starts, and the profile is saved.
	sigset_t stop = stop_signals();
	sigprocmask(SIG_BLOCK, &stop, nullptr);
	auto engine = Engine::load(o.max_paths, o.trace ? kTraceBufferBytes : 0);
	if (!engine)
		throw UserError(engine.error().message);

	std::vector<std::unique_ptr<LaunchScript>> scripts;
	std::optional<HeldChild> child;
	std::optional<BinaryProcesses> binary_processes;
	int pid = o.pid;
	std::vector<std::string> files;
	std::vector<const Preset *> chosen;
	if (!o.command.empty()) {
		std::string executable = resolve_command(o.command[0]);
		for (int attempt = 0; attempt < 2; attempt++) {
			auto launched = HeldChild::launch(o.command);
			if (!launched)
				throw UserError(launched.error().message);
			child.reset();
			child.emplace(std::move(*launched));
			files = launch_files(*child, executable);
			chosen = choose_presets(o, files);
			// The held command has run none of its code: when its runtime
			// needs an environment variable, it starts again with it.
			if (!apply_launch_env(chosen, o.ruby_call_hook, scripts))
				break;
		}
		pid = child->pid();
	} else {
		files = target_files(o, pid, binary_processes);
		chosen = choose_presets(o, files);
	}
	std::map<int, std::vector<Mapping>> attach_maps;
	if (pid)
		if (auto maps = read_proc_maps(pid))
			attach_maps[pid] = std::move(*maps);
	std::vector<FoundSite> sites = plan_sites(o, pid, child.has_value(), files, chosen, custom);

	Profile profile;
	profile.command = o.command;
	if (pid)
		profile.processes.push_back(describe_process(pid));
	AttachedProbes attached = attach_sites(**engine, pid, sites);
	profile.probes = attached.probes;
	// Before the launched command runs: the calibration then shares the CPU with nothing of it.
	std::optional<CalibrationResult> calibration = calibrate_or_warn(**engine, true, o.trace.has_value());
	if (calibration)
		profile.calibration = calibration->calibration;
	profile.start_unix_ns = unix_now_ns();
	auto started = std::chrono::steady_clock::now();
	if (child)
		if (auto r = child->release(); !r)
			throw UserError(r.error().message);
	std::string preset_list;
	for (const Preset *p : chosen)
		preset_list += (preset_list.empty() ? "" : ", ") + std::string(p->name);
	fprintf(stderr, "usdtprof: recording %s%s%s: %zu probe sites attached; Ctrl-C to stop\n",
		pid ? pid_text(pid).c_str() : ("every process of " + o.binary).c_str(),
		preset_list.empty() ? "" : " with ", preset_list.c_str(), (*engine)->attached_sites());

	EventLog log{o.trace ? o.trace->max_events : 0, {}, 0};
	// Calibration's events (usdtprof's own) are not the target's.
	std::function<void(const usdtprof_event &)> collect = [&](const usdtprof_event &e) {
		if (e.pid != uint32_t(getpid()))
			log.add(e);
	};
	int ticks = 0;
	StopReason reason = wait_for_stop(pid, o.duration_s, [&] {
		(*engine)->drain_events(collect);
		if (binary_processes && ++ticks % 4 == 0)
			binary_processes->scan();
	});
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
	// A process that has exited maps nothing any more: then native names are
	// read from the files it mapped at attach time.
	if (pid)
		if (auto fresh = read_proc_maps(pid); fresh && !fresh->empty())
			attach_maps[pid] = std::move(*fresh);
	std::vector<PathRecord> records = (*engine)->read_paths();
	if (binary_processes) {
		binary_processes->scan();
		for (const auto &[p, maps] : binary_processes->maps())
			attach_maps.emplace(p, maps);
		std::set<uint32_t> tgids;
		for (const PathRecord &r : records)
			tgids.insert(r.stats.tgid);
		auto comms = (*engine)->read_process_comms();
		for (uint32_t tgid : tgids) {
			auto seen = binary_processes->seen().find(int(tgid));
			profile.processes.push_back(seen != binary_processes->seen().end() ? seen->second
											    : describe_process(int(tgid), comms));
		}
	}
	FunctionNamer namer(attached, (*engine)->read_names(), attach_maps);
	if (calibration)
		namer.set_cost_kinds(calibration->spec_kinds, calibration->native_kind);
	NameLookup lookup = [&](uint32_t tgid, uint64_t func) { return namer(tgid, func); };
	if (size_t cut = add_call_paths(profile, records, lookup))
		fprintf(stderr, "usdtprof: %zu function names or locations longer than %zu bytes were cut\n", cut,
			kMaxNameBytes);

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
