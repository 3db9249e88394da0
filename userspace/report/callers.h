// A function's callers and callees (gprof's and Octave's Parents/Children):
// per edge, the calls made through it and the time attributed to it, with
// recursion counted once (docs/report-json.md "Callers and callees").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace usdtprof {

// "[root]": the caller of a function at the root of a call path.
inline constexpr const char *kRootCaller = "[root]";

struct Edge {
	std::string name;     // the caller or callee
	uint64_t calls = 0;   // every call through this edge
	uint64_t time_ns = 0; // inclusive time through it, recursion counted once
};

struct Neighbours {
	FunctionSummary function;
	// Self time of the function's outermost activations: with the callees'
	// times it adds up to function.total_ns.
	uint64_t outer_self_ns = 0;
	std::vector<Edge> callers, callees; // largest time first, then calls, then name
};

// Of the function named name in the tree, or nullopt when no node has it.
// Recursion counted once: a call of NAME made inside an activation of NAME
// (directly or through others) counts in its edge's calls, not its time,
// which is already in the outermost activation's. So callers' times add up
// to function.total_ns, and callees' times plus outer_self_ns do too.
std::optional<Neighbours> neighbours_of(const CallTree &tree, const std::string &name);

// What report --callers/--callees print: text tables or one JSON object with
// "callers" and/or "callees" (as_json); the tree as render_report builds it (compensated
// unless options.raw, in options.time). Fails when no function has the name.
Result<std::string> render_neighbours(const Profile &profile, const ReportOptions &options, bool as_json,
				      const std::string &callers_of, const std::string &callees_of);

} // namespace usdtprof
