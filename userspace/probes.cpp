#include "probes.h"

#include <tuple>

#include "process.h"
#include "report.h"

namespace usdtprof {

std::vector<FoundSite> find_sites(const std::vector<std::string> &files, const std::vector<ProbeRole> &roles)
{
	std::vector<FoundSite> found;
	for (const std::string &file : files) {
		auto sites = read_usdt_sites(file);
		if (!sites)
			continue; // not every mapped file is a readable ELF
		for (UsdtSite &s : *sites)
			for (const ProbeRole &p : roles)
				if (s.provider == p.provider && s.name == p.name)
					found.push_back({file, s, p});
	}
	return found;
}

std::vector<FoundSite> find_sites(const std::vector<Mapping> &maps, const std::vector<ProbeRole> &roles)
{
	return find_sites(executable_files(maps), roles);
}

namespace {

usdtprof_arg_spec site_arg(const FoundSite &f, unsigned arg)
{
	if (f.site.args.size() <= arg)
		throw UserError(f.binary + ": probe " + f.site.provider + ":" + f.site.name + " has no arg" +
				std::to_string(arg));
	auto spec = parse_usdt_arg(f.site.args[arg]);
	if (!spec)
		throw UserError(f.binary + ": " + spec.error().message);
	return *spec;
}

usdtprof_probe_spec probe_spec(const FoundSite &f)
{
	const ProbeRole &p = f.probe;
	usdtprof_probe_spec spec{};
	spec.role = p.role;
	spec.ident = p.ident;
	switch (p.ident) {
	case USDTPROF_IDENT_NATIVE:
		spec.args[0] = site_arg(f, p.arg);
		break;
	case USDTPROF_IDENT_CONST:
		spec.const_func = const_function_id(p.const_name);
		break;
	case USDTPROF_IDENT_PTRS:
	case USDTPROF_IDENT_SQL:
		spec.nargs = uint32_t(std::min<size_t>(p.ident_args.size(), USDTPROF_MAX_IDENT_ARGS));
		spec.content_mask = p.content_mask;
		for (uint32_t i = 0; i < spec.nargs; i++)
			spec.args[i] = site_arg(f, p.ident_args[i]);
		for (size_t i = 0; i < p.parts.size() && i < USDTPROF_NAME_PARTS; i++) {
			spec.parts[i].type = p.parts[i].type;
			spec.parts[i].arg = site_arg(f, p.parts[i].arg);
			if (p.parts[i].type == USDTPROF_PART_STR_LEN)
				spec.parts[i].len = site_arg(f, p.parts[i].len_arg);
		}
		break;
	}
	return spec;
}

} // namespace

// Exits are attached before entries (and detached after them): an exit
// probe that misses the first exits of frames entered meanwhile only costs an
// anomaly, while an entry without its exit probe would corrupt the stack.
AttachedProbes attach_sites(Engine &engine, int pid, const std::vector<FoundSite> &sites)
{
	AttachedProbes out;
	std::map<std::tuple<std::string, std::string, std::string>, ProfileProbe> probes;
	for (usdtprof_role role : {USDTPROF_ROLE_EXIT, USDTPROF_ROLE_TASK_END, USDTPROF_ROLE_ENTRY,
				   USDTPROF_ROLE_TASK_BEGIN, USDTPROF_ROLE_TASK_CREATE}) {
		std::map<std::string, std::vector<UprobeSite>> by_binary;
		for (const FoundSite &f : sites) {
			if (f.probe.role != role || f.probe.semaphore_only)
				continue;
			auto index = engine.add_spec(probe_spec(f));
			if (!index)
				throw UserError(index.error().message);
			out.spec_probes.emplace(*index, f.probe);
			by_binary[f.binary].push_back({f.site.pc_offset, f.site.semaphore_offset, *index});
			ProfileProbe &p = probes[{f.binary, f.site.provider, f.site.name}];
			p = {f.binary, f.site.provider, f.site.name, role_name(role), p.sites + 1};
		}
		for (const auto &[binary, uprobes] : by_binary)
			if (auto r = engine.attach(pid, binary, role, uprobes); !r)
				throw UserError(r.error().message);
	}
	for (const FoundSite &f : sites)
		if (f.probe.semaphore_only && f.site.semaphore_offset) {
			if (auto r = engine.hold_semaphore(pid, f.binary, f.site.semaphore_offset); !r)
				throw UserError(r.error().message);
			probes[{f.binary, f.site.provider, f.site.name}] = {f.binary, f.site.provider, f.site.name,
									    "semaphore", 1};
		}
	for (auto &[key, probe] : probes)
		out.probes.push_back(probe);
	return out;
}

FunctionNamer::FunctionNamer(const AttachedProbes &attached,
			     std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> captured,
			     std::map<int, std::vector<Mapping>> maps)
	: spec_probes_(attached.spec_probes), captured_(std::move(captured)), maps_(std::move(maps))
{
	for (const auto &[index, probe] : spec_probes_)
		if (probe.ident == USDTPROF_IDENT_CONST) {
			constants_[const_function_id(probe.const_name)] = probe.const_name;
			constant_specs_[const_function_id(probe.const_name)] = index;
		}
}

void FunctionNamer::set_cost_kinds(std::map<uint32_t, int32_t> spec_kinds, int32_t native_kind)
{
	spec_kinds_ = std::move(spec_kinds);
	native_kind_ = native_kind;
}

Result<FunctionName> FunctionNamer::operator()(uint32_t tgid, uint64_t func) const
{
	auto kind_of_spec = [&](uint32_t spec) {
		auto k = spec_kinds_.find(spec);
		return k == spec_kinds_.end() ? -1 : k->second;
	};
	if (auto c = constants_.find(func); c != constants_.end())
		return FunctionName{c->second, "", kind_of_spec(constant_specs_.at(func))};
	if (auto n = captured_.find({tgid, func}); n != captured_.end()) {
		auto probe = spec_probes_.find(n->second.spec);
		if (probe == spec_probes_.end() || !probe->second.format)
			return Error{"captured by an unknown probe"};
		FunctionName name = probe->second.format(n->second, probe->second);
		if (name.name.empty())
			return Error{"empty name"};
		name.cost_kind = kind_of_spec(n->second.spec);
		return name;
	}
	static const std::vector<Mapping> none;
	auto maps = maps_.find(int(tgid));
	auto s = read_target_string(int(tgid), maps == maps_.end() ? none : maps->second, func);
	if (!s)
		return s.error();
	// Our C++ header names functions by __PRETTY_FUNCTION__.
	return FunctionName{simplify_function_name(*s), "", native_kind_};
}

} // namespace usdtprof
