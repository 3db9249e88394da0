// Which probe sites a process has, attaching the engine to them, and naming
// the functions they report.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "target/probe_roles.h"
#include "target/proc_maps.h"
#include "profile/profile.h"
#include "target/target_file.h"
#include "target/usdt.h"

namespace usdtprof {

struct FoundSite {
	TargetFilePtr file;
	int pid = 0; // attached for this process only; 0: every process running the file
	UsdtSite site;
	ProbeRole probe;
};

// The sites of the given probes in each file, to attach for pid (0: every
// process), up to kMaxSitesTotal with those already planned (said when cut).
std::vector<FoundSite> find_sites(const std::vector<TargetFilePtr> &files, int pid, const std::vector<ProbeRole> &roles,
				  size_t already = 0);

// A probe's content_mask in a file whose sites are file_sites: without
// USDTPROF_CONTENT_PINNED where the file has no probe names_freed_at (nothing
// would tell when the runtime frees the names pinned).
uint32_t site_content_mask(const ProbeRole &probe, const std::vector<UsdtSite> &file_sites);

// The clock reads a site of our header passes (usdtprof_probe_spec.inband
// and clock_args): none unless it is one.
void place_clock_args(const FoundSite &f, usdtprof_probe_spec &spec);

struct AttachedProbes {
	std::vector<ProfileProbe> probes;
	std::map<uint32_t, ProbeRole> spec_probes; // probe spec index -> the probe it serves
};

// Attaches every site for its pid (0: every process mapping the file), exits
// before entries. Throws UserError; with skip_gone, the sites of a process
// that has exited are skipped instead.
AttachedProbes attach_sites(Engine &engine, const std::vector<FoundSite> &sites, bool skip_gone = false);
// Adds what more was attached.
void merge_attached(AttachedProbes &into, const AttachedProbes &more);

// Names the function ids of a recording: constants of the attached probes,
// names the kernel captured for runtime probes, and for native probes the
// string at the id's address in the process (or in the open file it mapped
// there: read_target_string). A name "from" its caller (FunctionName::caller)
// has that caller's name appended, callers' callers too, up to 32.
class FunctionNamer {
public:
	FunctionNamer(const AttachedProbes &attached, std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> captured,
		      std::map<int, std::vector<Mapping>> maps, const TargetFiles &files);
	Result<FunctionName> operator()(uint32_t tgid, uint64_t func) const;
	// Names then carry their probe's calibrated cost kind.
	void set_cost_kinds(std::map<uint32_t, int32_t> spec_kinds, int32_t native_kind);

private:
	// depth: how many callers' names this one is within (FunctionName::caller).
	Result<FunctionName> name(uint32_t tgid, uint64_t func, int depth) const;

	std::map<uint64_t, std::string> constants_;
	std::map<uint64_t, uint32_t> constant_specs_;
	std::map<uint32_t, int32_t> spec_kinds_;
	int32_t native_kind_ = -1;
	std::map<uint32_t, ProbeRole> spec_probes_;
	std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> captured_;
	std::map<int, std::vector<Mapping>> maps_;
	const TargetFiles &files_;
};

} // namespace usdtprof
