#include "probes.h"

#include <map>
#include <tuple>

namespace usdtprof {

std::vector<FoundSite> find_sites(const std::vector<Mapping> &maps, const std::vector<ProbeRole> &roles)
{
	std::vector<FoundSite> found;
	for (const std::string &file : executable_files(maps)) {
		auto sites = read_usdt_sites(file);
		if (!sites)
			continue; // not every mapped file is a readable ELF
		for (UsdtSite &s : *sites)
			for (const ProbeRole &p : roles)
				if (s.provider == p.provider && s.name == p.name)
					found.push_back({file, s, p.role, p.arg});
	}
	return found;
}

// Exits are attached before entries (and detached after them): an exit
// probe that misses the first exits of frames entered meanwhile only costs an
// anomaly, while an entry without its exit probe would corrupt the stack.
std::vector<ProfileProbe> attach_sites(Engine &engine, int pid, const std::vector<FoundSite> &sites)
{
	std::map<std::tuple<std::string, std::string, std::string>, ProfileProbe> probes;
	for (usdtprof_role role : {USDTPROF_ROLE_EXIT, USDTPROF_ROLE_TASK_END, USDTPROF_ROLE_ENTRY,
				   USDTPROF_ROLE_TASK_BEGIN, USDTPROF_ROLE_TASK_CREATE}) {
		std::map<std::string, std::vector<UprobeSite>> by_binary;
		for (const FoundSite &f : sites) {
			if (f.role != role)
				continue;
			if (f.site.args.size() <= f.arg)
				throw UserError(f.binary + ": probe " + f.site.provider + ":" + f.site.name + " has no arg" +
						std::to_string(f.arg));
			auto arg = parse_usdt_arg(f.site.args[f.arg]);
			if (!arg)
				throw UserError(f.binary + ": " + arg.error().message);
			usdtprof_probe_spec spec{};
			spec.func = *arg;
			spec.role = role;
			auto index = engine.add_spec(spec);
			if (!index)
				throw UserError(index.error().message);
			by_binary[f.binary].push_back({f.site.pc_offset, f.site.semaphore_offset, *index});
			ProfileProbe &p = probes[{f.binary, f.site.provider, f.site.name}];
			p = {f.binary, f.site.provider, f.site.name, role_name(role), p.sites + 1};
		}
		for (const auto &[binary, uprobes] : by_binary)
			if (auto r = engine.attach(pid, binary, role, uprobes); !r)
				throw UserError(r.error().message);
	}
	std::vector<ProfileProbe> out;
	for (auto &[key, probe] : probes)
		out.push_back(probe);
	return out;
}

} // namespace usdtprof
