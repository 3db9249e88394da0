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
#include <utility>
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

// One process of a followed tree, as it was attached.
struct FollowedProcess {
	ProfileProcess described;            // at its latest attach
	std::vector<Mapping> maps;           // its first recorded image's: native names are looked up in them
	std::vector<FoundSite> sites;        // attached for its latest image (and its held ones, once safe)
	std::vector<const Preset *> presets; // its latest image's
	std::set<std::pair<uint64_t, uint64_t>> files; // device, inode: each file attached for it once
	bool reimaged = false;               // ran a second recorded image (its names captured in the kernel)
};

// The followed tree's process table: the processes attached, by pid, and
// the sites held back for a process until it says they are safe. Written by
// the tracer thread (under the tree's lock) until the tree stops; then
// handed whole to the recording (FollowedTree::stop).
class FollowedProcesses {
public:
	// The process, if attached.
	FollowedProcess *find(int pid);
	// Records an attach of pid's sites: a new process (a new image's or a
	// fork's), or a new image of one, which keeps its first maps and the
	// files attached before.
	void attached(int pid, std::vector<FoundSite> sites, std::vector<Mapping> maps,
		      const std::vector<const Preset *> &presets);
	// Sites of pid to attach once it says they are safe (Ruby's C methods):
	// those of its latest image.
	void hold(int pid, std::vector<FoundSite> sites) { held_[pid] = std::move(sites); }
	// pid's held sites (nullptr: none).
	const std::vector<FoundSite> *held(int pid) const;
	// pid's held sites, taken out of the table.
	std::vector<FoundSite> take_held(int pid);

	bool empty() const { return by_pid_.empty(); }
	// The processes as the profile describes them, in the order of their latest attach.
	std::vector<ProfileProcess> described() const;
	// Each process's first recorded image's maps.
	std::map<int, std::vector<Mapping>> maps() const;
	bool reimaged(int pid) const;

private:
	std::map<int, FollowedProcess> by_pid_;
	std::vector<int> order_; // pids, by their latest attach
	std::map<int, std::vector<FoundSite>> held_;
};

class FollowedTree {
public:
	// Sets the environment every runtime needs (any process of the tree may
	// exec one); said when a process of that runtime is attached.
	FollowedTree(const TargetSpec &t, Engine &engine, const std::vector<ProbeRole> &custom, TargetFiles &opened);
	// Joins the threads waiting to attach a process once it is ready.
	~FollowedTree();

	FollowedCommand::Callbacks callbacks();
	// Ends attaching, then (outside this) the engine stops (stop_engine): no
	// attach can come between them. Returns the process table, which the
	// tree then no longer has.
	FollowedProcesses stop(FollowedCommand &command, const std::function<void()> &stop_engine);
	// The recording's first line; later attaches then say what they add.
	void announce(int pid);
	// Says, once stopped, that no program the tree ran had probes (its
	// process table was empty).
	void say_no_probes() const;

	// Read once stopped: no more change.
	const AttachedProbes &attached() const { return attached_; }

private:
	void on_image(int pid);
	void attach_when_ready(int pid, const Preset &preset);
	void attach_image(int pid, std::vector<Mapping> maps);
	void on_signal(int pid, int sig);
	void on_fork(int pid, int parent);
	void attach(int pid, std::vector<FoundSite> sites, std::vector<Mapping> maps,
		    const std::vector<const Preset *> &chosen);
	void say_new_presets(const std::vector<const Preset *> &chosen);

	const TargetSpec &t_;
	Engine &engine_;
	const std::vector<ProbeRole> &custom_;
	TargetFiles &opened_; // the tracer thread's under mutex_, until stopped
	std::mutex mutex_;
	bool stopped_ = false, announced_ = false;
	AttachedProbes attached_;
	FollowedProcesses processes_; // the tracer thread's under mutex_, until stop() hands it over
	std::vector<std::string> searched_;
	std::vector<const Preset *> used_;
	std::map<const Preset *, std::string> env_said_;
	std::vector<std::thread> pollers_; // attach_when_ready's, under mutex_ until stopped
};

} // namespace usdtprof
