// Paths inside a process's own root (a container's file system). A container
// is untrusted: usdtprof runs as root, and a path looked up through
// /proc/PID/root/... follows an absolute symlink planted there against the
// *host's* root (/app/bin/srv -> /etc/shadow). Such paths are resolved here
// with openat2(RESOLVE_IN_ROOT): symlinks, "..", absolute names, all stay
// inside that root.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace usdtprof {

// A path named as /proc/PID/root/REST on usdtprof's command line: PID and
// REST ("/" when none); nullopt for any other path.
struct RootedPath {
	int pid;
	std::string path;
};
std::optional<RootedPath> split_proc_root(const std::string &path);

// Opens path as process pid sees it (relative to its root, "/"-anchored),
// resolved inside that root only and without following /proc's magic links,
// O_PATH: nothing is opened for reading (a device, a FIFO) before the caller
// has checked what it is.
Result<UniqueFd> open_path_in_root(int pid, const std::string &path);
// Opens a regular file for reading through an O_PATH fd (reopen_regular: the
// kernel's link to that very file, no lookup by name); Error if it is not one.
Result<UniqueFd> reopen_regular(const UniqueFd &path_fd, const std::string &name);
// The name the kernel gives an open file (as its process's root shows it).
std::string fd_name(int fd);

} // namespace usdtprof
