// Which probe sites a process has, and attaching the engine to them.
#pragma once

#include <string>
#include <vector>

#include "engine.h"
#include "probe_roles.h"
#include "proc_maps.h"
#include "profile.h"
#include "usdt.h"

namespace usdtprof {

struct FoundSite {
	std::string binary;
	UsdtSite site;
	usdtprof_role role;
	unsigned arg; // which argument identifies the function or task
};

// The sites of the given probes in every file the process maps.
std::vector<FoundSite> find_sites(const std::vector<Mapping> &maps, const std::vector<ProbeRole> &roles);

// Attaches every site for pid, exits before entries. Throws UserError.
std::vector<ProfileProbe> attach_sites(Engine &engine, int pid, const std::vector<FoundSite> &sites);

} // namespace usdtprof
