// What to attach to: the presets and probe sites of a target, the processes
// of a binary. Shared by record, trace and monitor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/presets.h"
#include "engine/probes.h"
#include "target/proc_maps.h"
#include "profile/profile.h"
#include "target/target_file.h"
#include "target/target_spec.h"

namespace usdtprof {

// "pid N (comm)".
std::string pid_text(int pid);
int64_t unix_now_ns();
// describe_process(), with the command name the kernel kept (comms) for a
// process that is gone.
ProfileProcess describe_process(int pid, const std::map<uint32_t, std::string> &comms);

// The files to attach to, by the process they are attached for (0: every
// process running the file: --binary's own file only).
using FilesByPid = std::map<int, std::vector<TargetFilePtr>>;

// Processes running binary (the file opened once: the same device and
// inode, whatever the path), by pid, each described, its maps read and its
// files with probes opened once (in files).
class BinaryProcesses {
public:
	// Throws UserError when binary cannot be read.
	BinaryProcesses(const std::string &binary, TargetFiles &files);
	// Finds processes started since the last scan; returns their pids.
	std::vector<int> scan();
	// Drops a process that has exited (a later one may reuse its pid); the
	// caller decides when: after a read that holds all it counted.
	void forget(int pid);
	// The binary (for every process) and the other files of the processes
	// pids (for each process only): all when pids is empty.
	FilesByPid files(const std::vector<int> &pids = {}) const;
	// How many of them are running.
	size_t running() const;
	const std::map<int, ProfileProcess> &seen() const { return seen_; }
	const std::map<int, std::vector<Mapping>> &maps() const { return maps_; }

private:
	TargetFiles &files_;
	TargetFilePtr binary_;
	std::map<int, ProfileProcess> seen_;
	std::map<int, std::vector<Mapping>> maps_;
	std::map<int, std::vector<TargetFilePtr>> libraries_;
};

// The files to look for probes in: those of --binary's file and its running
// processes (binary_processes is set), or those process pid maps, opened
// into files. Throws UserError.
FilesByPid target_files(const TargetSpec &t, int pid, std::optional<BinaryProcesses> &binary_processes,
			TargetFiles &files);

// The processes a session attaches to, each described and its maps read when
// first seen: --binary's (BinaryProcesses, found by scanning) or those added
// (-p's, a launched command).
class ProcessTable {
public:
	// The files to look for probes in (target_files): for --binary, its
	// processes are scanned from here on. Throws UserError.
	FilesByPid target_files(const TargetSpec &t, int pid, TargetFiles &files)
	{
		return usdtprof::target_files(t, pid, binary_, files);
	}
	// A process of -p, or launched: described, its maps read.
	void add(int pid);
	// Forgets an added process that has gone (monitor --all).
	void forget(int pid)
	{
		added_.erase(pid);
		maps_.erase(pid);
	}
	// --binary's processes; nullptr for -p and a launched command.
	BinaryProcesses *binary() { return binary_ ? &*binary_ : nullptr; }
	const BinaryProcesses *binary() const { return binary_ ? &*binary_ : nullptr; }
	const std::map<int, ProfileProcess> &seen() const { return binary_ ? binary_->seen() : added_; }
	const std::map<int, std::vector<Mapping>> &maps() const { return binary_ ? binary_->maps() : maps_; }

private:
	std::optional<BinaryProcesses> binary_;
	std::map<int, ProfileProcess> added_;
	std::map<int, std::vector<Mapping>> maps_;
};

// -p's pids, each once, in order (a process attached twice would count each
// call twice).
std::vector<int> unique_pids(const std::vector<int> &pids);
// What the target options name exists: each -p's process, --binary's file.
// Throws UserError.
void check_target_exists(const TargetSpec &t);

// The probes of --pair and --task. Throws UserError (exit 2) for a bad spec.
std::vector<ProbeRole> custom_roles(const TargetSpec &t);
// --span specs among custom, by their span ids.
std::map<uint32_t, std::string> span_names(const std::vector<ProbeRole> &custom);
// The presets that apply: --runtime's, or those whose probes the files have.
std::vector<const Preset *> choose_presets(const TargetSpec &t, const FilesByPid &files);
// Some site to attach a program to (not only a semaphore to hold).
bool has_probe_sites(const std::vector<FoundSite> &sites);
// Says once per run, for each chosen preset with a semaphore_note, that a
// semaphore of it is held up, if one is among sites (CPython 3.11's python:line).
void say_semaphore_notes(const std::vector<FoundSite> &sites, const std::vector<const Preset *> &chosen);
// The sites to attach in files for the presets and custom probes. For a
// process usdtprof did not launch, a preset's requirement the process lacks
// is an error that explains it; no site at all is an error. already: the
// sites planned before these (of other processes). Throws UserError.
std::vector<FoundSite> plan_sites(const TargetSpec &t, int pid, bool launched, const FilesByPid &files,
				  const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom,
				  size_t already = 0);
// One process's (or, pid 0, every process of --binary's) attach plan: the
// files searched, the presets that apply, the sites to attach.
struct AttachPlan {
	FilesByPid files;
	std::vector<const Preset *> presets;
	std::vector<FoundSite> sites;
};

// The planning step from a target to its sites, for record, trace and
// monitor: the presets that apply to files (choose_presets) and their sites
// with the custom probes' (plan_sites), checked. Throws UserError.
AttachPlan plan_attach(const TargetSpec &t, int pid, bool launched, FilesByPid files,
		       const std::vector<ProbeRole> &custom, size_t already = 0);

// The sites in more files (of processes started since, or of a followed
// command's new image), already planned before them. No checks, nothing said.
// Sites a preset says are not safe in their process yet (Preset::safe_in,
// Ruby's C method probes) are left out: into held when given (attached once
// the process raises the preset's safe_signal), else said once.
std::vector<FoundSite> more_sites(const TargetSpec &t, const FilesByPid &files,
				  const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom,
				  size_t already, std::vector<FoundSite> *held = nullptr);
// Native names captured in the kernel, like runtimes' names: for processes
// whose maps may be gone (or replaced by an exec) when names are read.
void capture_native_names(std::vector<FoundSite> &sites);
// For a runtime known to be often built without probes (the executable
// binary named python*, ruby*, php*, java*): "; it is a ... built without
// USDT probes: /usr/bin/... has them, use it instead"; else "".
std::string probeless_runtime_hint(const std::string &binary);
// "native, php, ...".
std::string preset_names();
// The names of chosen: "native, php".
std::string preset_list(const std::vector<const Preset *> &chosen);

} // namespace usdtprof
