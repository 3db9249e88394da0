// What to attach to: the presets and probe sites of a target, the processes
// of a binary. Shared by record, trace and monitor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "presets.h"
#include "probes.h"
#include "proc_maps.h"
#include "profile.h"
#include "recorder.h"

namespace usdtprof {

// "pid N (comm)".
std::string pid_text(int pid);
// A process that exited (a zombie too) maps nothing: that is not a lack of probes.
bool has_exited(int pid);
int64_t unix_now_ns();
// describe_process(), with the command name the kernel kept (comms) for a
// process that is gone.
ProfileProcess describe_process(int pid, const std::map<uint32_t, std::string> &comms);

// Processes running binary, by pid, each described and its maps read once.
class BinaryProcesses {
public:
	explicit BinaryProcesses(const std::string &binary);
	// Finds processes started since the last scan.
	void scan();
	// Drops the processes that have exited (a later one may reuse a pid) and
	// returns their pids, for the caller to drop what it keeps of them.
	std::vector<int> forget_exited();
	// The binary and the files its running processes map.
	std::vector<std::string> files() const;
	const std::map<int, ProfileProcess> &seen() const { return seen_; }
	const std::map<int, std::vector<Mapping>> &maps() const { return maps_; }

private:
	std::string path_;
	std::filesystem::path binary_;
	std::map<int, ProfileProcess> seen_;
	std::map<int, std::vector<Mapping>> maps_;
};

// The files to look for probes in: those of --binary's file and its running
// processes (binary_processes is set), or those process pid maps. Throws UserError.
std::vector<std::string> target_files(const RecordOptions &o, int pid,
				      std::optional<BinaryProcesses> &binary_processes);

// The probes of --pair and --task. Throws UserError (exit 2) for a bad spec.
std::vector<ProbeRole> custom_roles(const RecordOptions &o);
// The presets that apply: --runtime's, or those whose probes the files have.
std::vector<const Preset *> choose_presets(const RecordOptions &o, const std::vector<std::string> &files);
// The sites to attach in files for the presets and custom probes. For a
// process usdtprof did not launch, a preset's requirement the process lacks
// is an error that explains it; no site at all is an error. Throws UserError.
std::vector<FoundSite> plan_sites(const RecordOptions &o, int pid, bool launched, const std::vector<std::string> &files,
				  const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom);
// "native, php, ...".
std::string preset_names();

} // namespace usdtprof
