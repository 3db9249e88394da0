// Which USDT probes play which role: our header's, and custom ones named on
// the command line for programs with probes of their own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

struct ProbeRole {
	std::string provider;
	std::string name;
	usdtprof_role role;
	unsigned arg = 0; // the argument that identifies the function (a pointer to its name) or the task
};

// The probes of include/usdtprof/usdtprof.h.
std::vector<ProbeRole> native_probe_roles();

// "PROVIDER:ENTRY/EXIT[:argN]": a probe pair whose argument N (default 0)
// points to the function's name, e.g. "myapp:request__start/request__done:arg1".
Result<std::vector<ProbeRole>> parse_pair_spec(std::string_view spec);
// "PROVIDER:CREATE/BEGIN/END[:argN]": task probes whose argument N is the task id.
Result<std::vector<ProbeRole>> parse_task_spec(std::string_view spec);

const char *role_name(usdtprof_role role);

} // namespace usdtprof
