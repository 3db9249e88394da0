// The skeleton record, trace and monitor share: the signals that stop them,
// the loaded engine, the files and probes attached, one wait until a
// deadline, a signal or the target's exit, and the kernel's paths named into
// a Profile.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "base/unique_fd.h"
#include "engine/calibration.h"
#include "engine/call_paths.h"
#include "engine/engine.h"
#include "engine/probes.h"
#include "profile/profile.h"
#include "session/targets.h"
#include "target/proc_maps.h"
#include "target/target_file.h"

namespace usdtprof {

using Clock = std::chrono::steady_clock;

// Now on CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns() (steady_clock's).
uint64_t monotonic_now();

// What ended a wait.
enum class Wake { Deadline, Stop, Reopen, TargetExited };

// SIGINT and SIGTERM (and SIGHUP, when it reopens outputs), blocked from
// construction on and read through one signalfd: a signal that comes while
// probes are attached stops the session as soon as it waits. Never
// unblocked: launched commands restore them (fork_command), and threads
// started later (the /metrics server's) inherit the mask, so no signal
// reaches them instead.
class StopSignals {
public:
	explicit StopSignals(bool hangup_reopens);
	int fd() const { return fd_.get(); }
	// The signal pending, read (taken: a later one is a second Ctrl-C); 0 if none.
	int take();
	// The signal take() read last; 0 if none yet.
	int last() const { return last_; }

private:
	UniqueFd fd_;
	int last_ = 0;
};

// The processes whose exit ends a wait (none: no target to wait for). A
// process has exited once its pidfd is readable: a zombie too, as for
// process_exists.
class ExitWatch {
public:
	ExitWatch() = default;
	explicit ExitWatch(const std::vector<int> &pids);
	// Whether there are processes, and all of them are gone.
	bool all_gone();
	// The pidfds to poll, woken by an exit.
	const std::vector<UniqueFd> &pidfds() const { return pidfds_; }
	// Whether some process has no pidfd: only a periodic check sees it go.
	bool polls() const { return !polled_.empty(); }

private:
	std::vector<UniqueFd> pidfds_;
	std::vector<int> polled_; // without a pidfd: checked with process_exists
	bool any_ = false;
};

// How long and on what to wait.
struct WaitPlan {
	Clock::time_point deadline = Clock::time_point::max();
	// Processes watched without a pidfd are checked at least this often, and
	// tick first runs after it.
	std::chrono::milliseconds period{200};
	// Runs at each wake; returns how soon it wants to run again. With no tick
	// and no process to check, the wait sleeps until an event or the deadline.
	std::function<std::chrono::milliseconds()> tick; // may be empty
};

// Waits for the deadline (rounded up: waking before it would start a
// sliver of an interval), a signal or the exit of every watched process.
Wake wait_until(StopSignals &signals, ExitWatch &exits, const WaitPlan &plan);

// One session of probing: its stop signals (blocked from construction on),
// once loaded its engine, the files it attaches in and the probes attached,
// and their calibration. Throws UserError.
class Session {
public:
	explicit Session(bool hangup_reopens = false) : signals_(hangup_reopens) {}
	// Loads the engine (Engine::load); throws UserError.
	void load(uint32_t max_paths, uint32_t trace_buffer_bytes, bool offcpu_hook, bool per_thread = false,
		  bool per_process = false);
	Engine &engine() { return *engine_; }
	const Engine &engine() const { return *engine_; }
	// The processes whose exit ends wait().
	void watch(const std::vector<int> &pids) { exits_ = ExitWatch(pids); }
	Wake wait(const WaitPlan &plan) { return wait_until(signals_, exits_, plan); }
	// Passes each SIGINT/SIGTERM on to pid until it exits.
	void forward_signals_until_exit(int pid);

	// The files probes are attached in, each opened once: every attach (a
	// sampling window's again) and every name read uses these open files,
	// never their paths.
	TargetFiles &files() { return files_; }
	const AttachedProbes &attached() const { return attached_; }
	// Attaches sites (attach_sites): their probes join those attached.
	void attach(const std::vector<FoundSite> &sites, bool skip_gone);

	// The processes attached to: -p's or a launched one (added), or
	// --binary's, found from target_files() on.
	ProcessTable &processes() { return processes_; }
	const ProcessTable &processes() const { return processes_; }
	// The files to look for probes in for t's process pid, or (pid 0) for
	// every process of --binary (ProcessTable::target_files). Throws UserError.
	FilesByPid target_files(const TargetSpec &t, int pid) { return processes_.target_files(t, pid, files_); }
	// --binary: the processes started since the last scan get their
	// libraries' sites (for each of them only), planned after sites and
	// appended to them, attached when attach_now; the kernel's tables are
	// shared among the processes running.
	void attach_new_processes(const TargetSpec &t, const std::vector<const Preset *> &chosen,
				  const std::vector<ProbeRole> &custom, std::vector<FoundSite> &sites, bool attach_now);
	// The probes a followed command's attaches added up to, once stopped.
	void set_attached(AttachedProbes attached) { attached_ = std::move(attached); }
	// Measures the probes' cost (calibrate), or warns that times will be
	// shown as measured; the profiles named after it carry it.
	void calibrate(bool offcpu_hook, bool trace);
	// The same with the rounds a recording ran (Calibrator), at least
	// min_rounds for every kind.
	void calibrate(Calibrator &calibrator, int min_rounds);
	// Names the kernel's function ids: by the attached probes, the names the
	// kernel captured and maps (those of processes that may be gone), with
	// the calibrated cost kinds.
	FunctionNamer namer(std::map<int, std::vector<Mapping>> maps) const;
	// The kernel's paths into profile (add_call_paths), named by namer, with
	// the attached probes and the calibration; returns how many function
	// names or locations were cut.
	size_t add_paths(Profile &profile, PathColumns &records, const FunctionNamer &namer) const;
	// The kernel's spans as profile's spans, named by the --span specs among
	// custom (one no spec names is left out), sorted by name.
	void set_spans(Profile &profile, const std::vector<ProbeRole> &custom) const;
	// Warns of each --pair among custom whose frames did not nest with the
	// calls around them: its frames then mean nothing.
	void warn_unnested_pairs(const std::vector<ProbeRole> &custom) const;

private:
	StopSignals signals_;
	ExitWatch exits_;
	std::unique_ptr<Engine> engine_;
	TargetFiles files_;
	ProcessTable processes_; // after files_, which --binary's processes open files into
	AttachedProbes attached_;
	std::optional<CalibrationResult> calibration_;
};

} // namespace usdtprof
