// The skeleton record, trace and monitor share: the signals that stop them,
// the loaded engine, and one wait until a deadline, a signal or the target's
// exit.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/unique_fd.h"
#include "engine/engine.h"

namespace usdtprof {

using Clock = std::chrono::steady_clock;

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

// The processes whose exit ends a wait (none: no target to wait for).
class ExitWatch {
public:
	enum class Gone {
		Exited, // a process has exited once its pidfd is readable (a zombie too)
		Reaped, // a process has gone once kill(0) fails
	};
	ExitWatch() = default;
	ExitWatch(const std::vector<int> &pids, Gone gone);
	// Whether there are processes, and all of them are gone.
	bool all_gone();
	// The pidfds to poll, woken by an exit.
	const std::vector<UniqueFd> &pidfds() const { return pidfds_; }

private:
	std::vector<UniqueFd> pidfds_;
	std::vector<int> polled_; // without a pidfd (or Reaped): checked with kill(0)
	bool any_ = false;
};

// How long and on what to wait.
struct WaitPlan {
	Clock::time_point deadline = Clock::time_point::max();
	// tick runs, and the watched processes are checked, at least this often.
	std::chrono::milliseconds period{200};
	std::function<void()> tick; // may be empty
};

// Waits for the deadline (rounded up: waking before it would start a
// sliver of an interval), a signal or the exit of every watched process.
Wake wait_until(StopSignals &signals, ExitWatch &exits, const WaitPlan &plan);

// One session of probing: its stop signals (blocked from construction on)
// and, once loaded, its engine. Throws UserError.
class Session {
public:
	explicit Session(bool hangup_reopens = false) : signals_(hangup_reopens) {}
	// Loads the engine (Engine::load); throws UserError.
	void load(uint32_t max_paths, uint32_t trace_buffer_bytes, bool offcpu_hook);
	Engine &engine() { return *engine_; }
	const Engine &engine() const { return *engine_; }
	// The processes whose exit ends wait().
	void watch(const std::vector<int> &pids, ExitWatch::Gone gone) { exits_ = ExitWatch(pids, gone); }
	Wake wait(const WaitPlan &plan) { return wait_until(signals_, exits_, plan); }
	// Passes each SIGINT/SIGTERM on to pid until it exits.
	void forward_signals_until_exit(int pid);

private:
	StopSignals signals_;
	ExitWatch exits_;
	std::unique_ptr<Engine> engine_;
};

} // namespace usdtprof
