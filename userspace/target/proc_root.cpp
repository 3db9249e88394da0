#include "target/proc_root.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace usdtprof {

std::optional<RootedPath> split_proc_root(const std::string &path)
{
	constexpr std::string_view proc = "/proc/";
	if (!path.starts_with(proc))
		return std::nullopt;
	size_t digits = path.find_first_not_of("0123456789", proc.size());
	if (digits == proc.size() || digits == std::string::npos || digits - proc.size() > 9)
		return std::nullopt;
	std::string_view rest = std::string_view(path).substr(digits);
	if (!rest.starts_with("/root") || (rest.size() > 5 && rest[5] != '/'))
		return std::nullopt;
	int pid = std::stoi(path.substr(proc.size(), digits - proc.size()));
	std::string inside(rest.substr(5));
	return RootedPath{pid, inside.empty() ? "/" : inside};
}

Result<UniqueFd> open_path_in_root(int pid, const std::string &path)
{
	std::string root_path = "/proc/" + std::to_string(pid) + "/root";
	UniqueFd root(open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (root.get() < 0)
		return Error{root_path + ": " + strerror(errno)};
	open_how how = {};
	how.flags = O_PATH | O_CLOEXEC;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	// RESOLVE_IN_ROOT takes an absolute path as relative to the root.
	UniqueFd fd(int(syscall(SYS_openat2, root.get(), path.c_str(), &how, sizeof how)));
	if (fd.get() < 0)
		return Error{path + " (in the root of pid " + std::to_string(pid) + "): " + strerror(errno)};
	return fd;
}

Result<UniqueFd> reopen_regular(const UniqueFd &path_fd, const std::string &name)
{
	struct stat st;
	if (fstat(path_fd.get(), &st) != 0)
		return Error{name + ": " + strerror(errno)};
	if (!S_ISREG(st.st_mode))
		return Error{name + ": not a regular file"};
	std::string self = "/proc/self/fd/" + std::to_string(path_fd.get());
	UniqueFd fd(open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	if (fd.get() < 0)
		return Error{name + ": " + strerror(errno)};
	return fd;
}

std::string fd_name(int fd)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf);
	return n > 0 ? std::string(buf, size_t(n)) : "";
}

} // namespace usdtprof
