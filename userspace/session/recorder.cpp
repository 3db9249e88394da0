#include "session/recorder.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <map>
#include <mutex>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/anomalies.h"
#include "engine/calibration.h"
#include "base/text_escape.h"
#include "engine/call_paths.h"
#include "engine/engine.h"
#include "target/follow.h"
#include "base/output_file.h"
#include "target/presets.h"
#include "session/session.h"
#include "session/sinks.h"
#include "session/targets.h"
#include "engine/probes.h"
#include "target/process.h"
#include "profile/profile.h"
#include "report/formats.h"
#include "report/trace.h"

namespace usdtprof {

namespace {

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

// --span specs by their span ids.
std::map<uint32_t, std::string> span_names(const std::vector<ProbeRole> &custom)
{
	std::map<uint32_t, std::string> names;
	for (const ProbeRole &r : custom)
		if (r.role == USDTPROF_ROLE_SPAN_START)
			names[r.pair] = r.spec;
	return names;
}

void write_trace(const TraceOptions &t, const EventLog &log, uint64_t lost, uint64_t start_ns, uint64_t stop_ns,
		 const Profile &profile, const NameLookup &lookup, const std::map<uint32_t, std::string> &thread_comms,
		 const std::map<uint32_t, std::string> &spans)
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
		} else if (ev.type == USDTPROF_EV_SPAN_START || ev.type == USDTPROF_EV_SPAN_END) {
			auto span = spans.find(uint32_t(e.func));
			if (span == spans.end())
				continue;
			ev.name = span->second;
		} else {
			ev.task_id = e.func;
		}
		if (!input.thread_names.count(e.tid))
			input.thread_names[e.tid] = thread_name(e.pid, e.tid, thread_comms);
		input.events.push_back(std::move(ev));
	}
	for (const ProfileProcess &p : profile.processes)
		input.process_names[uint32_t(p.pid)] = p.comm;
	input.lost_events = lost;
	input.max_events_reached = log.not_kept > 0;
	const Format *format = find_format(t.format, kUseTrace);
	if (!format)
		throw UserError("unknown trace format '" + t.format + "'", 2);
	if (auto r = write_output(t.output, format->timeline(input)); !r)
		throw UserError(r.error().message);
	log_line("wrote %s (%zu events%s%s)", t.output.c_str(), log.events.size(),
		lost ? (", " + std::to_string(lost) + " lost: ring buffer full").c_str() : "",
		log.not_kept ? (", " + std::to_string(log.not_kept) + " beyond --max-events not written").c_str() : "");
}

void check_output_path(const std::string &output)
{
	if (auto r = check_output(output); !r)
		throw UserError(r.error().message);
}

// Two outputs at one path: the second written would replace the first.
bool same_path(const std::string &a, const std::string &b)
{
	std::error_code ec1, ec2;
	if (std::filesystem::equivalent(a, b, ec1))
		return true;
	auto ca = std::filesystem::weakly_canonical(a, ec1), cb = std::filesystem::weakly_canonical(b, ec2);
	return !ec1 && !ec2 && ca == cb;
}

// Launch scripts live in kLaunchDir: a directory only root can write, in /run
// (which only root can write either), so no other user can plant or replace a
// script that a launched root process loads, not even after usdtprof has exited.

Result<void> check_launch_dir()
{
	if (mkdir(kLaunchDir, 0755) != 0 && errno != EEXIST)
		return Error{std::string("cannot create ") + kLaunchDir + ": " + strerror(errno)};
	struct stat st;
	if (lstat(kLaunchDir, &st) != 0)
		return Error{std::string("cannot read ") + kLaunchDir + ": " + strerror(errno)};
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return Error{std::string(kLaunchDir) + " is not a directory that only root can write: not using it"};
	return {};
}

// A preset's launch script, at a fixed path in kLaunchDir, replaced
// atomically. It is never removed: a descendant of the launched command that
// starts the runtime after usdtprof has exited still inherits the variable
// naming it, and must find the same harmless script (not a missing file, which
// would stop it, nor one another user planted).
Result<std::string> install_launch_script(const std::string &path, const char *content)
{
	if (auto r = check_launch_dir(); !r)
		return r.error();
	std::string temp = path + ".XXXXXX";
	int fd = mkstemp(temp.data()); // O_EXCL, 0600: then made readable by any user the command becomes
	if (fd < 0)
		return Error{"cannot create a launch script in " + std::string(kLaunchDir) + ": " + strerror(errno)};
	size_t len = strlen(content);
	bool ok = write(fd, content, len) == ssize_t(len) && fchmod(fd, 0644) == 0;
	close(fd);
	if (!ok || rename(temp.c_str(), path.c_str()) != 0) {
		unlink(temp.c_str());
		return Error{"cannot write " + path};
	}
	return path;
}

// Sets what the presets need in a launched command's environment; says so,
// or (later) keeps what it would say by preset in later.
bool apply_launch_env(const std::vector<const Preset *> &chosen, bool use_scripts,
		      std::map<const Preset *, std::string> *later = nullptr)
{
	auto say = [&](const Preset *p, const std::string &text) {
		if (later)
			(*later)[p] += "usdtprof: " + std::string(p->name) + ": " + text + "\n";
		else
			log_line("%s: %s", p->name, text.c_str());
	};
	bool changed = false;
	for (const Preset *p : chosen)
		for (const auto &[var, templ] : p->launch_env) {
			const char *old = getenv(var);
			std::string now = old && *old ? std::string(old) : "", value = templ;
			if (size_t at = value.find("{script}"); at != std::string::npos) {
				if (!use_scripts) {
					say(p, p->without_script);
					continue;
				}
				auto script = install_launch_script(std::string(kLaunchDir) + "/" + p->name + "-launch" +
									    p->script_extension,
								    p->launch_script);
				if (!script)
					throw UserError(script.error().message);
				value.replace(at, 8, *script);
			}
			if (size_t at = value.find("{repair}"); at != std::string::npos) {
				auto script = install_launch_script(p->repair_path, p->repair_script);
				if (!script)
					throw UserError(script.error().message);
				value.replace(at, 8, *script);
			}
			if (now.find(value) != std::string::npos)
				continue;
			now += (now.empty() ? "" : " ") + value;
			setenv(var, now.c_str(), 1);
			say(p, std::string("launching with ") + var + "=" + now);
			changed = true;
		}
	return changed;
}

// The files a launched command maps at its entry point, and those its presets load later.
Result<FilesByPid> image_files(int pid, const std::vector<Mapping> &maps, TargetFiles &opened)
{
	std::vector<TargetFilePtr> files = opened.of_process(pid, maps);
	for (const Preset &p : presets()) {
		if (std::string why = p.left_alone ? p.left_alone(pid) : ""; !why.empty()) {
			log_line("%s: %s", pid_text(pid).c_str(), why.c_str());
			continue;
		}
		if (std::string lib = p.late_library ? p.late_library(pid) : ""; !lib.empty()) {
			// A path in the process's root, looked up there only.
			auto file = open_file_in_root(pid, lib);
			if (!file)
				return file.error();
			opened.add(*file);
			// Once loaded (a process attached later), it is among the mapped files.
			if (std::none_of(files.begin(), files.end(), [&](const TargetFilePtr &f) {
				    return f->dev == (*file)->dev && f->ino == (*file)->ino;
			    }))
				files.push_back(*file);
		}
	}
	return FilesByPid{{pid, files}};
}

FilesByPid launch_files(int pid, TargetFiles &opened)
{
	auto maps = read_proc_maps(pid);
	if (!maps)
		throw UserError(maps.error().message);
	auto files = image_files(pid, *maps, opened);
	if (!files)
		throw UserError(files.error().message);
	return *files;
}

// A forked child maps its parent's files, but not their pages: fork copies no
// page table entries of file mappings. BPF reads names without faulting, so
// the read-only mappings of files with native names are faulted in (reading
// /proc/PID/mem does that) before the child runs.
void fault_in_names(int pid, const std::vector<Mapping> &maps, const std::vector<FoundSite> &sites)
{
	std::set<std::pair<uint64_t, uint64_t>> files; // device, inode
	for (const FoundSite &f : sites)
		if (f.probe.parts.size() == 1 && f.probe.parts[0].type == USDTPROF_PART_STR)
			files.insert({f.file->dev, f.file->ino});
	int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	std::vector<char> buf(1 << 20);
	for (const Mapping &m : maps)
		if (m.readable && !m.writable && files.count({m.dev, m.inode}))
			for (uint64_t at = m.start; at < m.end; at += buf.size())
				if (pread(fd, buf.data(), std::min<uint64_t>(buf.size(), m.end - at), off_t(at)) <= 0)
					break;
	close(fd);
}

// A launched command followed through exec and into its children: the
// tracer thread hands each new image and fork here, held until attached.
class FollowedTree {
public:
	// Sets the environment every runtime needs (any process of the tree may
	// exec one); said when a process of that runtime is attached.
	FollowedTree(const TargetSpec &t, Engine &engine, const std::vector<ProbeRole> &custom, TargetFiles &opened)
		: t_(t), engine_(engine), custom_(custom), opened_(opened)
	{
		std::vector<const Preset *> all;
		for (const Preset &p : presets())
			if (t.runtime.empty() || t.runtime == p.name)
				all.push_back(&p);
		apply_launch_env(all, t.ruby_call_hook, &env_said_);
	}

	~FollowedTree()
	{
		{
			std::lock_guard lock(mutex_);
			stopped_ = true;
		}
		for (std::thread &t : pollers_)
			t.join();
	}

	FollowedCommand::Callbacks callbacks()
	{
		return {[this](int pid) { on_image(pid); }, [this](int pid, int parent) { on_fork(pid, parent); },
			[this](int pid, int sig) { on_signal(pid, sig); }};
	}

	// Ends attaching, then (outside this) the engine stops: no attach can
	// come between them.
	template <typename Stop>
	void stop(FollowedCommand &command, Stop &&stop_engine)
	{
		std::lock_guard lock(mutex_);
		command.stop_following();
		stopped_ = true;
		stop_engine();
	}

	// The recording's first line; later attaches then say what they add.
	void announce(int pid)
	{
		std::lock_guard lock(mutex_);
		std::string used = preset_list(used_);
		if (used.empty())
			log_line("recording %s, following its execs and children: no probes in %s; Ctrl-C to stop",
				 pid_text(pid).c_str(), searched_.empty() ? "it" : searched_.back().c_str());
		else
			log_line("recording %s with %s, following its execs and children: %zu probe sites attached; "
				 "Ctrl-C to stop",
				 pid_text(pid).c_str(), used.c_str(), engine_.attached_sites());
		announced_ = true;
	}

	// Read once stopped: no more change.
	const AttachedProbes &attached() const { return attached_; }
	const std::map<int, std::vector<Mapping>> &maps() const { return maps_; }
	const std::vector<ProfileProcess> &processes() const { return processes_; }
	const std::vector<std::string> &searched() const { return searched_; }
	bool reimaged(int pid) const { return reimaged_.count(pid); }

private:
	void on_image(int pid)
	{
		std::lock_guard lock(mutex_);
		if (stopped_)
			return;
		std::error_code ec;
		std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
		auto maps = read_proc_maps(pid);
		if (ec || !maps)
			return; // gone
		if (std::find(searched_.begin(), searched_.end(), exe) == searched_.end())
			searched_.push_back(exe);
		for (const Preset &p : presets())
			if (std::string why = p.attach_later ? p.attach_later(pid) : ""; !why.empty()) {
				log_line("%s: %s", pid_text(pid).c_str(), why.c_str());
				attach_when_ready(pid, p);
				return;
			}
		attach_image(pid, std::move(*maps));
	}

	// A process a preset attaches only once it is ready (jshell's snippets'
	// JVM, once connected back): polled every 2 ms, attached as its image
	// is then, unless it has gone or the recording has stopped first.
	void attach_when_ready(int pid, const Preset &preset)
	{
		pollers_.emplace_back([this, pid, &preset] {
			for (;;) {
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
				bool ready = preset.ready_to_attach(pid);
				std::lock_guard lock(mutex_);
				if (stopped_ || has_exited(pid))
					return;
				if (!ready)
					continue;
				if (auto maps = read_proc_maps(pid))
					attach_image(pid, std::move(*maps));
				return;
			}
		});
	}

	// Attaches the probes of pid's image (its files and those its presets load later).
	void attach_image(int pid, std::vector<Mapping> maps)
	{
		auto files = image_files(pid, maps, opened_);
		if (!files) {
			log_line("%s: %s; not recorded", pid_text(pid).c_str(), files.error().message.c_str());
			return;
		}
		std::vector<const Preset *> chosen = choose_presets(t_, *files);
		held_.erase(pid);
		auto sites = more_sites(t_, *files, chosen, custom_, engine_.attached_sites(), &held_[pid]);
		if (sites_.count(pid)) {
			// An exec after an image already recorded: native names are
			// looked up by address in the maps of the first image, so
			// this one's are captured in the kernel instead.
			capture_native_names(sites);
			fault_in_names(pid, maps, sites);
			reimaged_.insert(pid);
		}
		attach(pid, std::move(sites), std::move(maps), chosen);
	}

	// A process with sites held back (a Ruby's C method probes) raises its
	// preset's safe_signal once they are safe: they are attached before it
	// goes on.
	void on_signal(int pid, int sig)
	{
		std::lock_guard lock(mutex_);
		auto held = held_.find(pid);
		if (stopped_ || held == held_.end() || held->second.empty() || !safe_now(held->second, pid, sig))
			return;
		std::vector<FoundSite> sites = std::move(held->second);
		held_.erase(held);
		try {
			merge_attached(attached_, attach_sites(engine_, sites));
		} catch (const UserError &e) {
			log_line("%s: %s; C methods not recorded", pid_text(pid).c_str(), e.what());
			return;
		}
		auto &all = sites_[pid];
		all.insert(all.end(), sites.begin(), sites.end());
	}

	// Whether sig is the signal of the preset that held these sites, and
	// they are safe now.
	static bool safe_now(const std::vector<FoundSite> &held, int pid, int sig)
	{
		const ProbeRole &probe = held.front().probe;
		for (const Preset &p : presets()) {
			if (!p.safe_in || p.safe_signal != sig)
				continue;
			for (const ProbeRole &r : p.roles())
				if (r.provider == probe.provider && r.name == probe.name)
					return p.safe_in(probe, pid);
		}
		return false;
	}

	void on_fork(int pid, int parent)
	{
		std::lock_guard lock(mutex_);
		auto sites = sites_.find(parent);
		auto maps = maps_.find(parent);
		if (stopped_ || sites == sites_.end() || maps == maps_.end())
			return;
		fault_in_names(pid, maps->second, sites->second);
		std::vector<FoundSite> of_child = sites->second;
		for (FoundSite &f : of_child)
			f.pid = pid;
		attach(pid, std::move(of_child), maps->second, chosen_[parent]);
	}

	void attach(int pid, std::vector<FoundSite> sites, std::vector<Mapping> maps,
		    const std::vector<const Preset *> &chosen)
	{
		// After an exec of the same file, the links of the earlier image still serve the pid.
		std::erase_if(sites, [&](const FoundSite &f) { return attached_files_.count({pid, f.file->dev, f.file->ino}); });
		if (!has_probe_sites(sites))
			return;
		say_semaphore_notes(sites, chosen);
		size_t before = engine_.attached_sites();
		try {
			merge_attached(attached_, attach_sites(engine_, sites));
		} catch (const UserError &e) {
			log_line("%s: %s; not recorded", pid_text(pid).c_str(), e.what());
			return;
		}
		for (const FoundSite &f : sites)
			attached_files_.insert({pid, f.file->dev, f.file->ino});
		for (const Preset *p : chosen)
			if (std::find(used_.begin(), used_.end(), p) == used_.end()) {
				used_.push_back(p);
				fputs(env_said_[p].c_str(), stderr);
			}
		ProfileProcess described = describe_process(pid);
		std::erase_if(processes_, [&](const ProfileProcess &p) { return p.pid == pid; });
		processes_.push_back(described);
		maps_.emplace(pid, std::move(maps));
		sites_[pid] = std::move(sites);
		chosen_[pid] = chosen;
		if (announced_)
			log_line("%s with %s: %zu probe sites attached", pid_text(pid).c_str(), preset_list(chosen).c_str(),
				 engine_.attached_sites() - before);
	}

	const TargetSpec &t_;
	Engine &engine_;
	const std::vector<ProbeRole> &custom_;
	TargetFiles &opened_; // the tracer thread's under mutex_, until stopped
	std::mutex mutex_;
	bool stopped_ = false, announced_ = false;
	AttachedProbes attached_;
	std::map<int, std::vector<Mapping>> maps_;
	std::map<int, std::vector<FoundSite>> sites_;
	std::map<int, std::vector<FoundSite>> held_; // sites attached once the process says they are safe (Ruby)
	std::map<int, std::vector<const Preset *>> chosen_;
	std::set<std::tuple<int, uint64_t, uint64_t>> attached_files_; // pid, device, inode
	std::set<int> reimaged_; // pids that ran a second recorded image
	std::vector<ProfileProcess> processes_;
	std::vector<std::string> searched_;
	std::vector<const Preset *> used_;
	std::map<const Preset *, std::string> env_said_;
	std::vector<std::thread> pollers_; // attach_when_ready's, under mutex_ until stopped
};


// A pair whose frames were popped by other exits, or whose exits popped
// frames inside it, does not nest with the calls around it: its frames then
// mean nothing.
void warn_unnested_pairs(const std::vector<ProbeRole> &custom, const std::map<uint32_t, uint64_t> &mismatches)
{
	for (const ProbeRole &r : custom)
		if (r.pair && r.role == USDTPROF_ROLE_ENTRY)
			if (auto m = mismatches.find(r.pair); m != mismatches.end() && m->second)
				log_line("warning: --pair %s: %llu of its frames did not nest with the calls around them "
					 "(exit_mismatch): it is not a function, and its frames' times and callees mean nothing",
					 escape_text(r.spec).c_str(), (unsigned long long)m->second);
}

// The spans' statistics as the profile keeps them, named by their specs.
std::vector<ProfileSpan> profile_spans(const std::vector<ProbeRole> &custom, const std::vector<SpanRecord> &records)
{
	std::map<uint32_t, std::string> names = span_names(custom);
	std::vector<ProfileSpan> out;
	for (const SpanRecord &r : records) {
		auto name = names.find(r.span);
		if (name == names.end())
			continue;
		ProfileSpan sp{name->second, int32_t(r.tgid), r.stats.count, r.stats.total_ns, r.stats.min_ns,
			       r.stats.max_ns, r.open, r.stats.restarted, r.stats.unstarted, {}};
		for (uint32_t i = 0; i < USDTPROF_SPAN_BUCKETS; i++)
			if (r.stats.buckets[i])
				sp.buckets.emplace_back(i, r.stats.buckets[i]);
		out.push_back(std::move(sp));
	}
	std::stable_sort(out.begin(), out.end(),
			 [](const ProfileSpan &a, const ProfileSpan &b) { return a.name < b.name; });
	return out;
}

// steady_clock is CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns().
uint64_t monotonic_now()
{
	return uint64_t(
		std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
			.count());
}

// What record refuses before it loads anything. Throws UserError.
void check_record_options(const RecordOptions &o)
{
	if (auto r = check_profile_output(o.output); !r)
		throw UserError(r.error().message);
	if (o.trace) {
		check_output_path(o.trace->output);
		if (same_path(o.output, o.trace->output))
			throw UserError("-o " + o.trace->output + " and --profile " + o.output +
						" name one file: the trace would replace the profile",
					2);
	}
	check_target_exists(o.target);
	if (!o.target.command.empty() && o.target.follow)
		choose_presets(o.target, {}); // an unknown --runtime is refused before the launch
}

// One recording, in the steps record() takes: start (a followed or held
// launch, or an attach to running processes), wait for the stop, stop and
// read, calibrate, name the paths and save. Throws UserError.
class RecordSession {
public:
	// Stop signals are blocked from here on: a signal during attach then
	// stops the recording as soon as it starts, and the profile is saved.
	RecordSession(const RecordOptions &o, std::vector<ProbeRole> custom)
		: o_(o), custom_(std::move(custom)), pids_(unique_pids(o.target.pids)),
		  log_{o.trace ? o.trace->max_events : 0, {}, 0}
	{
		session_.load(o.target.max_paths, o.trace ? kTraceBufferBytes : 0, true, o.target.per_thread);
		profile_.command = o.target.command;
	}

	void start()
	{
		if (!o_.target.command.empty() && o_.target.follow)
			launch_followed();
		else if (!o_.target.command.empty())
			launch_held();
		else
			attach_running();
		start_ns_ = engine().start_ns();
		profile_.start_unix_ns = unix_now_ns() - int64_t(monotonic_now() - start_ns_);
		if (child_)
			if (auto r = child_->release(); !r)
				throw UserError(r.error().message);
		announce();
	}

	// Until -d has elapsed, a signal, or every process recorded has
	// exited; the trace buffer drained every 50 ms.
	Wake wait()
	{
		int ticks = 0;
		WaitPlan plan;
		if (o_.duration_s > 0)
			plan.deadline = Clock::now() +
					std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.duration_s));
		plan.period = std::chrono::milliseconds(50);
		plan.tick = [&] {
			engine().drain_events(collector());
			if (session_.processes().binary() && ++ticks % 4 == 0)
				session_.attach_new_processes(o_.target, chosen_, custom_, sites_, true);
		};
		session_.watch(pids_, ExitWatch::Gone::Exited);
		return session_.wait(plan);
	}

	// The profile covers what the probes could see: from the start to the
	// stop, after which no hit counts. Returns the paths the kernel holds.
	std::vector<PathRecord> stop()
	{
		if (tree_) {
			tree_->stop(*followed_, [&] { stop_ns_ = engine().stop(); });
			session_.set_attached(tree_->attached());
			attach_maps_ = tree_->maps();
			profile_.processes = tree_->processes();
		} else {
			stop_ns_ = engine().stop();
			if (!session_.processes().binary())
				attach_maps_ = session_.processes().maps();
		}
		profile_.stop_unix_ns = unix_now_ns() - int64_t(monotonic_now() - stop_ns_);
		engine().drain_events(collector());
		if (auto r = engine().flush_open_frames(); !r)
			throw UserError(r.error().message);
		profile_.duration_ns = stop_ns_ - start_ns_;
		anomalies_ = engine().anomalies();
		for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
			profile_.anomalies[anomaly_name(a)] = anomalies_[a];
		warn_unnested_pairs(custom_, engine().pair_mismatches());
		profile_.spans = profile_spans(custom_, engine().read_spans());
		// A process that has exited maps nothing any more: then native names are
		// read from the files it mapped at attach time.
		for (auto &[p, maps] : attach_maps_)
			if (auto fresh = read_proc_maps(p); fresh && !fresh->empty() && !(tree_ && tree_->reimaged(p)))
				maps = std::move(*fresh);
		std::vector<PathRecord> records = engine().read_paths();
		if (session_.processes().binary())
			describe_binary_processes(records);
		apply_titles(profile_.processes, engine().read_process_titles());
		if (int pid = command_pid())
			comm_ = describe_process(pid).comm;
		return records;
	}

	// A followed command that ran no program with probes: says so.
	bool found_no_probes() const { return tree_ && tree_->processes().empty(); }
	int say_no_probes()
	{
		std::string searched, hints;
		for (const std::string &s : tree_->searched()) {
			searched += (searched.empty() ? "" : ", ") + s;
			hints += probeless_runtime_hint(s);
		}
		log_line("no probes of %s in %s (the programs the launched command and the processes it started ran)%s; "
			 "nothing written",
			 o_.target.runtime.empty() ? ("any preset (" + preset_names() + ")").c_str()
					   : ("the " + o_.target.runtime + " preset").c_str(),
			 searched.empty() ? o_.target.command[0].c_str() : searched.c_str(), hints.c_str());
		wait_for_command();
		followed_->wait();
		return 1;
	}

	// Calibrated last: every probe kind used is known, a launched command
	// has exited (the machine is quieter), and the recording's duration is
	// not lengthened. The target's paths, all read, leave the table (a full
	// one would keep no calibration); the probes count again, at usdtprof's
	// own sites only.
	void calibrate(const std::vector<PathRecord> &records)
	{
		std::vector<uint64_t> read;
		for (const PathRecord &r : records)
			read.push_back(r.path);
		engine().delete_paths(read);
		engine().open_window();
		session_.calibrate(true, o_.trace.has_value());
		engine().stop();
	}

	// Names the paths, writes the profile (and the trace) and says so.
	void save(const std::vector<PathRecord> &records, Wake reason)
	{
		refresh_comms();
		FunctionNamer namer = session_.namer(attach_maps_);
		NameLookup lookup = [&](uint32_t tgid, uint64_t func) { return namer(tgid, func); };
		if (size_t cut = session_.add_paths(profile_, records, namer))
			fprintf(stderr, "usdtprof: %zu function names or locations longer than %zu bytes were cut\n", cut,
				kMaxNameBytes);
		const char *why = reason == Wake::Stop		   ? "stopped by signal"
				  : reason == Wake::TargetExited ? "target exited"
								 : "duration elapsed";
		ProfileSinks sinks;
		sinks.push_back(std::make_unique<ProfileFileSink>(o_.output, why));
		if (o_.trace)
			sinks.push_back(std::make_unique<FunctionSink>([&](ProfileOutput &out) {
				write_trace(*o_.trace, log_, anomalies_[USDTPROF_ANOM_LOST_EVENTS], start_ns_, stop_ns_,
					    out.profile, lookup, engine().read_thread_comms(), span_names(custom_));
			}));
		ProfileOutput out{profile_, profile_.start_unix_ns};
		write_all(sinks, out);
	}

	// The exit status: the launched command's, once it has exited; 0 for a
	// recording of running processes.
	int wait_for_command_exit()
	{
		if (!child_ && !followed_)
			return 0;
		wait_for_command();
		return followed_ ? followed_->wait() : child_->wait();
	}

private:
	const RecordOptions &o_;
	const std::vector<ProbeRole> custom_;
	Session session_;
	std::vector<int> pids_; // the processes recorded: -p's, or the launched command
	std::optional<HeldChild> child_;
	std::unique_ptr<FollowedCommand> followed_;
	std::optional<FollowedTree> tree_;
	std::vector<const Preset *> chosen_;
	std::vector<FoundSite> sites_;
	std::map<int, std::vector<Mapping>> attach_maps_;
	Profile profile_;
	EventLog log_;
	uint64_t start_ns_ = 0, stop_ns_ = 0;
	std::array<uint64_t, USDTPROF_ANOM_COUNT> anomalies_{};
	std::string comm_;

	// The launched command's pid; 0 for running processes.
	int command_pid() const { return child_ || followed_ ? pids_.front() : 0; }
	Engine &engine() { return session_.engine(); }

	// The launched command is still running when recording stops: says so
	// once, then passes each further SIGINT/SIGTERM on to it; --kill-on-stop
	// kills it.
	void wait_for_command()
	{
		int pid = command_pid();
		if (has_exited(pid))
			return;
		if (o_.target.kill_on_stop) {
			log_line("--kill-on-stop: killing %s (pid %d)", comm_.c_str(), pid);
			kill(pid, SIGKILL);
			return;
		}
		log_line("waiting for %s (pid %d) to exit; press Ctrl-C again to stop it", comm_.c_str(), pid);
		session_.forward_signals_until_exit(pid);
	}

	// Calibration's events (usdtprof's own) are not the target's.
	std::function<void(const usdtprof_event &)> collector()
	{
		return [this](const usdtprof_event &e) {
			if (e.pid != uint32_t(getpid()))
				log_.add(e);
		};
	}

	void launch_followed()
	{
		tree_.emplace(o_.target, engine(), custom_, session_.files());
		// The command runs none of its code before it is launched: its
		// recording starts there, not at the first attach.
		engine().set_start_ns(monotonic_now());
		auto launched = FollowedCommand::launch(o_.target.command, tree_->callbacks());
		if (!launched)
			throw UserError(launched.error().message);
		followed_ = std::move(*launched);
		pids_ = {followed_->pid()};
	}

	// A held launch, restarted once if its runtime needs an environment
	// variable. It runs none of its code before its release: its recording
	// starts there, not at the attach.
	void launch_held()
	{
		FilesByPid files;
		for (int attempt = 0; attempt < 2; attempt++) {
			auto launched = HeldChild::launch(o_.target.command);
			if (!launched)
				throw UserError(launched.error().message);
			child_.reset();
			child_.emplace(std::move(*launched));
			files = launch_files(child_->pid(), session_.files());
			chosen_ = choose_presets(o_.target, files);
			// The held command has run none of its code: when its runtime
			// needs an environment variable, it starts again with it.
			if (!apply_launch_env(chosen_, o_.target.ruby_call_hook))
				break;
		}
		pids_ = {child_->pid()};
		add_process(child_->pid(), std::move(files));
		session_.attach(sites_, false);
		engine().set_start_ns(monotonic_now());
	}

	// The running processes of -p (each with the presets its own files have)
	// or of --binary.
	void attach_running()
	{
		if (!o_.target.binary.empty()) {
			AttachPlan plan = plan_attach(o_.target, 0, false, session_.target_files(o_.target, 0), custom_);
			chosen_ = std::move(plan.presets);
			sites_ = std::move(plan.sites);
			session_.attach(sites_, true);
			engine().share_tables(session_.processes().binary()->running());
			return;
		}
		for (int pid : pids_)
			add_process(pid, session_.target_files(o_.target, pid));
		session_.attach(sites_, false);
	}

	// One process's sites (each with the presets its own files have),
	// planned after those of the processes before it.
	void add_process(int pid, FilesByPid files)
	{
		session_.processes().add(pid);
		AttachPlan plan = plan_attach(o_.target, pid, child_.has_value(), std::move(files), custom_, sites_.size());
		sites_.insert(sites_.end(), plan.sites.begin(), plan.sites.end());
		for (const Preset *p : plan.presets)
			if (std::find(chosen_.begin(), chosen_.end(), p) == chosen_.end())
				chosen_.push_back(p);
		profile_.processes.push_back(session_.processes().seen().at(pid));
	}

	void announce()
	{
		if (tree_) {
			tree_->announce(command_pid());
			return;
		}
		std::string used = preset_list(chosen_), what;
		for (int pid : pids_)
			what += (what.empty() ? "" : ", ") + pid_text(pid);
		log_line("recording %s%s%s: %zu probe sites attached; Ctrl-C to stop",
			 pids_.empty() ? ("every process of " + o_.target.binary).c_str() : what.c_str(),
			 used.empty() ? "" : " with ", used.c_str(), engine().attached_sites());
	}

	// --binary: every process with a path or a span, as seen or as the kernel
	// kept its name.
	void describe_binary_processes(const std::vector<PathRecord> &records)
	{
		BinaryProcesses &binary = *session_.processes().binary();
		binary.scan();
		for (const auto &[p, maps] : binary.maps())
			attach_maps_.emplace(p, maps);
		std::set<uint32_t> tgids;
		for (const PathRecord &r : records)
			tgids.insert(r.stats.tgid);
		for (const ProfileSpan &sp : profile_.spans)
			tgids.insert(uint32_t(sp.pid));
		auto comms = engine().read_process_comms();
		for (uint32_t tgid : tgids) {
			auto seen = binary.seen().find(int(tgid));
			profile_.processes.push_back(seen != binary.seen().end() ? seen->second
										 : describe_process(int(tgid), comms));
		}
	}

	// Names set since the attach (prctl, pthread_setname_np): as they are now,
	// or were at the exit.
	void refresh_comms()
	{
		auto comms = engine().read_process_comms();
		for (ProfileProcess &p : profile_.processes)
			if (std::string now = has_exited(p.pid) ? "" : describe_process(p.pid).comm; !now.empty())
				p.comm = now;
			else if (auto c = comms.find(uint32_t(p.pid)); c != comms.end())
				p.comm = c->second;
	}
};

} // namespace

int record(const RecordOptions &o)
{
	std::vector<ProbeRole> custom = custom_roles(o.target);
	check_record_options(o);
	RecordSession session(o, std::move(custom));
	session.start();
	Wake reason = session.wait();
	std::vector<PathRecord> records = session.stop();
	if (session.found_no_probes())
		return session.say_no_probes();
	session.calibrate(records);
	session.save(records, reason);
	return session.wait_for_command_exit();
}

} // namespace usdtprof
