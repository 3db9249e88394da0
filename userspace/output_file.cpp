#include "output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace usdtprof {

Result<void> write_file_atomically(const std::string &path, const std::string &contents)
{
	std::string tmp = path + ".tmp." + std::to_string(getpid());
	auto fail = [&](int err) {
		unlink(tmp.c_str());
		return Error{"cannot write " + path + ": " + strerror(err)};
	};
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return Error{"cannot write " + path + ": " + strerror(errno)};
	for (size_t done = 0; done < contents.size();) {
		ssize_t n = write(fd, contents.data() + done, contents.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			return fail(err);
		}
		done += size_t(n);
	}
	if (fsync(fd) || close(fd))
		return fail(errno);
	if (rename(tmp.c_str(), path.c_str()))
		return fail(errno);
	// Make the rename itself durable; best effort, the data is in place.
	size_t slash = path.rfind('/');
	std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
	if (int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return {};
}

} // namespace usdtprof
