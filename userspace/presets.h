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
	// (--ruby-call-hook), "{repair}" for one holding repair_script, always.
	std::vector<std::pair<const char *, const char *>> launch_env;
	const char *launch_script;
	// Said when a command is launched without the launch script.
	const char *without_script;
	// Files holding the probes that a launched executable loads later with
	// dlopen (HotSpot's libjvm.so): "" when none.
	std::string (*late_library)(const std::string &executable);
	// Loaded by every launched process of the runtime: repairs what would
	// make its probes crash it (Ruby 3.1), then says so (ruby_repaired).
	const char *repair_script;
};

// Where launch scripts live (a directory only root can write), and the Ruby
// repair script, which a repaired Ruby keeps open.
constexpr const char *kLaunchDir = "/run/usdtprof";
constexpr const char *kRubyRepairScript = "/run/usdtprof/ruby-repair.rb";
// Whether pid is a Ruby that loaded the repair script: only then are its
// cmethod probes safe (Ruby 3.1 reads a freed class name in them otherwise).
bool ruby_repaired(int pid);
// The signal a repaired Ruby raises once repaired (SIGURG, ignored by default).
int ruby_repaired_signal();

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
