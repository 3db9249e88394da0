// /proc/PID/maps: which files a process maps, and where.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace usdtprof {

struct Mapping {
	uint64_t start = 0, end = 0; // [start, end) virtual addresses
	uint64_t offset = 0;         // file offset of start
	bool readable = false, writable = false, executable = false;
	uint64_t dev = 0;            // makedev(major, minor) of the file's device, as stat's st_dev
	uint64_t inode = 0;
	std::string path;            // empty for anonymous mappings
};

Result<std::vector<Mapping>> read_proc_maps(int pid);
// Parses the text of a maps file (pure; read_proc_maps uses it).
std::vector<Mapping> parse_proc_maps(const std::string &text);
// The first executable mapping of each distinct file (device and inode), in
// map order, skipping pseudo-files like [vdso] and deleted files.
std::vector<Mapping> executable_mappings(const std::vector<Mapping> &maps);
// Their paths.
std::vector<std::string> executable_files(const std::vector<Mapping> &maps);
// The mapping containing addr, if any.
std::optional<Mapping> mapping_for(const std::vector<Mapping> &maps, uint64_t addr);

} // namespace usdtprof
