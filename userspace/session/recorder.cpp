#include "session/recorder.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unistd.h>

#include "base/host_steal.h"
#include "base/output_file.h"
#include "base/result.h"
#include "base/text_escape.h"
#include "engine/calibration.h"
#include "engine/call_paths.h"
#include "engine/engine.h"
#include "engine/probes.h"
#include "profile/anomalies.h"
#include "profile/profile.h"
#include "session/followed_tree.h"
#include "session/launch.h"
#include "session/session.h"
#include "session/sinks.h"
#include "session/targets.h"
#include "target/follow.h"
#include "target/presets.h"
#include "target/process.h"

namespace usdtprof {

namespace {

// The trace buffer: at ~40 bytes an event, room for ~400,000 between drains.
constexpr uint32_t kTraceBufferBytes = 16 << 20;

// The wait's ticks (RecordSession::next_tick) and what they run: the trace
// buffer's drain and the first calibration rounds at the fast tick,
// --binary's scan for new processes, and later rounds.
constexpr std::chrono::milliseconds kFastTick{50}, kScanEvery{200}, kRoundEvery{1000};

// Whether something last run at `last` is due again at `now`, every `every`:
// within half a fast tick, so that ticks of that period run it each time.
bool due(Clock::time_point last, std::chrono::milliseconds every, Clock::time_point now)
{
	return now - last >= every - kFastTick / 2;
}

void check_output_path(const std::string &output)
{
	if (auto r = check_output(output); !r)
		throw UserError(r.error().message);
}

// What record refuses before it loads anything. Throws UserError.
void check_record_options(const RecordOptions &o)
{
	if (auto r = check_profile_output(o.output); !r)
		throw UserError(r.error().message);
	if (o.trace) {
		check_output_path(o.trace->output);
		if (same_file(o.output, o.trace->output))
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
		steal_at_start_ = host_steal_ns();
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
		WaitPlan plan;
		if (o_.duration_s > 0)
			plan.deadline = Clock::now() +
					std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.duration_s));
		plan.period = kFastTick;
		auto scanned = Clock::now();
		plan.tick = [&] {
			engine().drain_events(collector());
			auto now = Clock::now();
			if (session_.processes().binary() && due(scanned, kScanEvery, now)) {
				session_.attach_new_processes(o_.target, chosen_, custom_, sites_, true);
				scanned = now;
			}
			calibrate_beside(now);
			return next_tick();
		};
		session_.watch(pids_);
		return session_.wait(plan);
	}

	// The profile covers what the probes could see: from the start to the
	// stop, after which no hit counts. Returns the paths the kernel holds.
	PathColumns stop()
	{
		if (tree_) {
			followed_processes_ = tree_->stop(*followed_, [&] { stop_ns_ = engine().stop(); });
			session_.set_attached(tree_->attached());
			attach_maps_ = followed_processes_.maps();
			profile_.processes = followed_processes_.described();
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
		if (getenv("USDTPROF_DEBUG"))
			for (auto [cpu, ns] : engine().steal_seen())
				fprintf(stderr, "usdtprof: steal clock read on cpu %u: %llu ns\n", cpu,
					(unsigned long long)ns);
		anomalies_ = engine().anomalies();
		for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
			profile_.anomalies[anomaly_name(a)] = anomalies_[a];
		if (auto steal = host_steal_ns(); steal && steal_at_start_ && *steal >= *steal_at_start_)
			profile_.anomalies[kHostStealNs] = *steal - *steal_at_start_;
		session_.warn_unnested_pairs(custom_);
		session_.set_spans(profile_, custom_);
		// A process that has exited maps nothing any more: then native names are
		// read from the files it mapped at attach time.
		for (auto &[p, maps] : attach_maps_)
			if (auto fresh = read_proc_maps(p); fresh && !fresh->empty() && !followed_processes_.reimaged(p))
				maps = std::move(*fresh);
		PathColumns records;
		engine().read_paths(records);
		records.keep_if([&](size_t i) { return records.tgid(i) != uint32_t(getpid()); });
		if (session_.processes().binary())
			describe_binary_processes(records);
		apply_titles(profile_.processes, engine().read_process_titles());
		if (int pid = command_pid())
			comm_ = describe_process(pid).comm;
		return records;
	}

	// A followed command that ran no program with probes: says so.
	bool found_no_probes() const { return tree_ && followed_processes_.empty(); }
	int say_no_probes()
	{
		tree_->say_no_probes();
		wait_for_command();
		followed_->wait();
		return 1;
	}

	// Calibrates beside the target while it runs, as the machine's speed
	// state moves (docs/design.md, "Overhead compensation"): a round at
	// the start and at each 50 ms tick until the rounds' places are full
	// (0.6 s, ~1-2 ms a round and kind on usdtprof's thread), then one a
	// second. Not with --trace: the calibration's hits would be events.
	void begin_calibration()
	{
		if (o_.trace)
			return;
		if (const char *after = getenv("USDTPROF_BENCH_CAL_AFTER"); after && std::string(after) == "1") {
			fprintf(stderr, "usdtprof: USDTPROF_BENCH_CAL_AFTER=1: calibrating after the target only\n");
			return;
		}
		calibrator_ = std::make_unique<Calibrator>(engine(), true, false);
		calibrate_beside(Clock::now());
	}
	void calibrate_beside(Clock::time_point now)
	{
		if (!calibrator_ || (calibrator_->rounds() >= kCalibrationRounds && !due(calibrated_, kRoundEvery, now)))
			return;
		if (auto r = calibrator_->add_kinds(); !r) {
			calibrator_.reset(); // the end's calibration says why
			return;
		}
		calibrator_->run_round();
		calibrated_ = now;
	}

	// The wait's next tick: every 50 ms while the calibration's rounds fill
	// their places, and with --trace (its buffer drained); every 200 ms with
	// --binary (new processes); else at the next round, a second on.
	std::chrono::milliseconds next_tick() const
	{
		if (o_.trace || (calibrator_ && calibrator_->rounds() < kCalibrationRounds))
			return kFastTick;
		return session_.processes().binary() ? kScanEvery : kRoundEvery;
	}

	// The rest of the calibration last, when every probe kind used is
	// known: rounds until each kind has 4 (a recording under ~0.2 s, or a
	// kind that came late; 12 with --trace, all of them). The target's
	// paths, all read, leave the table (a full one would keep no
	// calibration); the probes count again, at usdtprof's own sites only.
	void calibrate(const PathColumns &records)
	{
		engine().delete_paths(records.path, records.slot);
		engine().open_window();
		if (calibrator_)
			session_.calibrate(*calibrator_, 4);
		else
			session_.calibrate(true, o_.trace.has_value());
		engine().stop();
	}

	// Names the paths, writes the profile (and the trace) and says so.
	void save(PathColumns &records, Wake reason)
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
			sinks.push_back(std::make_unique<TraceFileSink>(
				*o_.trace, log_,
				TraceNames{start_ns_, stop_ns_, anomalies_[USDTPROF_ANOM_LOST_EVENTS], lookup,
					   engine().read_thread_comms(), span_names(custom_)}));
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
	FollowedProcesses followed_processes_; // the tree's, once stopped
	std::vector<const Preset *> chosen_;
	std::vector<FoundSite> sites_;
	std::map<int, std::vector<Mapping>> attach_maps_;
	Profile profile_;
	EventLog log_;
	uint64_t start_ns_ = 0, stop_ns_ = 0;
	std::optional<uint64_t> steal_at_start_;
	std::array<uint64_t, USDTPROF_ANOM_COUNT> anomalies_{};
	std::string comm_;
	std::unique_ptr<Calibrator> calibrator_; // rounds run while the target runs
	Clock::time_point calibrated_;		 // its last round

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
	void describe_binary_processes(const PathColumns &records)
	{
		BinaryProcesses &binary = *session_.processes().binary();
		binary.scan();
		for (const auto &[p, maps] : binary.maps())
			attach_maps_.emplace(p, maps);
		std::set<uint32_t> tgids;
		for (const PathNode &r : records.nodes)
			tgids.insert(uint32_t(r.pid));
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
	session.begin_calibration();
	Wake reason = session.wait();
	PathColumns records = session.stop();
	if (session.found_no_probes())
		return session.say_no_probes();
	session.calibrate(records);
	session.save(records, reason);
	return session.wait_for_command_exit();
}

} // namespace usdtprof