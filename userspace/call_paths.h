// The kernel's call-path records, turned into profile nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "probe_roles.h"
#include "profile.h"
#include "result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

struct PathRecord {
	uint64_t path = 0;
	usdtprof_path_stats stats{};
};

// Resolves a function id of a process to its name.
using NameLookup = std::function<Result<FunctionName>(uint32_t tgid, uint64_t func)>;

// A function's name or location is kept to this many bytes: a target's names
// are its own to choose, and every output holds them.
inline constexpr size_t kMaxNameBytes = 1024;

// Cuts s to at most max_bytes, at a UTF-8 character boundary, ending in
// "..."; true when it was longer.
bool cap_name(std::string &s, size_t max_bytes);

// The name of a function id: from lookup (name and location capped at
// kMaxNameBytes; *cut tells whether either was), "[unknown 0x...]" when it
// fails, and the synthetic ids' own names.
FunctionName function_name(const NameLookup &lookup, uint32_t tgid, uint64_t func, bool *cut = nullptr);

// Appends the records to profile.nodes, parents before children (the tree is
// rebuilt from each record's parent path id), each distinct function id
// resolved once by function_name() (functions with the same name and location
// are one; profile.locations is filled when any has a location). A
// record whose parent is missing (dropped when the map was full) goes under a
// "[parent dropped]" root of its process.
// Returns how many distinct functions had their name or location cut.
size_t add_call_paths(Profile &profile, const std::vector<PathRecord> &records, const NameLookup &lookup);

} // namespace usdtprof
