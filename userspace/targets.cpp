#include "targets.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <poll.h>
#include <unistd.h>

#include "text_escape.h"
#include "process.h"
#include "report.h"
#include "result.h"

namespace usdtprof {

std::string pid_text(int pid)
{
	ProfileProcess p = describe_process(pid);
	return "pid " + std::to_string(pid) + (p.comm.empty() ? "" : " (" + p.comm + ")");
}

bool has_exited(int pid)
{
	int fd = open_pidfd(pid);
	if (fd < 0)
		return true;
	pollfd p = {fd, POLLIN, 0};
	bool exited = poll(&p, 1, 0) == 1;
	close(fd);
	return exited;
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

void BinaryProcesses::scan()
{
	std::error_code ec;
	for (const auto &entry : std::filesystem::directory_iterator("/proc", ec)) {
		int pid = atoi(entry.path().filename().c_str());
		if (pid <= 0 || seen_.count(pid))
			continue;
		auto exe = std::filesystem::read_symlink(entry.path() / "exe", ec);
		if (ec || exe != binary_)
			continue;
		seen_[pid] = describe_process(pid);
		if (auto maps = read_proc_maps(pid))
			maps_[pid] = std::move(*maps);
	}
}

std::vector<int> BinaryProcesses::forget_exited()
{
	std::vector<int> exited;
	for (auto it = seen_.begin(); it != seen_.end();)
		if (!process_exists(it->first)) {
			exited.push_back(it->first);
			maps_.erase(it->first);
			it = seen_.erase(it);
		} else {
			++it;
		}
	return exited;
}

BinaryProcesses::BinaryProcesses(const std::string &binary)
	: path_(binary), binary_(std::filesystem::canonical(binary))
{
	scan();
}

std::vector<std::string> BinaryProcesses::files() const
{
	std::vector<std::string> files = {path_};
	for (const auto &[p, maps] : maps_)
		for (const std::string &f : executable_files(maps))
			if (std::find(files.begin(), files.end(), f) == files.end())
				files.push_back(f);
	return files;
}

std::vector<std::string> target_files(const RecordOptions &o, int pid,
				      std::optional<BinaryProcesses> &binary_processes)
{
	if (!o.binary.empty()) {
		binary_processes.emplace(o.binary);
		return binary_processes->files();
	}
	auto maps = read_proc_maps(pid);
	if (!maps)
		throw UserError(maps.error().message);
	return executable_files(*maps);
}

std::vector<ProbeRole> custom_roles(const RecordOptions &o)
{
	std::vector<ProbeRole> roles;
	using Parser = Result<std::vector<ProbeRole>> (*)(std::string_view);
	for (const auto &[specs, parse] : {std::pair<const std::vector<std::string> *, Parser>{&o.pairs, parse_pair_spec},
					   std::pair<const std::vector<std::string> *, Parser>{&o.tasks, parse_task_spec}})
		for (const std::string &spec : *specs) {
			auto parsed = parse(spec);
			if (!parsed)
				throw UserError(parsed.error().message, 2);
			roles.insert(roles.end(), parsed->begin(), parsed->end());
		}
	return roles;
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

std::vector<const Preset *> choose_presets(const RecordOptions &o, const std::vector<std::string> &files)
{
	if (o.runtime.empty())
		return detect_presets(files);
	const Preset *p = find_preset(o.runtime);
	if (!p)
		throw UserError("unknown runtime '" + o.runtime + "' (known: " + preset_names() + ")", 2);
	return {p};
}

std::vector<FoundSite> plan_sites(const RecordOptions &o, int pid, bool launched, const std::vector<std::string> &files,
				  const std::vector<const Preset *> &chosen, const std::vector<ProbeRole> &custom)
{
	// Probes that will not fire: explained, not recorded as an empty profile.
	if (pid && !launched)
		for (const Preset *p : chosen)
			if (std::string why = p->check(pid); !why.empty())
				throw UserError(pid_text(pid) + ": " + why);
	auto sites = find_sites(files, merge_roles(chosen, custom));
	// CPython 3.11's defect (gh-98894): only its python:line semaphore, held up, makes entries fire.
	std::erase_if(sites, [](const FoundSite &f) {
		return f.probe.semaphore_only && f.binary.find("python3.11") == std::string::npos;
	});
	if (std::any_of(sites.begin(), sites.end(), [](const FoundSite &f) { return f.probe.semaphore_only; }))
		log_line("python 3.11 skips function entries (CPython gh-98894): holding its python:line "
				"semaphore up so they fire, which slows the target down");
	std::string target = pid ? pid_text(pid) : o.binary;
	if (std::none_of(sites.begin(), sites.end(), [](const FoundSite &f) { return !f.probe.semaphore_only; }))
		throw UserError(pid && has_exited(pid) ? target + " exited before its probes could be attached"
				: !o.runtime.empty() ? target + ": no probes of the " + o.runtime + " preset"
				: o.pairs.empty() && o.tasks.empty() ? target + ": no probes of any preset (" + preset_names() + ")"
								     : target + ": none of the given probes in its binaries");

	// Processes of a binary may be gone, and their maps unknown, before
	// names are read: native names are then captured in the kernel too.
	if (!pid)
		for (FoundSite &f : sites)
			if (f.probe.ident == USDTPROF_IDENT_NATIVE &&
			    (f.probe.role == USDTPROF_ROLE_ENTRY || f.probe.role == USDTPROF_ROLE_EXIT)) {
				f.probe.ident = USDTPROF_IDENT_PTRS;
				f.probe.ident_args = {f.probe.arg};
				f.probe.parts = {{USDTPROF_PART_STR, f.probe.arg, 0}};
				f.probe.format = [](const usdtprof_name &n, const ProbeRole &) {
					return FunctionName{simplify_function_name(n.text[0]), ""};
				};
			}
	return sites;
}

} // namespace usdtprof
