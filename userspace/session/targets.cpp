#include "session/targets.h"

#include <algorithm>
#include <csignal>
#include <set>
#include <tuple>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text_escape.h"
#include "target/process.h"
#include "target/naming.h"
#include "base/result.h"

namespace usdtprof {

std::string pid_text(int pid)
{
	ProfileProcess p = describe_process(pid);
	return "pid " + std::to_string(pid) + (p.comm.empty() ? "" : " (" + p.comm + ")");
}

int64_t unix_now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}


ProfileProcess describe_process(int pid, const std::map<uint32_t, std::string> &comms)
{
	ProfileProcess p = describe_process(pid);
	if (auto c = comms.find(uint32_t(pid)); p.comm.empty() && c != comms.end())
		p.comm = c->second;
	return p;
}

BinaryProcesses::BinaryProcesses(const std::string &binary, TargetFiles &files) : files_(files)
{
	auto file = open_named_file(binary);
	if (!file)
		throw UserError(file.error().message);
	binary_ = *file;
	files_.add(binary_);
	scan();
}

std::vector<int> BinaryProcesses::scan()
{
	std::vector<int> found;
	std::error_code ec;
	for (const auto &entry : std::filesystem::directory_iterator("/proc", ec)) {
		int pid = atoi(entry.path().filename().c_str());
		struct stat st;
		// exe is a link to the file the process runs: no path is looked up.
		if (pid <= 0 || seen_.count(pid) || stat((entry.path() / "exe").c_str(), &st) != 0 ||
		    st.st_dev != binary_->dev || st.st_ino != binary_->ino)
			continue;
		seen_[pid] = describe_process(pid);
		if (auto maps = read_proc_maps(pid)) {
			std::vector<TargetFilePtr> &libs = libraries_[pid];
			for (const TargetFilePtr &f : files_.of_process(pid, *maps))
				if (f != binary_)
					libs.push_back(f);
			maps_[pid] = std::move(*maps);
		}
		found.push_back(pid);
	}
	return found;
}

void BinaryProcesses::forget(int pid)
{
	maps_.erase(pid);
	libraries_.erase(pid);
	seen_.erase(pid);
}

size_t BinaryProcesses::running() const
{
	return size_t(std::count_if(seen_.begin(), seen_.end(), [](const auto &p) { return process_exists(p.first); }));
}

FilesByPid BinaryProcesses::files(const std::vector<int> &pids) const
{
	FilesByPid out;
	if (pids.empty())
		out[0] = {binary_};
	for (const auto &[pid, libs] : libraries_)
		if (!libs.empty() && (pids.empty() || std::find(pids.begin(), pids.end(), pid) != pids.end()))
			out[pid] = libs;
	return out;
}

FilesByPid target_files(const TargetSpec &t, int pid, std::optional<BinaryProcesses> &binary_processes,
			TargetFiles &files)
{
	if (!t.binary.empty()) {
		binary_processes.emplace(t.binary, files);
		return binary_processes->files();
	}
	auto maps = read_proc_maps(pid);
	if (!maps)
		throw UserError(maps.error().message);
	return {{pid, files.of_process(pid, *maps)}};
}

void ProcessTable::add(int pid)
{
	if (auto maps = read_proc_maps(pid))
		maps_[pid] = std::move(*maps);
	added_[pid] = describe_process(pid);
}

std::vector<int> unique_pids(const std::vector<int> &pids)
{
	std::vector<int> out;
	for (int pid : pids)
		if (std::find(out.begin(), out.end(), pid) == out.end())
			out.push_back(pid);
	return out;
}

void check_target_exists(const TargetSpec &t)
{
	for (int pid : t.pids)
		// A zombie is refused once its maps are read: "exited before its
		// probes could be attached".
		if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
			throw UserError("no process with pid " + std::to_string(pid));
	if (!t.binary.empty() && access(t.binary.c_str(), R_OK) != 0)
		throw UserError("cannot read " + t.binary + ": " + strerror(errno));
}

std::map<uint32_t, std::string> span_names(const std::vector<ProbeRole> &custom)
{
	std::map<uint32_t, std::string> names;
	for (const ProbeRole &r : custom)
		if (r.role == USDTPROF_ROLE_SPAN_START)
			names[r.pair] = r.spec;
	return names;
}

std::vector<ProbeRole> custom_roles(const TargetSpec &t)
{
	std::vector<ProbeRole> roles;
	using Parser = Result<std::vector<ProbeRole>> (*)(std::string_view);
	for (const auto &[specs, parse] : {std::pair<const std::vector<std::string> *, Parser>{&t.pairs, parse_pair_spec},
					   std::pair<const std::vector<std::string> *, Parser>{&t.tasks, parse_task_spec}})
		for (const std::string &spec : *specs) {
			auto parsed = parse(spec);
			if (!parsed)
				throw UserError(parsed.error().message, 2);
			roles.insert(roles.end(), parsed->begin(), parsed->end());
		}
	for (size_t i = 0; i < t.spans.size(); i++) {
		auto parsed = parse_span_spec(t.spans[i], uint32_t(i + 1));
		if (!parsed)
			throw UserError(parsed.error().message, 2);
		roles.insert(roles.end(), parsed->begin(), parsed->end());
	}
	return roles;
}

std::string preset_list(const std::vector<const Preset *> &chosen)
{
	std::string out;
	for (const Preset *p : chosen)
		out += (out.empty() ? "" : ", ") + std::string(p->name);
	return out;
}

std::string preset_names()
{
	std::string out;
	for (const Preset &p : presets())
		out += (out.empty() ? "" : ", ") + std::string(p.name);
	return out;
}

namespace {

// The probes to attach: the presets' and the custom ones; a probe named
// again replaces its earlier role, so no site is attached twice.
std::vector<ProbeRole> merge_roles(const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom)
{
	std::vector<ProbeRole> roles;
	for (const Preset *p : chosen)
		for (const ProbeRole &r : p->roles())
			roles.push_back(r);
	for (const ProbeRole &r : custom) {
		std::erase_if(roles, [&](const ProbeRole &e) { return e.provider == r.provider && e.name == r.name; });
		roles.push_back(r);
	}
	return roles;
}

} // namespace

std::vector<const Preset *> choose_presets(const TargetSpec &t, const FilesByPid &files)
{
	if (t.runtime.empty()) {
		std::vector<TargetFilePtr> all;
		for (const auto &[pid, of_pid] : files)
			all.insert(all.end(), of_pid.begin(), of_pid.end());
		return detect_presets(all);
	}
	const Preset *p = find_preset(t.runtime);
	if (!p)
		throw UserError("unknown runtime '" + t.runtime + "' (known: " + preset_names() + ")", 2);
	return {p};
}

std::string probeless_runtime_hint(const std::string &binary)
{
	std::error_code ec;
	for (const Preset &p : presets()) {
		if (!p.built_without || !std::filesystem::path(binary).filename().string().starts_with(p.name))
			continue;
		// binary is the kernel's name of a process's executable (or root's
		// --binary): compared as a name, never resolved on a target's behalf.
		auto suggested = std::filesystem::canonical(p.with_probes, ec);
		if (ec || suggested == std::filesystem::path(binary))
			return "";
		return std::string("; it is a ") + p.built_without + ": " + p.with_probes + " has them, use it instead";
	}
	return "";
}

namespace {

// Which chosen preset each probe (provider, name) is of; a custom pair's or
// task's is of none.
using PresetOfProbe = std::map<std::pair<std::string, std::string>, const Preset *>;
PresetOfProbe presets_by_probe(const std::vector<const Preset *> &chosen)
{
	PresetOfProbe out;
	for (const Preset *p : chosen)
		for (const ProbeRole &r : p->roles())
			out.try_emplace({r.provider, r.name}, p);
	return out;
}

const Preset *preset_of(const PresetOfProbe &presets, const ProbeRole &probe)
{
	auto it = presets.find({probe.provider, probe.name});
	return it == presets.end() ? nullptr : it->second;
}

// Sites a preset says may not be attached in their process yet (Preset::
// safe_in) are moved to held when given (attached once it is safe), or
// dropped with the preset's note said once.
void hold_unsafe_sites(std::vector<FoundSite> &sites, const PresetOfProbe &of, std::vector<FoundSite> *held)
{
	std::map<std::tuple<int, std::string, std::string>, bool> known; // safe_in may read /proc
	auto unsafe = [&](const FoundSite &f) {
		const Preset *p = preset_of(of, f.probe);
		if (!p || !p->safe_in)
			return false;
		auto [it, fresh] = known.try_emplace({f.pid, f.probe.provider, f.probe.name}, false);
		if (fresh)
			it->second = !p->safe_in(f.probe, f.pid);
		return it->second;
	};
	std::vector<FoundSite> out;
	for (const FoundSite &f : sites)
		if (unsafe(f))
			out.push_back(f);
	std::erase_if(sites, unsafe);
	static std::set<const Preset *> said;
	if (held)
		held->insert(held->end(), out.begin(), out.end());
	else if (!out.empty()) {
		const Preset *p = preset_of(of, out.front().probe);
		if (p->unsafe_note && said.insert(p).second)
			log_line(p->unsafe_note, out.front().pid ? pid_text(out.front().pid).c_str()
								  : "every process of the binary");
	}
}

} // namespace

std::vector<FoundSite> more_sites(const TargetSpec &t, const FilesByPid &files,
				  const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom,
				  size_t already, std::vector<FoundSite> *held)
{
	std::vector<FoundSite> sites;
	std::vector<ProbeRole> roles = merge_roles(chosen, custom);
	for (const auto &[pid, of_pid] : files) {
		auto found = find_sites(of_pid, pid, roles, already + sites.size());
		sites.insert(sites.end(), found.begin(), found.end());
	}
	PresetOfProbe of = presets_by_probe(chosen);
	std::erase_if(sites, [&](const FoundSite &f) {
		const Preset *p = preset_of(of, f.probe);
		return p && p->wants_site && !p->wants_site(f.probe, f.file->path);
	});
	hold_unsafe_sites(sites, of, held);
	// Processes of a binary may be gone, and their maps unknown, before
	// names are read: native names are then captured in the kernel too.
	if (!t.binary.empty())
		capture_native_names(sites);
	return sites;
}

bool has_probe_sites(const std::vector<FoundSite> &sites)
{
	return std::any_of(sites.begin(), sites.end(), [](const FoundSite &f) { return !f.probe.semaphore_only; });
}

// Each preset's note on the semaphores it holds up, once per run.
void say_semaphore_notes(const std::vector<FoundSite> &sites, const std::vector<const Preset *> &chosen)
{
	static std::set<const Preset *> said;
	PresetOfProbe of = presets_by_probe(chosen);
	for (const FoundSite &f : sites)
		if (const Preset *p = f.probe.semaphore_only ? preset_of(of, f.probe) : nullptr;
		    p && p->semaphore_note && said.insert(p).second)
			log_line("%s", p->semaphore_note);
}

std::vector<FoundSite> plan_sites(const TargetSpec &t, int pid, bool launched, const FilesByPid &files,
				  const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom,
				  size_t already)
{
	// Probes that will not fire: explained, not recorded as an empty profile.
	if (pid && !launched)
		for (const Preset *p : chosen)
			if (std::string why = p->check ? p->check(pid) : ""; !why.empty())
				throw UserError(pid_text(pid) + ": " + why);
	auto sites = more_sites(t, files, chosen, custom, already);
	say_semaphore_notes(sites, chosen);
	std::string target = pid ? pid_text(pid) : t.binary;
	// The executable searched, as the kernel names it (or --binary as given).
	std::error_code ec;
	std::string exe = pid ? std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string() : t.binary;
	std::string searched = exe.empty() ? "" : " in " + exe + " or the libraries it maps";
	if (!has_probe_sites(sites))
		throw UserError(pid && has_exited(pid) ? target + " exited before its probes could be attached"
				: !t.runtime.empty() ? target + ": no probes of the " + t.runtime + " preset" + searched +
							       probeless_runtime_hint(exe)
				: t.pairs.empty() && t.tasks.empty() && t.spans.empty() ? target + ": no probes of any preset (" + preset_names() + ")" +
									       searched + probeless_runtime_hint(exe)
								     : target + ": none of the given probes in its binaries");
	return sites;
}

AttachPlan plan_attach(const TargetSpec &t, int pid, bool launched, FilesByPid files,
		       const std::vector<ProbeRole> &custom, size_t already)
{
	AttachPlan plan{std::move(files), {}, {}};
	plan.presets = choose_presets(t, plan.files);
	plan.sites = plan_sites(t, pid, launched, plan.files, plan.presets, custom, already);
	return plan;
}

void capture_native_names(std::vector<FoundSite> &sites)
{
	for (FoundSite &f : sites)
		if (f.probe.ident == USDTPROF_IDENT_NATIVE &&
		    (f.probe.role == USDTPROF_ROLE_ENTRY || f.probe.role == USDTPROF_ROLE_EXIT)) {
			f.probe.ident = USDTPROF_IDENT_PTRS;
			f.probe.ident_args = {f.probe.arg};
			f.probe.parts = {{USDTPROF_PART_STR, f.probe.arg, 0}};
			f.probe.format = native_captured_name;
		}
}

} // namespace usdtprof
