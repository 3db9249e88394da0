#include "target/target_file.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "target/proc_root.h"
#include "target/process.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

// Longer names are cut here and marked with "...".
constexpr size_t kMaxName = 4096;

std::string map_files_path(int pid, const Mapping &m)
{
	char buf[96];
	snprintf(buf, sizeof buf, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m.start, m.end);
	return buf;
}

// Reads fd's notes into a TargetFile, saying so when the cap cut them.
Result<TargetFilePtr> load(UniqueFd fd, const struct stat &st, const std::string &path)
{
	auto file = std::make_shared<TargetFile>();
	bool cut = false;
	auto sites = read_usdt_sites(fd.get(), path, &cut);
	if (!sites)
		return sites.error();
	if (cut)
		log_line("%s: more than %zu probe sites (or %zu bytes of notes): only the first are used", path.c_str(),
			 kMaxSitesPerFile, kMaxNoteBytes);
	file->path = path;
	file->fd = std::move(fd);
	file->dev = st.st_dev;
	file->ino = st.st_ino;
	file->sites = std::move(*sites);
	return TargetFilePtr(std::move(file));
}

Result<std::string> read_string_at(int fd, uint64_t offset)
{
	char buf[kMaxName];
	ssize_t n = pread(fd, buf, sizeof(buf), static_cast<off_t>(offset));
	if (n <= 0)
		return Error{"cannot read the string"};
	size_t len = strnlen(buf, static_cast<size_t>(n));
	if (len == sizeof(buf))
		return std::string(buf, len - 3) + "...";
	return std::string(buf, len);
}

} // namespace

bool is_mapped_file(const struct stat &st, const Mapping &m)
{
	return S_ISREG(st.st_mode) && st.st_dev == m.dev && st.st_ino == m.inode;
}

Result<TargetFilePtr> open_mapped_file(int pid, const Mapping &m)
{
	// map_files/ is a link to the mapped file itself (root only). The path is
	// the target's to change, and names a file in its own root (a container):
	// looked up there only, not opened before it is checked, and any other
	// file fails the device and inode check.
	UniqueFd fd(open(map_files_path(pid, m).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	if (fd.get() < 0) {
		auto in_root = open_path_in_root(pid, m.path);
		if (!in_root)
			return in_root.error();
		auto reopened = reopen_regular(*in_root, m.path);
		if (!reopened)
			return reopened.error();
		fd = std::move(*reopened);
	}
	struct stat st;
	if (fstat(fd.get(), &st) != 0)
		return Error{m.path + ": " + strerror(errno)};
	if (!is_mapped_file(st, m))
		return Error{m.path + ": not the file the process maps"};
	return load(std::move(fd), st, m.path);
}

namespace {

// The regular file found (an O_PATH fd), opened for reading and its sites read.
Result<TargetFilePtr> load_found(Result<UniqueFd> found, const std::string &name)
{
	if (!found)
		return found.error();
	auto fd = reopen_regular(*found, name);
	if (!fd)
		return fd.error();
	struct stat st;
	if (fstat(fd->get(), &st) != 0)
		return Error{name + ": " + strerror(errno)};
	return load(std::move(*fd), st, name);
}

} // namespace

Result<TargetFilePtr> open_named_file(const std::string &path)
{
	// /proc/PID/root/REST names REST in that process's root (a container):
	// resolved there, so that a symlink planted in it cannot lead out of it.
	if (auto rooted = split_proc_root(path))
		return load_found(open_path_in_root(rooted->pid, rooted->path), path);
	UniqueFd fd(open(path.c_str(), O_PATH | O_CLOEXEC));
	if (fd.get() < 0)
		return Error{path + ": " + strerror(errno)};
	return load_found(std::move(fd), path);
}

Result<TargetFilePtr> open_file_in_root(int pid, const std::string &path)
{
	return load_found(open_path_in_root(pid, path), path);
}

std::vector<TargetFilePtr> TargetFiles::of_process(int pid, const std::vector<Mapping> &maps)
{
	std::vector<TargetFilePtr> out;
	for (const Mapping &m : executable_mappings(maps)) {
		auto [it, fresh] = files_.try_emplace({m.dev, m.inode});
		if (fresh) {
			auto file = open_mapped_file(pid, m);
			if (file && sites_ + (*file)->sites.size() > kMaxSitesTotal)
				file = Error{m.path + ": more than " + std::to_string(kMaxSitesTotal) + " probe sites in all"};
			if (!file && !process_exists(pid)) {
				// Gone since its maps were read (its root went with it): not
				// the file's fault, and another process may map it.
				files_.erase(it);
				continue;
			}
			if (!file)
				log_line("pid %d: %s: skipped", pid, file.error().message.c_str());
			else if (!(*file)->sites.empty()) {
				it->second = *file;
				sites_ += (*file)->sites.size();
			}
		}
		if (it->second)
			out.push_back(it->second);
	}
	return out;
}

void TargetFiles::add(const TargetFilePtr &file)
{
	files_[{file->dev, file->ino}] = file;
	sites_ += file->sites.size();
}

TargetFilePtr TargetFiles::find(const Mapping &m) const
{
	auto it = files_.find({m.dev, m.inode});
	return it == files_.end() ? nullptr : it->second;
}

Result<std::string> read_target_string(int pid, const std::vector<Mapping> &maps, const TargetFiles &files,
				       uint64_t addr)
{
	UniqueFd mem(open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
	if (mem.get() >= 0)
		if (auto s = read_string_at(mem.get(), addr))
			return s;
	auto m = mapping_for(maps, addr);
	TargetFilePtr file = m ? files.find(*m) : nullptr;
	if (!file)
		return Error{"address not in a file opened at attach"};
	// A writable mapping's bytes were the process's to change (and its .bss
	// tail reads the file's next section, debug info): only read-only data,
	// the literals, is what the file holds.
	if (m->writable)
		return Error{"address in writable data of a process that is gone"};
	return read_string_at(file->fd.get(), addr - m->start + m->offset);
}

} // namespace usdtprof
