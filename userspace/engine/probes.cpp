#include "engine/probes.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "target/process.h"
#include "target/naming.h"
#include "base/text_escape.h"

namespace usdtprof {

std::vector<FoundSite> find_sites(const std::vector<TargetFilePtr> &files, int pid, const std::vector<ProbeRole> &roles,
				  size_t already)
{
	std::vector<FoundSite> found;
	size_t left_out = 0;
	for (const TargetFilePtr &file : files)
		for (const UsdtSite &s : file->sites)
			for (const ProbeRole &p : roles)
				if (s.provider == p.provider && s.name == p.name) {
					if (already + found.size() < kMaxSitesTotal)
						found.push_back({file, pid, s, p});
					else
						left_out++;
				}
	if (left_out)
		log_line("more than %zu probe sites in all: %zu not attached", kMaxSitesTotal, left_out);
	return found;
}

namespace {

usdtprof_arg_spec site_arg(const FoundSite &f, unsigned arg)
{
	if (f.site.args.size() <= arg)
		throw UserError(f.file->path + ": probe " + f.site.provider + ":" + f.site.name + " has no arg" +
				std::to_string(arg));
	auto spec = parse_usdt_arg(f.site.args[arg]);
	if (!spec)
		throw UserError(f.file->path + ": " + spec.error().message);
	return *spec;
}

// USDTPROF_DERIVED_OWNER: the class the probe names lies `klass` bytes past
// arg 0 in memory (Ruby's args struct): placed in args[proof_arg], beside
// the identity's arguments. A site whose arg 0 is no memory operand has no
// such neighbour: its identity goes without the verdict.
void place_owner_class(const FoundSite &f, usdtprof_probe_spec &spec)
{
	usdtprof_derived &d = spec.derived;
	if (!d.used || d.kind != USDTPROF_DERIVED_OWNER)
		return;
	usdtprof_arg_spec name = site_arg(f, 0);
	if (name.kind != USDTPROF_ARG_REG_DEREF || d.proof_arg < spec.nargs || d.proof_arg >= USDTPROF_MAX_IDENT_ARGS) {
		d.used = 0;
		return;
	}
	name.offset += d.klass;
	name.size = 8;
	name.is_signed = 0;
	spec.args[d.proof_arg] = name;
}

usdtprof_probe_spec probe_spec(const FoundSite &f)
{
	const ProbeRole &p = f.probe;
	usdtprof_probe_spec spec{};
	spec.role = p.role;
	spec.ident = p.ident;
	spec.nests = p.nests;
	spec.pair = p.pair;
	spec.nop5_site = f.site.nop5_follows;
	switch (p.ident) {
	case USDTPROF_IDENT_PAIR:
		break;
	case USDTPROF_IDENT_NATIVE:
		spec.args[0] = site_arg(f, p.arg);
		place_clock_args(f, spec);
		break;
	case USDTPROF_IDENT_CONST:
		spec.const_func = const_function_id(p.const_name);
		break;
	case USDTPROF_IDENT_PTRS:
	case USDTPROF_IDENT_SQL:
		spec.nargs = uint32_t(std::min<size_t>(p.ident_args.size(), USDTPROF_MAX_IDENT_ARGS));
		spec.content_mask = site_content_mask(p, f.file->sites);
		spec.derived = site_derived(p, f.file->sites, f.site);
		for (uint32_t i = 0; i < spec.nargs; i++)
			spec.args[i] = site_arg(f, p.ident_args[i]);
		place_owner_class(f, spec);
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

uint32_t site_content_mask(const ProbeRole &probe, const std::vector<UsdtSite> &file_sites)
{
	bool forgets = std::any_of(file_sites.begin(), file_sites.end(), [&](const UsdtSite &s) {
		return s.provider == probe.provider && s.name == probe.names_freed_at;
	});
	return forgets ? probe.content_mask : probe.content_mask & ~USDTPROF_CONTENT_PINNED;
}

// Our header's probes (usdtprof.h) pass the program's clock reads in
// arguments 1 to 4 (1 to 3 from older headers), each an 8-byte register:
// then each hit's time is measured in band (bpf/inband.bpf.h). Sites built
// with the oldest headers pass the name alone.
void place_clock_args(const FoundSite &f, usdtprof_probe_spec &spec)
{
	size_t reads = f.site.args.size() - 1;
	if (f.probe.provider != "usdtprof" || f.site.args.empty() || reads < USDTPROF_INBAND_OLD)
		return;
	reads = std::min<size_t>(reads, USDTPROF_INBAND);
	for (unsigned i = 0; i < reads; i++) {
		auto arg = parse_usdt_arg(f.site.args[1 + i]);
		if (!arg || arg->kind != USDTPROF_ARG_REG || arg->size != 8)
			return;
		spec.clock_args[i] = *arg;
	}
	spec.inband = uint32_t(reads);
}

// Exits are attached before entries (and detached after them): an exit
// probe that misses the first exits of frames entered meanwhile only costs an
// anomaly, while an entry without its exit probe would corrupt the stack.
AttachedProbes attach_sites(Engine &engine, const std::vector<FoundSite> &sites, bool skip_gone)
{
	AttachedProbes out;
	std::map<std::tuple<std::string, std::string, std::string>, ProfileProbe> probes;
	// A file attached for several processes has its sites counted once.
	std::set<std::tuple<std::string, std::string, std::string, uint64_t>> counted;
	auto note = [&](const FoundSite &f, const char *role, bool semaphore) {
		ProfileProbe &p = probes[{f.file->path, f.site.provider, f.site.name}];
		bool fresh = counted.insert({f.file->path, f.site.provider, f.site.name, f.site.pc_offset}).second;
		p = {f.file->path, f.site.provider, f.site.name, role, semaphore ? 1 : p.sites + (fresh ? 1 : 0)};
	};
	auto check = [&](int pid, const Result<void> &r) {
		if (!r && !(skip_gone && pid && has_exited(pid)))
			throw UserError(r.error().message);
	};
	// Where the runtime may free pinned names goes first: an entry never
	// pins a name whose freeing would go unseen.
	for (usdtprof_role role : {USDTPROF_ROLE_FORGET_NAMES, USDTPROF_ROLE_EXIT, USDTPROF_ROLE_TASK_END,
				   USDTPROF_ROLE_SPAN_END, USDTPROF_ROLE_ENTRY, USDTPROF_ROLE_TASK_BEGIN,
				   USDTPROF_ROLE_TASK_CREATE, USDTPROF_ROLE_SPAN_START}) {
		std::map<std::pair<const TargetFile *, int>, std::vector<UprobeSite>> by_file;
		for (const FoundSite &f : sites) {
			if (f.probe.role != role || f.probe.semaphore_only)
				continue;
			auto index = engine.add_spec(probe_spec(f));
			if (!index)
				throw UserError(index.error().message);
			out.spec_probes.emplace(*index, f.probe);
			by_file[{f.file.get(), f.pid}].push_back({f.site.pc_offset, f.site.semaphore_offset, *index});
			note(f, role_name(role), false);
		}
		for (const auto &[key, uprobes] : by_file)
			check(key.second, engine.attach(key.second, *key.first, role, uprobes));
	}
	for (const FoundSite &f : sites)
		if (f.probe.semaphore_only && f.site.semaphore_offset) {
			check(f.pid, engine.hold_semaphore(f.pid, *f.file, f.site.semaphore_offset));
			note(f, "semaphore", true);
		}
	for (auto &[key, probe] : probes)
		out.probes.push_back(probe);
	return out;
}

void merge_attached(AttachedProbes &into, const AttachedProbes &more)
{
	into.spec_probes.insert(more.spec_probes.begin(), more.spec_probes.end());
	for (const ProfileProbe &p : more.probes) {
		auto same = std::find_if(into.probes.begin(), into.probes.end(), [&](const ProfileProbe &q) {
			return q.binary == p.binary && q.provider == p.provider && q.name == p.name;
		});
		if (same == into.probes.end())
			into.probes.push_back(p);
		else
			same->sites = std::max(same->sites, p.sites);
	}
}

FunctionNamer::FunctionNamer(const AttachedProbes &attached,
			     std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> captured,
			     std::map<int, std::vector<Mapping>> maps, const TargetFiles &files)
	: spec_probes_(attached.spec_probes), captured_(std::move(captured)), maps_(std::move(maps)), files_(files)
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
	return name(tgid, func, 0);
}

Result<FunctionName> FunctionNamer::name(uint32_t tgid, uint64_t func, int depth) const
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
		if (name.caller) {
			// The caller's id is a frame below this one's, so no cycle but
			// by a collision of ids: the depth bounds it.
			Result<FunctionName> from = depth < 32 ? this->name(tgid, name.caller, depth + 1)
							       : Result<FunctionName>(Error{"too deep"});
			name.name += " from " + (from ? from->name : std::string("[unknown]"));
			cap_name(name.name, kMaxNameBytes);
			name.caller = 0;
		}
		return name;
	}
	static const std::vector<Mapping> none;
	auto maps = maps_.find(int(tgid));
	auto s = read_target_string(int(tgid), maps == maps_.end() ? none : maps->second, files_, func);
	if (!s)
		return s.error();
	// Our C++ header names functions by __PRETTY_FUNCTION__.
	return FunctionName{simplify_function_name(*s), "", native_kind_};
}

} // namespace usdtprof
