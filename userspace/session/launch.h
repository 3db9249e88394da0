// What a launched command needs from the presets before it runs: the
// environment (and the launch scripts it names) its runtime needs, and the
// files its image maps or its presets load later. Used by a held launch and
// by a followed command's every new image.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/probes.h"
#include "session/targets.h"
#include "target/presets.h"
#include "target/proc_maps.h"
#include "target/target_file.h"

namespace usdtprof {

// Sets what the presets chosen need in a launched command's environment
// (installing their launch scripts when use_scripts); says so, or (later)
// keeps what it would say by preset in later. Returns whether the
// environment changed. Throws UserError when a script cannot be installed.
bool apply_launch_env(const std::vector<const Preset *> &chosen, bool use_scripts,
		      std::map<const Preset *, std::string> *later = nullptr);

// The files a launched command maps at its entry point (maps), and those its
// presets load later, opened into opened.
Result<FilesByPid> image_files(int pid, const std::vector<Mapping> &maps, TargetFiles &opened);
// image_files() of pid as it is mapped now. Throws UserError.
FilesByPid launch_files(int pid, TargetFiles &opened);

// A forked child maps its parent's files, but not their pages: the read-only
// mappings of the files with native names among sites are faulted in before
// the child runs (BPF reads names without faulting).
void fault_in_names(int pid, const std::vector<Mapping> &maps, const std::vector<FoundSite> &sites);

} // namespace usdtprof
