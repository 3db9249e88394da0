#include "target/probe_roles.h"

#include "target/naming.h"

#include <charconv>

namespace usdtprof {

namespace {

bool is_identifier(std::string_view s)
{
	if (s.empty() || s.size() > 256)
		return false;
	for (char c : s)
		if (!(isalnum(static_cast<unsigned char>(c)) || c == '_'))
			return false;
	return !isdigit(static_cast<unsigned char>(s[0]));
}

// One line, whatever was typed.
std::string printable(std::string_view text)
{
	std::string shown(text.substr(0, 200));
	for (char &c : shown)
		if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
			c = '?';
	return shown;
}

// PROVIDER:NAME/NAME[/NAME...][:argN] with exactly `count` names.
Result<std::vector<ProbeRole>> parse_spec(std::string_view spec, const std::vector<usdtprof_role> &roles,
					  bool names_allowed, const char *form)
{
	auto bad = [&](std::string why) {
		return Error{"invalid probe spec '" + printable(spec) + "': " + printable(why) + " (expected " + form + ")"};
	};
	size_t colon = spec.find(':');
	if (colon == std::string_view::npos)
		return bad("no provider");
	std::string_view provider = spec.substr(0, colon), rest = spec.substr(colon + 1);
	ProbeRole naming{};
	if (size_t c = rest.find(':'); c != std::string_view::npos) {
		std::string_view a = rest.substr(c + 1);
		rest = rest.substr(0, c);
		if (a.size() > 1 && a[0] == '=' && names_allowed) {
			naming.ident = USDTPROF_IDENT_CONST;
			naming.const_name = a.substr(1);
		} else {
			std::string_view kind;
			if (size_t k = a.find(':'); k != std::string_view::npos && names_allowed)
				kind = a.substr(k + 1), a = a.substr(0, k);
			unsigned arg = 0;
			auto [end, ec] = a.size() > 3 ? std::from_chars(a.data() + 3, a.data() + a.size(), arg)
						      : std::from_chars(a.data(), a.data(), arg);
			if (a.substr(0, 3) != "arg" || ec != std::errc() || end != a.data() + a.size() || arg > 11)
				return bad("the argument must be arg0 to arg11");
			naming.arg = arg;
			if (kind == "str" || kind == "int") {
				naming.ident = USDTPROF_IDENT_PTRS;
				naming.ident_args = {arg};
				// A program's strings may be freed or reused: keyed by content.
				naming.content_mask = kind == "str" ? 1 : 0;
				naming.parts = {{kind == "str" ? USDTPROF_PART_STR : USDTPROF_PART_INT, arg, 0}};
				naming.format = kind == "str" ? string_name : integer_name;
			} else if (!kind.empty()) {
				return bad("the argument's kind must be str or int");
			}
		}
	}
	if (!is_identifier(provider))
		return bad("bad provider name");
	std::vector<ProbeRole> out;
	for (usdtprof_role role : roles) {
		size_t slash = rest.find('/');
		std::string_view name = rest.substr(0, slash);
		if (!is_identifier(name))
			return bad("bad probe name '" + std::string(name) + "'");
		ProbeRole r = naming;
		r.provider = provider;
		r.name = name;
		r.role = role;
		out.push_back(std::move(r));
		rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
		if (slash == std::string_view::npos && out.size() < roles.size())
			return bad("too few probe names");
	}
	if (!rest.empty())
		return bad("too many probe names");
	return out;
}

} // namespace

ProbeRole probe_role(std::string_view provider, std::string_view name, usdtprof_role role)
{
	ProbeRole r;
	r.provider = provider;
	r.name = name;
	r.role = role;
	return r;
}

std::vector<ProbeRole> native_probe_roles()
{
	std::vector<ProbeRole> roles = {
		probe_role("usdtprof", "enter", USDTPROF_ROLE_ENTRY),
		probe_role("usdtprof", "exit", USDTPROF_ROLE_EXIT),
		probe_role("usdtprof", "task_create", USDTPROF_ROLE_TASK_CREATE),
		probe_role("usdtprof", "task_begin", USDTPROF_ROLE_TASK_BEGIN),
		probe_role("usdtprof", "task_end", USDTPROF_ROLE_TASK_END),
	};
	// The header's probes sit in the functions they time (or a task's run loop).
	for (ProbeRole &r : roles)
		r.nests = USDTPROF_NESTS_SITE;
	return roles;
}

Result<std::vector<ProbeRole>> parse_pair_spec(std::string_view spec)
{
	std::string_view body = spec;
	bool match = body.ends_with(":match") && body.size() > 6;
	if (match)
		body.remove_suffix(6);
	auto roles = parse_spec(body, {USDTPROF_ROLE_ENTRY, USDTPROF_ROLE_EXIT}, true,
				"PROVIDER:ENTRY/EXIT[:argN[:str|:int]|:=NAME][:match]");
	if (!roles)
		return roles;
	uint32_t tag = pair_tag((*roles)[0].provider, (*roles)[0].name, (*roles)[1].name);
	for (ProbeRole &r : *roles) {
		r.pair = tag;
		r.spec = spec;
	}
	if (!match) {
		ProbeRole &exit = (*roles)[1];
		exit.ident = USDTPROF_IDENT_PAIR;
		exit.ident_args.clear();
		exit.content_mask = 0;
		exit.parts.clear();
	}
	return roles;
}

Result<std::vector<ProbeRole>> parse_span_spec(std::string_view spec, uint32_t id)
{
	// One START and up to 4 ENDs (a transaction's commit and abort).
	size_t names = 1;
	for (char c : spec.substr(0, spec.find(':') == std::string_view::npos ? 0 : spec.size()))
		names += c == '/';
	if (names < 2 || names > 5 || spec.find(':') != spec.rfind(':'))
		return Error{"invalid probe spec '" + printable(spec) + "': expected PROVIDER:START/END[/END...], "
			     "at most 4 ENDs"};
	std::vector<usdtprof_role> roles(names, USDTPROF_ROLE_SPAN_END);
	roles[0] = USDTPROF_ROLE_SPAN_START;
	auto parsed = parse_spec(spec, roles, false, "PROVIDER:START/END[/END...]");
	if (!parsed)
		return parsed;
	for (ProbeRole &r : *parsed) {
		r.ident = USDTPROF_IDENT_PAIR; // no argument is read
		r.pair = id;
		r.spec = spec;
	}
	return parsed;
}

uint32_t pair_tag(std::string_view provider, std::string_view entry, std::string_view exit)
{
	uint64_t h = const_function_id(std::string(provider) + ":" + std::string(entry) + "/" + std::string(exit));
	uint32_t tag = uint32_t(h ^ (h >> 32));
	return tag ? tag : 1;
}

Result<std::vector<ProbeRole>> parse_task_spec(std::string_view spec)
{
	return parse_spec(spec, {USDTPROF_ROLE_TASK_CREATE, USDTPROF_ROLE_TASK_BEGIN, USDTPROF_ROLE_TASK_END}, false,
			  "PROVIDER:CREATE/BEGIN/END[:argN]");
}

usdtprof_derived site_derived(const ProbeRole &probe, const std::vector<UsdtSite> &sites, const UsdtSite &site)
{
	const auto &table = probe.site_derived;
	if (table.empty())
		return probe.derived;
	auto row = [&](const UsdtSite &s) -> const SiteDerived * {
		for (const SiteDerived &r : table)
			if (r.pc == s.pc && r.probe == s.name)
				return &r;
		return nullptr;
	};
	size_t listed = 0;
	for (const UsdtSite &s : sites) {
		if (s.provider != probe.provider)
			continue;
		bool in_table = false;
		for (const SiteDerived &r : table)
			in_table = in_table || r.probe == s.name;
		if (!in_table)
			continue;
		if (!row(s))
			return probe.derived;
		listed++;
	}
	const SiteDerived *mine = row(site);
	if (listed != table.size() || site.provider != probe.provider || !mine)
		return probe.derived;
	return mine->derived;
}

uint64_t const_function_id(std::string_view name)
{
	uint64_t h = 0xcbf29ce484222325ULL; // FNV-1a
	for (unsigned char c : name)
		h = (h ^ c) * 0x100000001b3ULL;
	return h | (1ULL << 63); // user-space addresses stay below 2^47
}

const char *role_name(usdtprof_role role)
{
	switch (role) {
	case USDTPROF_ROLE_ENTRY: return "entry";
	case USDTPROF_ROLE_EXIT: return "exit";
	case USDTPROF_ROLE_TASK_CREATE: return "task_create";
	case USDTPROF_ROLE_TASK_BEGIN: return "task_begin";
	case USDTPROF_ROLE_SPAN_START: return "span_start";
	case USDTPROF_ROLE_SPAN_END: return "span_end";
	case USDTPROF_ROLE_FORGET_NAMES: return "forget_names";
	default: return "task_end";
	}
}

} // namespace usdtprof
