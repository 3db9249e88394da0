// monitor --all: every process of the host with probes of the chosen
// presets, found by a scan of /proc at the start and from then on by the
// kernel's exec and fork events (engine/exec_events.h), up to a cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/exec_events.h"
#include "engine/probes.h"
#include "session/targets.h"
#include "target/presets.h"
#include "target/target_file.h"
#include "target/target_spec.h"

namespace usdtprof {

// The presets --all looks for: those named (--runtime, several), or by
// default every preset whose probes fire in a process as it was started
// (not Ruby's, which fire only under a call hook a launch installs).
// Throws UserError (exit 2) for an unknown name.
std::vector<const Preset *> host_presets(const std::vector<std::string> &runtimes);

// The cap on the processes profiled at once (pure): a process is admitted
// while fewer than max are; refused ones are counted, and the first refusal
// of a run is the one to say.
class ProcessCap {
public:
	explicit ProcessCap(size_t max) : max_(max) {}
	enum class Admit { Yes, Refused, RefusedFirst };
	Admit admit(int pid);
	void release(int pid) { admitted_.erase(pid); }
	size_t count() const { return admitted_.size(); }
	size_t refused() const { return refused_; }

private:
	size_t max_;
	std::set<int> admitted_;
	size_t refused_ = 0;
};

// The processes --all profiles, each described and its maps read in table
// (ProcessTable::add), their sites planned with the presets their own files
// have. Never usdtprof itself, nor any process running usdtprof's file.
class HostProcesses {
public:
	HostProcesses(const TargetSpec &t, std::vector<const Preset *> presets, std::vector<ProbeRole> custom,
		      size_t max_processes, TargetFiles &files, ProcessTable &table);
	// Loads the kernel's exec and fork events (before the first scan, so no
	// process starts unseen between them). Throws UserError.
	void listen();
	// The sites of processes newly found: by a scan of /proc (the first call,
	// or after the kernel lost events), else from the events since the last
	// call; planned after already sites. Processes without probes are ignored.
	std::vector<FoundSite> discover(size_t already);
	// Says the processes discover() found since the last call, once their
	// sites are attached (or, not attached, that they will be).
	void say_found(bool attached);
	// A process that has gone, its last interval written.
	void forget(int pid);
	// The profiled processes that exec'd since the last call (their exec
	// events, read by discover()): each runs another program now.
	std::vector<ProcessStart> take_execs() { return std::exchange(execs_, {}); }
	// The profiled processes' execs the kernel has reported so far, not yet
	// read by discover() (which still gets them): an interval that ends now
	// holds their old programs' part only, though they are planned again in
	// the next.
	std::vector<ProcessStart> execs_unread();
	// One of them, once its old program's probes are dropped: forgotten,
	// then examined as a new process (its new program's sites, planned
	// after already); without probes it stays forgotten, said once.
	std::vector<FoundSite> replan(int pid, size_t already);
	// The processes profiled now.
	size_t profiled() const { return cap_.count(); }
	size_t refused() const { return cap_.refused(); }
	const std::set<int> &pids() const { return pids_; }
	// The presets that some process profiled has (or had).
	const std::vector<const Preset *> &chosen() const { return chosen_; }

private:
	std::vector<FoundSite> examine(int pid, size_t already);

	const TargetSpec &t_;
	std::vector<const Preset *> presets_, chosen_;
	std::vector<ProbeRole> custom_;
	ProcessCap cap_;
	TargetFiles &files_;
	ProcessTable &table_;
	std::unique_ptr<ExecEvents> events_;
	std::set<int> pids_;
	std::set<std::pair<uint64_t, uint64_t>> own_exe_; // usdtprof's file (device, inode)
	bool scanned_ = false;
	int under_ = 0; // USDTPROF_TEST_ALL_UNDER: only this process and its descendants
	// Processes that exec'd without probes yet (a runtime's library may be
	// mapped later): looked at once more, a second later.
	std::map<int, uint64_t> again_at_;
	std::set<const Preset *> check_said_;
	std::vector<std::string> found_; // to say
	std::vector<ProcessStart> execs_; // profiled processes that exec'd, and when (take_execs)
	std::vector<ProcessStart> unread_; // events taken by execs_unread, for discover
};

} // namespace usdtprof
