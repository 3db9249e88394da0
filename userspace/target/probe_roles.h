// Which USDT probes play which role: our header's, and custom ones named on
// the command line for programs with probes of their own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "target/naming.h"
#include "target/usdt.h"
#include "base/result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

// Which probe argument a captured name part comes from.
struct NamePart {
	usdtprof_part_type type = USDTPROF_PART_NONE;
	unsigned arg = 0;
	unsigned len_arg = 0; // USDTPROF_PART_STR_LEN: the argument holding the length
};

// A derived identity chosen for one site of one build (Ruby's C method
// probes: where each site's caller keeps the method entry, found by reading
// that build's code). derived.used == 0: nothing there proves it.
struct SiteDerived {
	std::string_view probe; // the probe's name (the role's provider)
	uint64_t pc;            // the site's address (UsdtSite::pc)
	usdtprof_derived derived;
};

struct ProbeRole;
// Turns the parts a runtime probe captured into a name.
using NameFormat = FunctionName (*)(const usdtprof_name &captured, const ProbeRole &probe);

struct ProbeRole {
	std::string provider;
	std::string name;
	usdtprof_role role;
	unsigned arg = 0; // IDENT_NATIVE: the argument that identifies the function (a pointer to its name) or the task
	usdtprof_ident ident = USDTPROF_IDENT_NATIVE;
	std::vector<unsigned> ident_args;         // IDENT_PTRS: hashed together; IDENT_SQL: the query text
	uint32_t content_mask = 0;                // IDENT_PTRS: bit i: ident_args[i] is hashed by content
	// USDTPROF_CONTENT_PINNED: the probe (of the same provider) at which
	// the runtime may free the names pinned (a USDTPROF_ROLE_FORGET_NAMES
	// role of the same preset); the pins are kept only in a file that has it.
	std::string names_freed_at;
	std::vector<NamePart> parts;              // IDENT_PTRS, IDENT_SQL: captured, at most USDTPROF_NAME_PARTS
	NameFormat format = nullptr;              // IDENT_PTRS, IDENT_SQL
	usdtprof_derived derived{};               // IDENT_PTRS: an identity beside the arguments (CPython's co_qualname)
	std::vector<SiteDerived> site_derived;    // IDENT_PTRS: one build's sites, each with its own (site_derived())
	std::string const_name;                   // IDENT_CONST
	bool semaphore_only = false;              // only hold this probe's semaphore up (see usdt_semaphore)
	const char *held_cost = nullptr;          // semaphore_only: what holding it up costs the runtime, for reports
	usdtprof_nests nests = USDTPROF_NESTS_NONE; // how its calls nest on the native stack: see usdtprof_probe_spec.nests
	uint32_t pair = 0;                        // a custom pair's tag, a span's id (usdtprof_probe_spec.pair), 0 otherwise
	std::string spec;                         // a custom pair or span: the spec it was given as
};

// The derived identity of a site of probe in a file whose sites are sites:
// the row of probe.site_derived for it when the file's sites of the table's
// probes (probe.provider) are exactly the table's, by name and address (the
// build the table was read from); otherwise probe.derived (none, for a table
// of one build: another build keeps the values elsewhere).
usdtprof_derived site_derived(const ProbeRole &probe, const std::vector<UsdtSite> &sites, const UsdtSite &site);

// A custom pair's tag: non-zero, from its provider and probe names.
uint32_t pair_tag(std::string_view provider, std::string_view entry, std::string_view exit);

// The function id of a constant name (IDENT_CONST): far from any address.
uint64_t const_function_id(std::string_view name);

// A probe in a role, named by its argument 0 (IDENT_NATIVE).
ProbeRole probe_role(std::string_view provider, std::string_view name, usdtprof_role role);

// The probes of include/usdtprof/usdtprof.h.
std::vector<ProbeRole> native_probe_roles();

// "PROVIDER:ENTRY/EXIT[:NAME]": a probe pair named by NAME: "argN" (default
// arg0), a pointer to a name string the program keeps (read once); "argN:str",
// a string, keyed by its content; "argN:int", an integer (named "ENTRY(N)");
// or "=TEXT", a constant. E.g. "myapp:request__start/request__done:arg1".
// The exit closes the innermost frame its entry opened (IDENT_PAIR), its
// arguments unread, unless the spec ends with ":match": then the exit's
// arguments name its frame as the entry's do.
Result<std::vector<ProbeRole>> parse_pair_spec(std::string_view spec);
// "PROVIDER:START/END[/END...]": a span (record --span), timed per thread
// from START to the first END after it, apart from the call stack; `id`
// (from 1) tells the span's probes from other spans'.
Result<std::vector<ProbeRole>> parse_span_spec(std::string_view spec, uint32_t id);
// "PROVIDER:CREATE/BEGIN/END[:argN]": task probes whose argument N is the task id.
Result<std::vector<ProbeRole>> parse_task_spec(std::string_view spec);

const char *role_name(usdtprof_role role);

} // namespace usdtprof
