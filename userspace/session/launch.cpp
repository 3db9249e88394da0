#include "session/launch.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text_escape.h"
#include "target/process.h"

namespace usdtprof {

namespace {

// Launch scripts live in kLaunchDir: a directory only root can write, in /run
// (which only root can write either), so no other user can plant or replace a
// script that a launched root process loads, not even after usdtprof has exited.

Result<void> check_launch_dir()
{
	if (mkdir(kLaunchDir, 0755) != 0 && errno != EEXIST)
		return Error{std::string("cannot create ") + kLaunchDir + ": " + strerror(errno)};
	struct stat st;
	if (lstat(kLaunchDir, &st) != 0)
		return Error{std::string("cannot read ") + kLaunchDir + ": " + strerror(errno)};
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return Error{std::string(kLaunchDir) + " is not a directory that only root can write: not using it"};
	return {};
}

// A preset's launch script, at a fixed path in kLaunchDir, replaced
// atomically. It is never removed: a descendant of the launched command that
// starts the runtime after usdtprof has exited still inherits the variable
// naming it, and must find the same harmless script (not a missing file, which
// would stop it, nor one another user planted).
Result<std::string> install_launch_script(const std::string &path, const char *content)
{
	if (auto r = check_launch_dir(); !r)
		return r.error();
	std::string temp = path + ".XXXXXX";
	int fd = mkstemp(temp.data()); // O_EXCL, 0600: then made readable by any user the command becomes
	if (fd < 0)
		return Error{"cannot create a launch script in " + std::string(kLaunchDir) + ": " + strerror(errno)};
	size_t len = strlen(content);
	bool ok = write(fd, content, len) == ssize_t(len) && fchmod(fd, 0644) == 0;
	close(fd);
	if (!ok || rename(temp.c_str(), path.c_str()) != 0) {
		unlink(temp.c_str());
		return Error{"cannot write " + path};
	}
	return path;
}

} // namespace

bool apply_launch_env(const std::vector<const Preset *> &chosen, bool use_scripts,
		      std::map<const Preset *, std::string> *later)
{
	auto say = [&](const Preset *p, const std::string &text) {
		if (later)
			(*later)[p] += "usdtprof: " + std::string(p->name) + ": " + text + "\n";
		else
			log_line("%s: %s", p->name, text.c_str());
	};
	bool changed = false;
	for (const Preset *p : chosen)
		for (const auto &[var, templ] : p->launch_env) {
			const char *old = getenv(var);
			std::string now = old && *old ? std::string(old) : "", value = templ;
			if (size_t at = value.find("{script}"); at != std::string::npos) {
				if (!use_scripts) {
					say(p, p->without_script);
					continue;
				}
				auto script = install_launch_script(std::string(kLaunchDir) + "/" + p->name + "-launch" +
									    p->script_extension,
								    p->launch_script);
				if (!script)
					throw UserError(script.error().message);
				value.replace(at, 8, *script);
			}
			if (size_t at = value.find("{repair}"); at != std::string::npos) {
				auto script = install_launch_script(p->repair_path, p->repair_script);
				if (!script)
					throw UserError(script.error().message);
				value.replace(at, 8, *script);
			}
			if (now.find(value) != std::string::npos)
				continue;
			now += (now.empty() ? "" : " ") + value;
			setenv(var, now.c_str(), 1);
			say(p, std::string("launching with ") + var + "=" + now);
			changed = true;
		}
	return changed;
}

// The files a launched command maps at its entry point, and those its presets load later.
Result<FilesByPid> image_files(int pid, const std::vector<Mapping> &maps, TargetFiles &opened)
{
	std::vector<TargetFilePtr> files = opened.of_process(pid, maps);
	for (const Preset &p : presets()) {
		if (std::string why = p.left_alone ? p.left_alone(pid) : ""; !why.empty()) {
			log_line("%s: %s", pid_text(pid).c_str(), why.c_str());
			continue;
		}
		if (std::string lib = p.late_library ? p.late_library(pid) : ""; !lib.empty()) {
			// A path in the process's root, looked up there only.
			auto file = open_file_in_root(pid, lib);
			if (!file)
				return file.error();
			opened.add(*file);
			// Once loaded (a process attached later), it is among the mapped files.
			if (std::none_of(files.begin(), files.end(), [&](const TargetFilePtr &f) {
				    return f->dev == (*file)->dev && f->ino == (*file)->ino;
			    }))
				files.push_back(*file);
		}
	}
	return FilesByPid{{pid, files}};
}

FilesByPid launch_files(int pid, TargetFiles &opened)
{
	auto maps = read_proc_maps(pid);
	if (!maps)
		throw UserError(maps.error().message);
	auto files = image_files(pid, *maps, opened);
	if (!files)
		throw UserError(files.error().message);
	return *files;
}

// A forked child maps its parent's files, but not their pages: fork copies no
// page table entries of file mappings. BPF reads names without faulting, so
// the read-only mappings of files with native names are faulted in (reading
// /proc/PID/mem does that) before the child runs.
void fault_in_names(int pid, const std::vector<Mapping> &maps, const std::vector<FoundSite> &sites)
{
	std::set<std::pair<uint64_t, uint64_t>> files; // device, inode
	for (const FoundSite &f : sites)
		if (f.probe.parts.size() == 1 && f.probe.parts[0].type == USDTPROF_PART_STR)
			files.insert({f.file->dev, f.file->ino});
	int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	std::vector<char> buf(1 << 20);
	for (const Mapping &m : maps)
		if (m.readable && !m.writable && files.count({m.dev, m.inode}))
			for (uint64_t at = m.start; at < m.end; at += buf.size())
				if (pread(fd, buf.data(), std::min<uint64_t>(buf.size(), m.end - at), off_t(at)) <= 0)
					break;
	close(fd);
}

} // namespace usdtprof
