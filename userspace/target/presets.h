// Runtime presets: which probes of a runtime are function entries and exits,
// which arguments identify a function and how to name it. Data, not BPF code.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profile/profile.h"
#include "target/probe_roles.h"
#include "target/target_file.h"

namespace usdtprof {

// A runtime's probes and its quirks, as one row of presets() written with
// designated initializers: what a runtime does not need stays at its default.
struct Preset {
	const char *name = "";
	const char *summary = "";             // one line, for `list`, --help and errors
	std::vector<ProbeRole> (*roles)() = nullptr;
	// Why the probes of a running process will not fire, and how to fix
	// that; empty when they will (or usdtprof cannot tell). nullptr: never.
	std::string (*check)(int pid) = nullptr;
	// Whether a site found for this preset's probes in the file at path is
	// attached; nullptr: every one. (CPython's python:line semaphore is held
	// only in the 3.11 that needs it.)
	bool (*wants_site)(const ProbeRole &probe, const std::string &path) = nullptr;
	// Said once when a site only holds a semaphore up (ProbeRole::semaphore_only).
	const char *semaphore_note = nullptr;
	// Environment a launched command needs for the probes to fire: each
	// value is added to the variable's, "{script}" standing for a file
	// holding launch_script, which is only used when asked for
	// (--ruby-call-hook), "{repair}" for one holding repair_script, always.
	std::vector<std::pair<const char *, const char *>> launch_env = {};
	const char *launch_script = nullptr;
	const char *script_extension = "";    // of the launch script's file: the runtime loads it by it
	// Said when a command is launched without the launch script.
	const char *without_script = nullptr;
	// The file holding the probes that a launched process (pid, at its entry
	// point or just exec'd) loads later with dlopen (HotSpot's libjvm.so), as
	// a path in that process's root: "" when none. nullptr: never.
	std::string (*late_library)(int pid) = nullptr;
	// Why a launched or followed process of this runtime (pid, at its entry
	// point or just exec'd) is not probed, its work running in a process it
	// starts, which is (jshell: its snippets' JVM); "" when it is. nullptr:
	// always probed.
	std::string (*left_alone)(int pid) = nullptr;
	// Why a launched or followed process of this runtime is attached only
	// once ready_to_attach(pid) says so, polled (jshell's snippets' JVM,
	// once it has connected back to jshell); "" to attach it at once.
	std::string (*attach_later)(int pid) = nullptr;
	bool (*ready_to_attach)(int pid) = nullptr;
	// Loaded by every launched process of the runtime from repair_path:
	// repairs what would make its probes crash it (Ruby 3.1), then says so
	// (safe_in).
	const char *repair_script = nullptr;
	const char *repair_path = nullptr;
	// Whether the sites of probe may be attached in process pid now; those
	// that may not are held until the process raises safe_signal and then
	// may (the repair above ran there), or never attached, with unsafe_note
	// said once. nullptr: always.
	bool (*safe_in)(const ProbeRole &probe, int pid) = nullptr;
	int safe_signal = 0;
	const char *unsafe_note = nullptr; // "%s": the process, or "every process of the binary"
	// A binary whose file name starts with this preset's name but has none of
	// its probes: what it is, and the build that has them.
	const char *built_without = nullptr;
	const char *with_probes = nullptr;
};

// Where launch scripts live (a directory only root can write), and the Ruby
// repair script, which a repaired Ruby keeps open.
constexpr const char *kLaunchDir = "/run/usdtprof";
constexpr const char *kRubyRepairScript = "/run/usdtprof/ruby-repair.rb";

// CPython 3.11's co_qualname beside python:function__entry/return's
// arguments (usdtprof_derived): the frame in %rbx at both probes of Debian's
// build, its f_code, whose co_name (compact ASCII: its text 48 bytes in, its
// state byte at 32 with compact 0x20 and ascii 0x40) is arg1. The code
// object's co_flags (48), co_firstlineno (72), co_name (120) and co_qualname
// (128) are read in one piece from co_flags on; code without CO_NEWLOCALS
// (0x2: a module's code, exec()'d or eval()'d code, a class body) is keyed
// by its caller too. The frame's f_func (0) is read with f_code, and its
// func_qualname (40, func_code at 48): exec()'d methods that dataclasses and
// namedtuple rename (__qualname__ "Point.__init__") are apart by it.
constexpr usdtprof_derived kPython311Qualname = {
	.used = 1, .reg = USDTPROF_REG_BX, .object = 32, .proof = 120, .proof_arg = 1, .value = 128,
	.text = 48, .flags = 32, .flag_mask = 0x60, .kind = USDTPROF_DERIVED_STRING, .reg2 = 0, .ep = 0, .me = 0,
	.svar_me = 0, .owner = 0, .klass = 0, .imemo_mask = 0, .imemo_ment = 0, .imemo_svar = 0, .from = 0, .slot = 0,
	.first_line = 72, .window = 48, .code_flags = 48, .function_flags = 0x2, .func = 0, .func_qualname = 40,
	.class_serial = 0, .pad_derived = 0};

// Ruby 3.1's method__entry/return name a singleton method's class, not its
// singleton class (rb_dtrace_setup takes the attached object): Util.twice
// and Util#twice both read "Util". The method entry tells them apart
// (usdtprof_derived, USDTPROF_DERIVED_OWNER), reached in Debian's 3.1.2
// through the execution context, in %r12 where vm_dtrace's callers keep it
// and in %rbx in hook_before_rewind (exceptions): ec->cfp (16), cfp->ep
// (32), ep[-2] the method entry or a vm_svar holding it (cref_or_me, 8),
// its owner (32); flags: T_IMEMO 0x1a with the imemo type at bit 12 (svar
// 2, ment 6). The class the probe names is the args struct's klass, 32
// bytes past its classname (arg 0); its singleton class is its own class
// (RBasic.klass, 8). RClass's class_serial (32), a number Ruby gives each
// class at its making from one counter, keys the thread's cache of class
// names' hashes (bpf/identity.bpf.h, owner_identity).
constexpr usdtprof_derived kRuby31MethodOwner = {
	.used = 1, .reg = USDTPROF_REG_R12, .object = 16, .proof = 0, .proof_arg = 2, .value = 8, .text = 0,
	.flags = 0, .flag_mask = 0, .kind = USDTPROF_DERIVED_OWNER, .reg2 = USDTPROF_REG_BX, .ep = 32, .me = -16,
	.svar_me = 8, .owner = 32, .klass = 32, .imemo_mask = 0xf01f, .imemo_ment = 0x601a, .imemo_svar = 0x201a,
	.from = USDTPROF_FROM_EC, .slot = 0, .first_line = 0, .window = 0, .code_flags = 0, .function_flags = 0,
	.func = 0, .func_qualname = 0, .class_serial = 32, .pad_derived = 0};

// Ruby 3.1's cmethod__entry/return fire outside the C method's frame (before
// Ruby pushes it, after it pops it), but their callers still hold its method
// entry, each site in its own place: read from Debian's 3.1.2 build
// (libruby-3.1.so.3.1, build id 862794fb...), site by site
// (docs/design.md); a file whose cmethod sites are not exactly these keeps
// Class#m for singleton C methods.
const std::vector<SiteDerived> &ruby31_cmethod_sites();

// The frame of postgresql:sort__start/done: from the tuplesort's start, before
// its input is read, to its end at the executor's end.
constexpr const char *kPostgresSortFrame = "sort (input to end)";

const std::vector<Preset> &presets();
const Preset *find_preset(std::string_view name);
// What holding a preset's semaphore-only probe ("provider:name") up costs the
// runtime beyond the probes recorded, for reports; nullptr: nothing known.
const char *held_semaphore_cost(std::string_view probe);
// The presets whose probes (entries) some file of files has, in table order.
std::vector<const Preset *> detect_presets(const std::vector<TargetFilePtr> &files);
// Whether a NUL-separated environment (/proc/PID/environ) turns PHP's
// probes on: USE_ZEND_DTRACE set to a non-zero integer, wherever it stands.
bool php_dtrace_enabled(std::string_view environ);
// The frame the roots of a process that works for another hang under, ""
// for none: a PostgreSQL parallel worker (its title, the first word of its
// cmdline, "postgres: [CLUSTER: ]parallel worker for PID N") runs part of
// its leader's statement but fires no statement probe of its own; its
// frames go under "[parallel worker for pid N]".
std::string process_root_label(const ProfileProcess &process);
// process_root_label of each process that has one, by pid.
std::map<uint32_t, std::string> process_root_labels(const std::vector<ProfileProcess> &processes);
// Gives processes the titles the kernel kept (Engine::read_process_titles,
// taken at their first event) as their command line where they have none
// (gone before /proc was read) or where only the title earns a label (seen
// by a scan between their fork and their title: a PostgreSQL worker).
void apply_titles(std::vector<ProfileProcess> &processes, const std::map<uint32_t, std::string> &titles);
// The presets that use provider:name.
std::vector<std::string> probe_presets(std::string_view provider, std::string_view name);

} // namespace usdtprof
