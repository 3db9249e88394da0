// Runtime presets: which probes of a runtime are function entries and exits,
// which arguments identify a function and how to name it. Data, not BPF code.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe_roles.h"
#include "target_file.h"

namespace usdtprof {

struct Preset {
	const char *name;
	const char *summary;                  // one line, for `list` and errors
	std::vector<ProbeRole> (*roles)();
	// Why the probes of a running process will not fire, and how to fix
	// that; empty when they will (or usdtprof cannot tell).
	std::string (*check)(int pid);
	// Environment a launched command needs for the probes to fire: each
	// value is added to the variable's, "{script}" standing for a file
	// holding launch_script, which is only used when asked for
	// (--ruby-call-hook: it can crash the target, see docs/design.md).
	std::vector<std::pair<const char *, const char *>> launch_env;
	const char *launch_script;
	// Said when a command is launched without the launch script.
	const char *without_script;
	// Files holding the probes that a launched executable loads later with
	// dlopen (HotSpot's libjvm.so): "" when none.
	std::string (*late_library)(const std::string &executable);
};

const std::vector<Preset> &presets();
const Preset *find_preset(std::string_view name);
// The presets whose probes (entries) some file of files has, in table order.
std::vector<const Preset *> detect_presets(const std::vector<TargetFilePtr> &files);
// Whether a NUL-separated environment (/proc/PID/environ) turns PHP's
// probes on: USE_ZEND_DTRACE set to a non-zero integer, wherever it stands.
bool php_dtrace_enabled(std::string_view environ);
// The presets that use provider:name.
std::vector<std::string> probe_presets(std::string_view provider, std::string_view name);

} // namespace usdtprof
