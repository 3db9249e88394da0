// The kernel's call-path records, turned into profile nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "target/naming.h"
#include "target/probe_roles.h"
#include "profile/profile.h"
#include "base/result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

struct PathRecord {
	uint64_t path = 0;
	usdtprof_path_stats stats{};
};

// A path's durations as the kernel keeps them (usdtprof_path_stats).
Distribution distribution_of(const usdtprof_path_stats &s);

// Appends the records to profile.nodes, parents before children (the tree is
// rebuilt from each record's parent path id), each distinct function id
// resolved once by function_name() (functions with the same name and location
// are one; profile.locations is filled when any has a location). A
// record whose parent is missing (dropped when the map was full) goes under a
// "[parent dropped]" root of its process.
// The roots of a process in process_roots hang under one frame of the name
// given there (process_root_label, presets.h), one call, as long as they;
// that frame is a child of the path label_parents gives the process, when
// it is among the records (a PostgreSQL parallel worker's leader's statement,
// Engine::read_worker_statements), its total not added to that path's: the
// worker ran beside its leader, whose statement's time stays its own.
// Returns how many distinct functions had their name or location cut.
size_t add_call_paths(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup,
		      const std::map<uint32_t, std::string> &process_roots = {},
		      const std::map<uint32_t, uint64_t> &label_parents = {});

} // namespace usdtprof
