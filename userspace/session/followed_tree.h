// A launched command followed through exec and into its children
// (`record -- CMD`, `trace -- CMD`): the tracer thread of target/follow hands
// each new image and fork here, held until its probes are attached.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/engine.h"
#include "engine/probes.h"
#include "profile/profile.h"
#include "target/follow.h"
#include "target/presets.h"
#include "target/proc_maps.h"
#include "target/target_file.h"
#include "target/target_spec.h"

namespace usdtprof {

class FollowedTree {
public:
	// Sets the environment every runtime needs (any process of the tree may
	// exec one); said when a process of that runtime is attached.
	FollowedTree(const TargetSpec &t, Engine &engine, const std::vector<ProbeRole> &custom, TargetFiles &opened);
	// Joins the threads waiting to attach a process once it is ready.
	~FollowedTree();

	FollowedCommand::Callbacks callbacks();
	// Ends attaching, then (outside this) the engine stops (stop_engine): no
	// attach can come between them.
	void stop(FollowedCommand &command, const std::function<void()> &stop_engine);
	// The recording's first line; later attaches then say what they add.
	void announce(int pid);
	// Says that no program the tree ran had probes (found_no_probes).
	bool found_no_probes() const { return processes_.empty(); }
	void say_no_probes() const;

	// Read once stopped: no more change.
	const AttachedProbes &attached() const { return attached_; }
	const std::map<int, std::vector<Mapping>> &maps() const { return maps_; }
	const std::vector<ProfileProcess> &processes() const { return processes_; }
	bool reimaged(int pid) const { return reimaged_.count(pid); }

private:
	void on_image(int pid);
	void attach_when_ready(int pid, const Preset &preset);
	void attach_image(int pid, std::vector<Mapping> maps);
	void on_signal(int pid, int sig);
	void on_fork(int pid, int parent);
	void attach(int pid, std::vector<FoundSite> sites, std::vector<Mapping> maps,
		    const std::vector<const Preset *> &chosen);

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

} // namespace usdtprof
