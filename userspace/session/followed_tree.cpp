#include "session/followed_tree.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "base/result.h"
#include "base/text_escape.h"
#include "session/launch.h"
#include "session/targets.h"
#include "target/process.h"

namespace usdtprof {

namespace {

// Whether sig is the signal of the preset that held these sites, and
// they are safe now.
bool safe_now(const std::vector<FoundSite> &held, int pid, int sig)
{
	const ProbeRole &probe = held.front().probe;
	for (const Preset &p : presets()) {
		if (!p.safe_in || p.safe_signal != sig)
			continue;
		for (const ProbeRole &r : p.roles())
			if (r.provider == probe.provider && r.name == probe.name)
				return p.safe_in(probe, pid);
	}
	return false;
}

} // namespace

FollowedProcess *FollowedProcesses::find(int pid)
{
	auto p = by_pid_.find(pid);
	return p == by_pid_.end() ? nullptr : &p->second;
}

void FollowedProcesses::attached(int pid, std::vector<FoundSite> sites, std::vector<Mapping> maps,
				 const std::vector<const Preset *> &presets)
{
	auto [p, added] = by_pid_.try_emplace(pid);
	FollowedProcess &process = p->second;
	for (const FoundSite &f : sites)
		process.files.insert({f.file->dev, f.file->ino});
	process.described = describe_process(pid);
	if (added)
		process.maps = std::move(maps);
	process.sites = std::move(sites);
	process.presets = presets;
	std::erase(order_, pid);
	order_.push_back(pid);
}

const std::vector<FoundSite> *FollowedProcesses::held(int pid) const
{
	auto h = held_.find(pid);
	return h == held_.end() ? nullptr : &h->second;
}

std::vector<FoundSite> FollowedProcesses::take_held(int pid)
{
	auto h = held_.extract(pid);
	return h ? std::move(h.mapped()) : std::vector<FoundSite>{};
}

std::vector<ProfileProcess> FollowedProcesses::described() const
{
	std::vector<ProfileProcess> out;
	for (int pid : order_)
		out.push_back(by_pid_.at(pid).described);
	return out;
}

std::map<int, std::vector<Mapping>> FollowedProcesses::maps() const
{
	std::map<int, std::vector<Mapping>> out;
	for (const auto &[pid, p] : by_pid_)
		out.emplace(pid, p.maps);
	return out;
}

bool FollowedProcesses::reimaged(int pid) const
{
	auto p = by_pid_.find(pid);
	return p != by_pid_.end() && p->second.reimaged;
}

FollowedTree::FollowedTree(const TargetSpec &t, Engine &engine, const std::vector<ProbeRole> &custom, TargetFiles &opened)
	: t_(t), engine_(engine), custom_(custom), opened_(opened)
{
	std::vector<const Preset *> all;
	for (const Preset &p : presets())
		if (t.runtime.empty() || t.runtime == p.name)
			all.push_back(&p);
	apply_launch_env(all, t.ruby_call_hook, &env_said_);
}

FollowedTree::~FollowedTree()
{
	{
		std::lock_guard lock(mutex_);
		stopped_ = true;
	}
	for (std::thread &t : pollers_)
		t.join();
}

FollowedCommand::Callbacks FollowedTree::callbacks()
{
	return {[this](int pid) { on_image(pid); }, [this](int pid, int parent) { on_fork(pid, parent); },
		[this](int pid, int sig) { on_signal(pid, sig); }};
}

FollowedProcesses FollowedTree::stop(FollowedCommand &command, const std::function<void()> &stop_engine)
{
	std::lock_guard lock(mutex_);
	command.stop_following();
	stopped_ = true;
	stop_engine();
	return std::exchange(processes_, {});
}

void FollowedTree::announce(int pid)
{
	std::lock_guard lock(mutex_);
	std::string used = preset_list(used_);
	if (used.empty())
		log_line("recording %s, following its execs and children: no probes in %s; Ctrl-C to stop",
			 pid_text(pid).c_str(), searched_.empty() ? "it" : searched_.back().c_str());
	else
		log_line("recording %s with %s, following its execs and children: %zu probe sites attached; "
			 "Ctrl-C to stop",
			 pid_text(pid).c_str(), used.c_str(), engine_.attached_sites());
	announced_ = true;
}

void FollowedTree::say_no_probes() const
{
	std::string searched, hints;
	for (const std::string &s : searched_) {
		searched += (searched.empty() ? "" : ", ") + s;
		hints += probeless_runtime_hint(s);
	}
	log_line("no probes of %s in %s (the programs the launched command and the processes it started ran)%s; "
		 "nothing written",
		 t_.runtime.empty() ? ("any preset (" + preset_names() + ")").c_str()
				    : ("the " + t_.runtime + " preset").c_str(),
		 searched.empty() ? t_.command[0].c_str() : searched.c_str(), hints.c_str());
}

void FollowedTree::on_image(int pid)
{
	std::lock_guard lock(mutex_);
	if (stopped_)
		return;
	std::error_code ec;
	std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
	auto maps = read_proc_maps(pid);
	if (ec || !maps)
		return; // gone
	if (std::find(searched_.begin(), searched_.end(), exe) == searched_.end())
		searched_.push_back(exe);
	for (const Preset &p : presets())
		if (std::string why = p.attach_later ? p.attach_later(pid) : ""; !why.empty()) {
			log_line("%s: %s", pid_text(pid).c_str(), why.c_str());
			attach_when_ready(pid, p);
			return;
		}
	attach_image(pid, std::move(*maps));
}

// A process a preset attaches only once it is ready (jshell's snippets'
// JVM, once connected back): polled every 2 ms, attached as its image
// is then, unless it has gone or the recording has stopped first.
void FollowedTree::attach_when_ready(int pid, const Preset &preset)
{
	pollers_.emplace_back([this, pid, &preset] {
		for (;;) {
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
			bool ready = preset.ready_to_attach(pid);
			std::lock_guard lock(mutex_);
			if (stopped_ || has_exited(pid))
				return;
			if (!ready)
				continue;
			if (auto maps = read_proc_maps(pid))
				attach_image(pid, std::move(*maps));
			return;
		}
	});
}

// Attaches the probes of pid's image (its files and those its presets load later).
void FollowedTree::attach_image(int pid, std::vector<Mapping> maps)
{
	auto files = image_files(pid, maps, opened_);
	if (!files) {
		log_line("%s: %s; not recorded", pid_text(pid).c_str(), files.error().message.c_str());
		return;
	}
	std::vector<const Preset *> chosen = choose_presets(t_, *files);
	std::vector<FoundSite> held;
	auto sites = more_sites(t_, *files, chosen, custom_, engine_.attached_sites(), &held);
	processes_.hold(pid, std::move(held));
	if (FollowedProcess *known = processes_.find(pid)) {
		// An exec after an image already recorded: native names are
		// looked up by address in the maps of the first image, so
		// this one's are captured in the kernel instead.
		capture_native_names(sites);
		fault_in_names(pid, maps, sites);
		known->reimaged = true;
	}
	attach(pid, std::move(sites), std::move(maps), chosen);
}

// A process with sites held back (a Ruby's C method probes) raises its
// preset's safe_signal once they are safe: they are attached before it
// goes on.
void FollowedTree::on_signal(int pid, int sig)
{
	std::lock_guard lock(mutex_);
	const std::vector<FoundSite> *held = processes_.held(pid);
	if (stopped_ || !held || held->empty() || !safe_now(*held, pid, sig))
		return;
	std::vector<FoundSite> sites = processes_.take_held(pid);
	try {
		merge_attached(attached_, attach_sites(engine_, sites));
	} catch (const UserError &e) {
		log_line("%s: %s; C methods not recorded", pid_text(pid).c_str(), e.what());
		return;
	}
	if (FollowedProcess *p = processes_.find(pid))
		p->sites.insert(p->sites.end(), sites.begin(), sites.end());
}

void FollowedTree::on_fork(int pid, int parent)
{
	std::lock_guard lock(mutex_);
	const FollowedProcess *from = processes_.find(parent);
	if (stopped_ || !from)
		return;
	fault_in_names(pid, from->maps, from->sites);
	std::vector<FoundSite> of_child = from->sites;
	for (FoundSite &f : of_child)
		f.pid = pid;
	attach(pid, std::move(of_child), from->maps, from->presets);
}

void FollowedTree::attach(int pid, std::vector<FoundSite> sites, std::vector<Mapping> maps,
			  const std::vector<const Preset *> &chosen)
{
	// After an exec of the same file, the links of the earlier image still serve the pid.
	if (const FollowedProcess *known = processes_.find(pid))
		std::erase_if(sites, [&](const FoundSite &f) { return known->files.count({f.file->dev, f.file->ino}); });
	if (!has_probe_sites(sites))
		return;
	say_semaphore_notes(sites, chosen);
	size_t before = engine_.attached_sites();
	try {
		merge_attached(attached_, attach_sites(engine_, sites));
	} catch (const UserError &e) {
		log_line("%s: %s; not recorded", pid_text(pid).c_str(), e.what());
		return;
	}
	say_new_presets(chosen);
	processes_.attached(pid, std::move(sites), std::move(maps), chosen);
	if (announced_)
		log_line("%s with %s: %zu probe sites attached", pid_text(pid).c_str(), preset_list(chosen).c_str(),
			 engine_.attached_sites() - before);
}

// The first process of a preset attached: what its launch environment was.
void FollowedTree::say_new_presets(const std::vector<const Preset *> &chosen)
{
	for (const Preset *p : chosen)
		if (std::find(used_.begin(), used_.end(), p) == used_.end()) {
			used_.push_back(p);
			fputs(env_said_[p].c_str(), stderr);
		}
}

} // namespace usdtprof
