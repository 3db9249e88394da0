#include "session/host.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "base/result.h"
#include "base/text_escape.h"
#include "target/proc_maps.h"
#include "target/process.h"

namespace usdtprof {

std::vector<const Preset *> host_presets(const std::vector<std::string> &runtimes)
{
	std::vector<const Preset *> out;
	if (runtimes.empty()) {
		for (const Preset &p : presets())
			if (!p.launch_script)
				out.push_back(&p);
		return out;
	}
	for (const std::string &name : runtimes) {
		const Preset *p = find_preset(name);
		if (!p)
			throw UserError("unknown runtime '" + name + "' (known: " + preset_names() + ")", 2);
		if (std::find(out.begin(), out.end(), p) == out.end())
			out.push_back(p);
	}
	return out;
}

ProcessCap::Admit ProcessCap::admit(int pid)
{
	if (admitted_.count(pid) || admitted_.size() < max_) {
		admitted_.insert(pid);
		return Admit::Yes;
	}
	return refused_++ == 0 ? Admit::RefusedFirst : Admit::Refused;
}

namespace {

uint64_t now_ms()
{
	return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
				std::chrono::steady_clock::now().time_since_epoch())
				.count());
}

std::pair<uint64_t, uint64_t> exe_of(const std::string &proc)
{
	struct stat st;
	// exe is the kernel's link to the file the process runs: no path is looked up.
	if (stat((proc + "/exe").c_str(), &st) != 0)
		return {0, 0};
	return {uint64_t(st.st_dev), uint64_t(st.st_ino)};
}

// pid's parent, from /proc/PID/stat (the field after the command name,
// which may hold anything: the last ')' ends it); 0 if gone.
int parent_of(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	size_t close = stat.rfind(')');
	if (close == std::string::npos || close + 4 > stat.size())
		return 0;
	return atoi(stat.c_str() + close + 4); // ") S PPID"
}

bool descends_from(int pid, int ancestor)
{
	for (int hops = 0; pid > 1 && hops < 64; hops++, pid = parent_of(pid))
		if (pid == ancestor)
			return true;
	return false;
}

} // namespace

HostProcesses::HostProcesses(const TargetSpec &t, std::vector<const Preset *> presets, std::vector<ProbeRole> custom,
			     size_t max_processes, TargetFiles &files, ProcessTable &table)
	: t_(t), presets_(std::move(presets)), custom_(std::move(custom)), cap_(max_processes), files_(files),
	  table_(table)
{
	own_exe_.insert(exe_of("/proc/self"));
	// The e2e tests' hook (docs/monitoring.md): only the processes of one
	// tree, so that a test on a shared machine never profiles the others'.
	if (const char *under = getenv("USDTPROF_TEST_ALL_UNDER"))
		under_ = atoi(under);
}

void HostProcesses::listen()
{
	auto events = ExecEvents::load();
	if (!events)
		throw UserError(events.error().message);
	events_ = std::move(*events);
}

std::vector<FoundSite> HostProcesses::examine(int pid, size_t already)
{
	if (pid == getpid() || pids_.count(pid) || own_exe_.count(exe_of("/proc/" + std::to_string(pid))))
		return {};
	if (under_ && !descends_from(pid, under_))
		return {};
	auto maps = read_proc_maps(pid);
	if (!maps)
		return {}; // gone, or a kernel thread
	std::vector<TargetFilePtr> files = files_.of_process(pid, *maps);
	if (files.empty())
		return {};
	std::vector<const Preset *> chosen;
	for (const Preset *p : detect_presets(files)) {
		if (std::find(presets_.begin(), presets_.end(), p) == presets_.end())
			continue;
		// A preset whose probes will not fire in this process (PHP without
		// USE_ZEND_DTRACE, a JVM without DTraceMethodProbes) is left out,
		// said once per preset.
		if (std::string why = p->check ? p->check(pid) : ""; !why.empty()) {
			if (check_said_.insert(p).second)
				log_line("--all: %s skipped (said once for the %s preset): %s",
					 pid_text(pid).c_str(), p->name, why.c_str());
			continue;
		}
		chosen.push_back(p);
	}
	if (chosen.empty() && custom_.empty())
		return {};
	std::vector<FoundSite> sites = more_sites(t_, {{pid, files}}, chosen, custom_, already);
	if (!has_probe_sites(sites))
		return {};
	switch (cap_.admit(pid)) {
	case ProcessCap::Admit::Yes:
		break;
	case ProcessCap::Admit::RefusedFirst:
		log_line("--all: --max-processes %zu reached: %s and any later process with probes are not profiled "
			 "until a profiled one exits (a count is said at the stop)",
			 cap_.count(), pid_text(pid).c_str());
		return {};
	case ProcessCap::Admit::Refused:
		return {};
	}
	// Its maps may be gone before names are read: native names are captured in the kernel.
	capture_native_names(sites);
	say_semaphore_notes(sites, chosen);
	for (const Preset *p : chosen)
		if (std::find(chosen_.begin(), chosen_.end(), p) == chosen_.end())
			chosen_.push_back(p);
	pids_.insert(pid);
	table_.add(pid);
	if (events_)
		events_->watch(pid);
	again_at_.erase(pid);
	found_.push_back(pid_text(pid) + " with " + preset_list(chosen) + ": " + std::to_string(sites.size()) +
			 " probe sites");
	return sites;
}

std::vector<FoundSite> HostProcesses::discover(size_t already)
{
	std::vector<FoundSite> out;
	auto add = [&](int pid) {
		auto sites = examine(pid, already + out.size());
		out.insert(out.end(), sites.begin(), sites.end());
		return !sites.empty();
	};
	std::vector<ProcessStart> starts = std::exchange(unread_, {});
	if (events_) {
		std::vector<ProcessStart> more = events_->take();
		starts.insert(starts.end(), more.begin(), more.end());
	}
	if (!scanned_ || (events_ && events_->take_lost() > 0)) {
		scanned_ = true;
		std::error_code ec;
		for (const auto &entry : std::filesystem::directory_iterator("/proc", ec))
			if (int pid = atoi(entry.path().filename().c_str()); pid > 0)
				add(pid);
	}
	uint64_t now = now_ms();
	for (const ProcessStart &s : starts) {
		// A profiled process that execs is planned again (replan); a fork
		// runs its parent's program.
		if (pids_.count(s.pid)) {
			if (!s.parent)
				execs_.push_back(s);
			continue;
		}
		if (!add(s.pid) && !s.parent)
			again_at_[s.pid] = now + 1000;
	}
	for (auto it = again_at_.begin(); it != again_at_.end();) {
		if (it->second > now) {
			++it;
			continue;
		}
		int pid = it->first;
		it = again_at_.erase(it);
		add(pid);
	}
	return out;
}

std::vector<ProcessStart> HostProcesses::execs_unread()
{
	if (events_) {
		std::vector<ProcessStart> more = events_->take();
		unread_.insert(unread_.end(), more.begin(), more.end());
	}
	std::vector<ProcessStart> out;
	for (const ProcessStart &s : unread_)
		if (pids_.count(s.pid) && !s.parent)
			out.push_back(s);
	return out;
}

void HostProcesses::say_found(bool attached)
{
	for (const std::string &f : found_)
		log_line("--all: %s %s", attached ? "profiling" : "found (attached at the next sampling window)", f.c_str());
	found_.clear();
}

std::vector<FoundSite> HostProcesses::replan(int pid, size_t already)
{
	forget(pid);
	std::vector<FoundSite> sites = examine(pid, already);
	if (sites.empty() && process_exists(pid))
		log_line("--all: %s exec'd a program without probes of the presets: no longer profiled",
			 pid_text(pid).c_str());
	return sites;
}

void HostProcesses::forget(int pid)
{
	if (!pids_.erase(pid))
		return;
	cap_.release(pid);
	table_.forget(pid);
	if (events_)
		events_->unwatch(pid);
}

} // namespace usdtprof
