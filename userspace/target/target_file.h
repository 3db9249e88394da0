// The files of a target, opened once and checked. A target's owner may swap
// any path it maps for a symlink, a FIFO or another file at any time: its
// files are read and attached through the file opened here (the kernel
// resolves /proc/self/fd/N to the open file itself), never by path again.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

#include "target/proc_maps.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "target/usdt.h"

namespace usdtprof {

struct TargetFile {
	std::string path;            // as the maps line or the command line named it: messages, profiles
	UniqueFd fd;
	uint64_t dev = 0, ino = 0;
	std::vector<UsdtSite> sites; // its USDT sites, read once (at most kMaxSitesPerFile)

	// What the kernel is given to attach to this very file.
	std::string fd_path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }
};
using TargetFilePtr = std::shared_ptr<const TargetFile>;

// Whether an open file (its fstat) is the file a maps line shows: a regular
// file on the same device with the same inode.
bool is_mapped_file(const struct stat &st, const Mapping &m);

// The file of mapping m of process pid, opened through /proc/PID/map_files/
// (the file mapped there, no path lookup) or, if that is refused, by its
// path looked up inside the process's own root (proc_root.h: never leading
// out of a container), checked before it is opened for reading; either way
// it must be the file the maps line shows. Its USDT sites are read.
Result<TargetFilePtr> open_mapped_file(int pid, const Mapping &m);
// A file named on usdtprof's command line (a symlink there is root's
// choice), opened without blocking: a regular ELF file. Its sites are read.
// /proc/PID/root/REST is REST inside that process's root (a container's),
// resolved there (proc_root.h): a symlink in it cannot lead to a host file.
Result<TargetFilePtr> open_named_file(const std::string &path);
// The file at path as process pid sees it, resolved inside its root only
// (proc_root.h), named path: a regular ELF file. Its sites are read.
Result<TargetFilePtr> open_file_in_root(int pid, const std::string &path);

// The files of targets by device and inode, each opened (and its notes
// read) once however many processes map it.
class TargetFiles {
public:
	// The files with USDT notes among those pid maps executable. One that
	// cannot be opened or read, or whose sites would bring those kept beyond
	// kMaxSitesTotal, is skipped with a note on stderr.
	std::vector<TargetFilePtr> of_process(int pid, const std::vector<Mapping> &maps);
	// Adds a file opened otherwise (named on the command line).
	void add(const TargetFilePtr &file);
	// The file with the device and inode of m, if open.
	TargetFilePtr find(const Mapping &m) const;

private:
	// nullptr: seen, no notes (or unreadable): not kept open.
	std::map<std::pair<uint64_t, uint64_t>, TargetFilePtr> files_;
	size_t sites_ = 0; // kept in all
};

// Reads a NUL-terminated string at addr of a process that mapped maps: from
// its memory while it lives, else from the open file of the mapping at addr
// (same device and inode) in files, if that mapping is read-only (a literal:
// the file holds what the process saw). Never by path: Error otherwise.
Result<std::string> read_target_string(int pid, const std::vector<Mapping> &maps, const TargetFiles &files,
				       uint64_t addr);

} // namespace usdtprof
