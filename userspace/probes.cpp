#include "probes.h"

#include <map>
#include <tuple>

namespace usdtprof {

namespace {

// The probes of our header, include/usdtprof/usdtprof.h.
struct ProbeRole {
	const char *provider;
	const char *name;
	usdtprof_role role;
};
constexpr ProbeRole kNativeProbes[] = {
	{"usdtprof", "enter", USDTPROF_ROLE_ENTRY},
	{"usdtprof", "exit", USDTPROF_ROLE_EXIT},
	{"usdtprof", "task_create", USDTPROF_ROLE_TASK_CREATE},
	{"usdtprof", "task_begin", USDTPROF_ROLE_TASK_BEGIN},
	{"usdtprof", "task_end", USDTPROF_ROLE_TASK_END},
};

const char *role_name(usdtprof_role role)
{
	switch (role) {
	case USDTPROF_ROLE_ENTRY: return "entry";
	case USDTPROF_ROLE_EXIT: return "exit";
	case USDTPROF_ROLE_TASK_CREATE: return "task_create";
	case USDTPROF_ROLE_TASK_BEGIN: return "task_begin";
	default: return "task_end";
	}
}

} // namespace

std::vector<FoundSite> find_native_sites(const std::vector<Mapping> &maps)
{
	std::vector<FoundSite> found;
	for (const std::string &file : executable_files(maps)) {
		auto sites = read_usdt_sites(file);
		if (!sites)
			continue; // not every mapped file is a readable ELF
		for (UsdtSite &s : *sites)
			for (const ProbeRole &p : kNativeProbes)
				if (s.provider == p.provider && s.name == p.name)
					found.push_back({file, s, p.role});
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
			if (f.site.args.empty())
				throw UserError(f.binary + ": probe " + f.site.provider + ":" + f.site.name +
						" has no argument");
			auto arg = parse_usdt_arg(f.site.args[0]);
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
