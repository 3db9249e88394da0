#include "target/presets.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <sys/stat.h>

#include "target/naming.h"
#include "target/proc_root.h"
#include "target/usdt.h"

namespace usdtprof {

namespace {

// A NUL-separated /proc file (environ, cmdline) of pid, "" if unreadable.
std::string proc_file(int pid, const char *name)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ProbeRole runtime(const char *provider, const char *name, usdtprof_role role, std::vector<unsigned> ident_args,
		  uint32_t content_mask, std::vector<NamePart> parts, NameFormat format)
{
	ProbeRole r = probe_role(provider, name, role);
	r.ident = USDTPROF_IDENT_PTRS;
	r.ident_args = std::move(ident_args);
	r.content_mask = content_mask;
	r.parts = std::move(parts);
	r.format = format;
	return r;
}

ProbeRole constant(const char *provider, const char *name, usdtprof_role role, const char *frame)
{
	ProbeRole r = probe_role(provider, name, role);
	r.ident = USDTPROF_IDENT_CONST;
	r.const_name = frame;
	return r;
}

// php:function__entry/return(function, file, line, class, scope). Names are
// keyed by content: PHP-FPM frees them at the end of each request. PHP names
// top-level code "main" too, a literal in its binary, where a user function's
// name is a zend_string, its length in the 8 bytes before the text: the
// function name is keyed and captured with those bytes, so the two differ.
// Every closure is "{closure}": the file (by content) and the line (where the
// function starts executing, the same at its entry and return: PHP computes
// both once, in dtrace_execute_ex) keep them apart. The three strings are
// zend_strings (or literals): a known function's hit is found in a cache by
// their addresses, checked against each one's hash, length and first bytes
// (USDTPROF_CONTENT_CACHED), instead of hashing them again. Those PHP has
// interned (classes' names; functions' and files' too with opcache) stay until
// the request ends: a thread's slot takes them by their address alone until
// its next request starts (php:request__startup, USDTPROF_CONTENT_PINNED).
std::vector<ProbeRole> php_roles()
{
	const std::vector<NamePart> parts = {{USDTPROF_PART_STR_PREFIXED, 0}, {USDTPROF_PART_STR, 1},
					     {USDTPROF_PART_INT, 2}, {USDTPROF_PART_STR, 3}};
	const uint32_t content =
		0b111 | USDTPROF_CONTENT_PREFIXED(0) | USDTPROF_CONTENT_CACHED | USDTPROF_CONTENT_PINNED;
	const std::vector<unsigned> ident = {0, 3, 1, 2}; // function, class, file, line
	std::vector<ProbeRole> roles = {
		runtime("php", "function__entry", USDTPROF_ROLE_ENTRY, ident, content, parts, php_function_name),
		runtime("php", "function__return", USDTPROF_ROLE_EXIT, ident, content, parts, php_function_name),
		probe_role("php", "request__startup", USDTPROF_ROLE_FORGET_NAMES)};
	roles[0].names_freed_at = roles[1].names_freed_at = "request__startup";
	return roles;
}

std::string php_check(int pid)
{
	std::string env = proc_file(pid, "environ");
	if (env.empty() || php_dtrace_enabled(env))
		return "";
	return "PHP fires its function probes only when started with USE_ZEND_DTRACE=1 in its environment: "
	       "restart it with USE_ZEND_DTRACE=1 (record -- php ... sets it)";
}

// ruby:[c]method__entry/return(class, method, file, line). The class name
// is a fresh copy at each call, so it is keyed by content; method names are
// interned symbols. A class or module without a name is named by Ruby with
// its address ("#<Class:0x00007f...>", one per Class.new, Struct.new): keyed
// without the address (USDTPROF_CONTENT_ANON) and named "(anonymous class)"
// (ruby_class_name), the methods of all such classes are one function each. A singleton method is named for its class by the probes:
// Ruby methods' entries and returns also tell whether it is one
// (kRuby31MethodOwner, a verdict captured with the class), and so do C
// methods' in the build whose sites ruby31_cmethod_sites() lists (elsewhere
// Time.now stays Time#now).
std::vector<ProbeRole> ruby_roles()
{
	const std::vector<NamePart> parts = {
		{USDTPROF_PART_STR_VERDICT, 0}, {USDTPROF_PART_STR, 1}, {USDTPROF_PART_STR, 2}, {USDTPROF_PART_INT, 3}};
	const uint32_t content = 0b01 | USDTPROF_CONTENT_ANON(0);
	std::vector<ProbeRole> roles = {
		runtime("ruby", "method__entry", USDTPROF_ROLE_ENTRY, {0, 1}, content, parts, ruby_method_name),
		runtime("ruby", "method__return", USDTPROF_ROLE_EXIT, {0, 1}, content, parts, ruby_method_name),
		runtime("ruby", "cmethod__entry", USDTPROF_ROLE_ENTRY, {0, 1}, content, parts, ruby_method_name),
		runtime("ruby", "cmethod__return", USDTPROF_ROLE_EXIT, {0, 1}, content, parts, ruby_method_name)};
	roles[0].derived = roles[1].derived = kRuby31MethodOwner;
	roles[2].site_derived = roles[3].site_derived = ruby31_cmethod_sites();
	return roles;
}

} // namespace

// Where each cmethod site of Debian's Ruby 3.1.2 finds the method entry
// (objdump -d of libruby-3.1.so.3.1 at the .note.stapsdt addresses). Each
// site passes rb_dtrace_setup the entry's owner, 32 bytes into it; what
// holds the entry at the probe, after that call:
// - vm_call_cfunc_with_frame: %r14 at both probes (callee-saved);
// - its copy inlined in the method dispatch: the stack slot at %rsp, where
//   the entry is kept across the C function's call (entry and return);
// - rb_vm_pop_cfunc_frame (a C frame left by a jump): the frame is still
//   pushed, the execution context in %rbx (its frame's entry);
// - the exception unwinding in rb_vm_exec: the C frame still pushed, the
//   execution context in the stack slot at %rbp - 0x150;
// - another return that pops a C frame itself (code beside
//   rb_postponed_job_flush), the entry in %rbp;
// - vm_dtrace (events of optimized instructions, entry and return): Ruby
//   finds the method from the frame itself; nothing holds it: not proved.
// Entry and return sites of one call agree (both proved, or both not), so
// a call's id is the same at both.
const std::vector<SiteDerived> &ruby31_cmethod_sites()
{
	auto at = [](usdtprof_reg reg, usdtprof_owner_from from, int32_t slot) {
		usdtprof_derived d = kRuby31MethodOwner;
		d.reg = d.reg2 = reg;
		d.from = from;
		d.slot = slot;
		return d;
	};
	static const std::vector<SiteDerived> sites = {
		{"cmethod__entry", 0x249619, at(USDTPROF_REG_R14, USDTPROF_FROM_ENTRY, 0)},
		{"cmethod__return", 0x249761, at(USDTPROF_REG_R14, USDTPROF_FROM_ENTRY, 0)},
		{"cmethod__return", 0x249967, usdtprof_derived{}},
		{"cmethod__entry", 0x2499c8, usdtprof_derived{}},
		{"cmethod__return", 0x24a691, at(USDTPROF_REG_BX, USDTPROF_FROM_EC, 0)},
		{"cmethod__return", 0x2532ec, at(USDTPROF_REG_BP, USDTPROF_FROM_SLOT_EC, -0x150)},
		{"cmethod__return", 0x257f02, at(USDTPROF_REG_SP, USDTPROF_FROM_SLOT_ENTRY, 0)},
		{"cmethod__entry", 0x25862f, at(USDTPROF_REG_SP, USDTPROF_FROM_SLOT_ENTRY, 0)},
		{"cmethod__return", 0x26ac0f, at(USDTPROF_REG_BP, USDTPROF_FROM_ENTRY, 0)},
	};
	return sites;
}

namespace {

// hotspot:method__entry/return(thread, class, class length, method, method
// length, signature, signature length): strings not NUL-terminated, interned
// Symbols, so the pointers identify a method.
std::vector<ProbeRole> java_roles()
{
	const std::vector<NamePart> parts = {
		{USDTPROF_PART_STR_LEN, 1, 2}, {USDTPROF_PART_STR_LEN, 3, 4}, {USDTPROF_PART_STR_LEN, 5, 6}};
	std::vector<ProbeRole> roles = {runtime("hotspot", "method__entry", USDTPROF_ROLE_ENTRY, {1, 3, 5}, 0, parts, java_captured_name),
					runtime("hotspot", "method__return", USDTPROF_ROLE_EXIT, {1, 3, 5}, 0, parts, java_captured_name)};
	// The probes fire in SharedRuntime::dtrace_method_entry/exit, called by
	// the method's own code (interpreted or compiled), on the thread's stack.
	for (ProbeRole &r : roles)
		r.nests = USDTPROF_NESTS_CALLER;
	return roles;
}

std::string java_check(int pid)
{
	std::string where = proc_file(pid, "cmdline") + proc_file(pid, "environ");
	if (where.empty() || where.find("+ExtendedDTraceProbes") != std::string::npos ||
	    where.find("+DTraceMethodProbes") != std::string::npos)
		return "";
	return "HotSpot fires its method probes only with -XX:+DTraceMethodProbes (or -XX:+ExtendedDTraceProbes): "
	       "restart the JVM with it (record -- java ... sets it)";
}

// The file at path inside pid's root (a container's: resolved there,
// proc_root.h) as that root names it, without symlinks; "" if none.
std::string file_in_root(int pid, const std::filesystem::path &path)
{
	auto fd = open_path_in_root(pid, path.string());
	struct stat st;
	if (!fd || fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode))
		return "";
	return fd_name(fd->get());
}

// A JDK's libjvm.so in pid's root, "" if home has none.
std::string jdk_library(int pid, const std::filesystem::path &home)
{
	return file_in_root(pid, home / "lib" / "server" / "libjvm.so");
}

// Whether pid's executable names libjvm.so (to dlopen it: an embedding
// launcher). Read through /proc/PID/exe: the file itself, no path lookup.
bool names_libjvm(int pid)
{
	constexpr std::string_view needle = "libjvm.so";
	constexpr size_t kMaxScanned = 64 << 20;
	std::ifstream in("/proc/" + std::to_string(pid) + "/exe", std::ios::binary);
	std::string chunk(1 << 16, '\0'), carry;
	for (size_t scanned = 0; in && scanned < kMaxScanned;) {
		in.read(chunk.data(), std::streamsize(chunk.size()));
		std::string window = carry + chunk.substr(0, size_t(in.gcount()));
		if (window.find(needle) != std::string::npos)
			return true;
		carry = window.substr(window.size() > needle.size() ? window.size() - needle.size() : 0);
		scanned += size_t(in.gcount());
	}
	return false;
}

// The JDK an embedding program loads when it is told none: JAVA_HOME's, else
// that of the `java` on PATH (Debian's alternatives lead to it), in pid's root.
std::string default_jdk_library(int pid)
{
	if (const char *home = getenv("JAVA_HOME"); home && *home)
		if (std::string lib = jdk_library(pid, home); !lib.empty())
			return lib;
	const char *path = getenv("PATH");
	std::string dirs = path ? path : "/usr/bin:/bin";
	for (size_t at = 0; at <= dirs.size();) {
		size_t end = std::min(dirs.find(':', at), dirs.size());
		std::filesystem::path java = file_in_root(pid, std::filesystem::path(dirs.substr(at, end - at)) / "java");
		if (!java.empty() && java.parent_path().filename() == "bin")
			return jdk_library(pid, java.parent_path().parent_path());
		at = end + 1;
	}
	return "";
}

// Every launcher of a JDK (java, jar, javac, javadoc, jshell ...) loads its
// JDK's libjvm.so, bin/../lib/server, with dlopen after start. A program
// elsewhere that names libjvm.so (one that embeds a JVM through
// JNI_CreateJavaVM) is taken to load the default JDK's, as such launchers
// do unless told otherwise; one that loads another is not seen. The
// executable is the kernel's name of it, and every path is looked up in the
// process's own root: a followed process may have entered a container.
std::string java_library(int pid)
{
	std::error_code ec;
	std::filesystem::path exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
	if (ec)
		return "";
	if (exe.parent_path().filename() == "bin")
		if (std::string lib = jdk_library(pid, exe.parent_path().parent_path()); !lib.empty())
			return lib;
	return names_libjvm(pid) ? default_jdk_library(pid) : "";
}

// The arguments of pid (/proc/PID/cmdline), none if unreadable.
std::vector<std::string> proc_args(int pid)
{
	std::string cmdline = proc_file(pid, "cmdline");
	std::vector<std::string> args;
	for (size_t at = 0; at < cmdline.size();) {
		size_t end = std::min(cmdline.find('\0', at), cmdline.size());
		args.push_back(cmdline.substr(at, end - at));
		at = end + 1;
	}
	return args;
}

// jshell runs its snippets in a JVM it starts and drives through JDI, unless
// told --execution local, and waits 5 s (7.5 s for JDI's connection) for that
// JVM to connect back. Its own JVM runs jshell, javac and JDI: 15.6 million
// calls in 300 s under record (all probed, on a 2-CPU host at load 5), so the
// wait ran out, and jshell never ran a snippet. That JVM is left unprobed
// (JAVA_TOOL_OPTIONS still turns its probes on, a call each, as it does for
// the snippets' JVM), the snippets' JVM is recorded.
std::string java_left_alone(int pid)
{
	std::error_code ec;
	std::filesystem::path exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
	if (ec || exe.filename() != "jshell" || exe.parent_path().filename() != "bin")
		return "";
	std::vector<std::string> args = proc_args(pid);
	std::string execution;
	for (size_t i = 1; i < args.size(); i++)
		if (args[i] == "--execution" && i + 1 < args.size())
			execution = args[i + 1];
		else if (args[i].starts_with("--execution="))
			execution = args[i].substr(12);
	if (execution.starts_with("local"))
		return "";
	return "jshell's own JVM (jshell, javac, JDI) is not probed: it runs the snippets in a JVM it starts, "
	       "which is recorded (jshell --execution local runs them in its own, which is then recorded)";
}

// The port jshell listens on for its snippets' JVM (pid), the argument after
// its main class (jdk.jshell.execution.RemoteExecutionControl PORT); 0 if pid
// is no such JVM.
int jshell_agent_port(int pid)
{
	std::vector<std::string> args = proc_args(pid);
	for (size_t i = 1; i + 1 < args.size(); i++)
		if (args[i] == "jdk.jshell.execution.RemoteExecutionControl")
			return atoi(args[i + 1].c_str());
	return 0;
}

// jshell's snippets' JVM connects back to jshell within 5 s of JDI's
// connection or jshell gives it up: with every call of its start-up probed
// (60,000 before it connects) it missed that beside two busy loops, 5 runs
// of 5. It is attached once connected: before any snippet can run (jshell
// compiles each with javac first, then sends it), after its start-up, which
// is not recorded.
std::string java_attach_later(int pid)
{
	int port = jshell_agent_port(pid);
	if (port <= 0)
		return "";
	return "jshell's snippets' JVM: attached once it has connected back to jshell (port " + std::to_string(port) +
	       "), before any snippet runs; its start-up is not recorded (probed, it missed jshell's 5 s)";
}

// Whether pid's network namespace has a connection established to jshell's port.
bool java_ready_to_attach(int pid)
{
	int port = jshell_agent_port(pid);
	for (const char *table : {"tcp", "tcp6"}) {
		std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
		std::string line;
		std::getline(in, line); // the header
		while (std::getline(in, line)) {
			// "  sl  local_address rem_address   st ...": ADDR:PORT in hex, st 01 ESTABLISHED.
			std::istringstream fields(line);
			std::string sl, local, remote, state;
			fields >> sl >> local >> remote >> state;
			size_t colon = remote.rfind(':');
			if (state == "01" && colon != std::string::npos &&
			    strtol(remote.c_str() + colon + 1, nullptr, 16) == port)
				return true;
		}
	}
	return false;
}

// python:function__entry/return(file, function, line): the code object's
// strings, alive while it is. Names are interned, so two functions of one
// name in one file (K.meth and K.Inner.meth, A.__init__ and B.__init__)
// would be one: the code object's co_qualname tells them apart, reached
// through the frame, which Debian's 3.11 keeps in %rbx at both probes
// (dtrace_function_entry/return(frame)), at the offsets of 3.11's structs
// (kPython311Qualname), trusted only when its co_name is the function
// argument: another build, or a name not in compact ASCII, falls back to
// (file, name) and the bare name. Code without CO_NEWLOCALS (a module's,
// exec()'d or eval()'d code, a class body) is keyed by its caller's function
// id too (captured with the function name): every exec()'d string is
// "<string>:<module>" from line 1, and one run inside another was one
// function, falsely recursive; python_function_name names it from its
// caller. CPython 3.11 skips
// the entry probe of Python-to-Python calls (gh-98894) unless its line probe
// is enabled: holding the python:line semaphore up makes them fire.
std::vector<ProbeRole> python_roles()
{
	const std::vector<NamePart> parts = {
		{USDTPROF_PART_STR, 0}, {USDTPROF_PART_STR_CALLER, 1}, {USDTPROF_PART_INT, 2}, {USDTPROF_PART_DERIVED, 0}};
	ProbeRole line = probe_role("python", "line", USDTPROF_ROLE_ENTRY);
	line.semaphore_only = true;
	line.held_cost = "CPython 3.11 traces every line it runs, which makes line-heavy code several times slower "
			 "(docs/benchmarks.md)";
	std::vector<ProbeRole> roles = {
		runtime("python", "function__entry", USDTPROF_ROLE_ENTRY, {0, 1}, 0, parts, python_function_name),
		runtime("python", "function__return", USDTPROF_ROLE_EXIT, {0, 1}, 0, parts, python_function_name)};
	for (ProbeRole &r : roles)
		r.derived = kPython311Qualname;
	roles.push_back(line);
	return roles;
}

// CPython 3.11's defect (gh-98894): only its python:line semaphore, held up,
// makes entries fire; other versions fire them anyway, and pay nothing.
bool python_wants_site(const ProbeRole &probe, const std::string &path)
{
	return !probe.semaphore_only || path.find("python3.11") != std::string::npos;
}

// PostgreSQL: a query is the outer frame, named by its statement shape (the
// text hashed in the kernel with literals replaced); its phases and waits
// nest inside as constant frames. postgresql:sort__start fires in
// tuplesort_begin, before the sort's input is read, sort__done in
// tuplesort_end, at the executor's end (ExecEndSort): the frame covers the
// plan below the sort, the sort and the rows read from it, and is named so.
std::vector<ProbeRole> postgres_roles()
{
	std::vector<ProbeRole> roles;
	for (usdtprof_role role : {USDTPROF_ROLE_ENTRY, USDTPROF_ROLE_EXIT}) {
		ProbeRole q = probe_role("postgresql", role == USDTPROF_ROLE_ENTRY ? "query__start" : "query__done", role);
		q.ident = USDTPROF_IDENT_SQL;
		q.ident_args = {0};
		q.parts = {{USDTPROF_PART_STR, 0}};
		q.format = sql_statement_name;
		roles.push_back(q);
	}
	const std::pair<const char *, const char *> frames[] = {
		{"query__parse", "parse"}, {"query__rewrite", "rewrite"}, {"query__plan", "plan"},
		{"query__execute", "execute"}, {"buffer__read", "buffer read"}, {"lock__wait", "lock wait"},
		{"lwlock__wait", "lwlock wait"}, {"sort", kPostgresSortFrame}};
	for (const auto &[probe, frame] : frames) {
		roles.push_back(constant("postgresql", (std::string(probe) + "__start").c_str(), USDTPROF_ROLE_ENTRY, frame));
		roles.push_back(constant("postgresql", (std::string(probe) + "__done").c_str(), USDTPROF_ROLE_EXIT, frame));
	}
	return roles;
}

// Ruby 3.1 fires method__entry/return only while a global call/return
// event hook is on. A C hook (libc's labs, a pure function: arguments
// ignored, nothing done) costs less than a TracePoint, whose block would run
// at every call. 0x8 | 0x10: RUBY_EVENT_CALL | RUBY_EVENT_RETURN.
// The script first takes itself out of RUBYOPT: processes this Ruby starts
// do not load it again (Ruby has read RUBYOPT already).
const char kRubyHooks[] = R"(# usdtprof record --ruby-call-hook: Ruby fires its method probes only under a call/return hook.
opts = ENV["RUBYOPT"].to_s.split(" ").reject { |o| o.match?(%r{\A-r/run/usdtprof/[a-z]+-launch\.rb\z}) }
opts.empty? ? ENV.delete("RUBYOPT") : ENV["RUBYOPT"] = opts.join(" ")
require "fiddle"
Fiddle::Function.new(Fiddle::Handle::DEFAULT["rb_add_event_hook"],
                     [Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP],
                     Fiddle::TYPE_VOID).call(Fiddle::Handle::DEFAULT["labs"], 0x8 | 0x10, 0)
)";

// Ruby 3.1 forgets the name of RubyVM::FrozenCore (the receiver of `alias`,
// `undef` and some hash literals: core#set_method_alias ...) at its first
// GC: the name is kept in the instance variables of a class whose type was
// changed to T_ICLASS, which the GC does not mark. The cmethod probes'
// rb_dtrace_setup() then reads the freed string (rb_class_path): a garbage
// class name, or a crash when the slot holds another kind of object. This
// script, loaded by every launched Ruby, gives the name back as a string
// pinned by a GC root, then keeps itself open as the sign that this process
// is repaired and raises SIGURG (ignored by default), the moment a following
// usdtprof attaches the cmethod probes. Any failure leaves the process as it
// was, unrepaired and without those probes.
const char kRubyRepair[] = R"(# usdtprof: gives RubyVM::FrozenCore its name back (Ruby 3.1 frees it), so that C method probes are safe.
if RUBY_VERSION.start_with?("3.1.")
  begin
    require "fiddle"
    lib = Fiddle::Handle::DEFAULT
    word = ->(address) { Fiddle::Pointer.new(address)[0, 8].unpack1("J") }
    call = ->(name, args, ret, *values) { Fiddle::Function.new(lib[name], args, ret).call(*values) }
    vp, uptr = Fiddle::TYPE_VOIDP, Fiddle::TYPE_UINTPTR_T
    core = word[lib["rb_mRubyVMFrozenCore"]]
    ext = core != 0 && (word[core] & 0x1f) == 0x1c ? word[core + 24] : 0 # T_ICLASS; RClass's ptr
    table = ext != 0 ? word[ext + 8] : 0                                  # rb_classext_t's iv_tbl
    id = call["rb_intern", [vp], uptr, "__classpath__"]
    if table != 0 && call["rb_st_lookup", [vp, uptr, vp], Fiddle::TYPE_INT, table, id, Fiddle::Pointer.malloc(8)] == 1
      name = String.new("RubyVM::FrozenCore").freeze
      root = Fiddle::Pointer.new(Fiddle.malloc(8))
      root[0, 8] = [Fiddle.dlwrap(name)].pack("J")
      call["rb_gc_register_address", [vp], Fiddle::TYPE_VOID, root]
      call["rb_st_insert", [vp, uptr, uptr], Fiddle::TYPE_INT, table, id, Fiddle.dlwrap(name)]
      $usdtprof_ruby_repaired = File.open(__FILE__)
      call["raise", [Fiddle::TYPE_INT], Fiddle::TYPE_INT, Signal.list.fetch("URG")]
    end
  rescue StandardError, LoadError
  end
end
)";

} // namespace

// PHP reads the variable with getenv (the first entry of that name) and
// zend_atoi: any value whose leading integer is not 0 turns the probes on.
bool php_dtrace_enabled(std::string_view environ)
{
	constexpr std::string_view key = "USE_ZEND_DTRACE=";
	while (!environ.empty()) {
		size_t end = environ.find('\0');
		std::string_view entry = environ.substr(0, end);
		if (entry.substr(0, key.size()) == key) {
			std::string value(entry.substr(key.size()));
			return std::strtoll(value.c_str(), nullptr, 10) != 0;
		}
		if (end == std::string_view::npos)
			break;
		environ.remove_prefix(end + 1);
	}
	return false;
}

std::string process_root_label(const ProfileProcess &process)
{
	static const std::regex worker(R"(^postgres: (?:[^:]*: )?parallel worker for PID ([0-9]{1,10})(?: .*)?$)");
	std::smatch leader;
	if (process.cmdline.empty() || !std::regex_match(process.cmdline.front(), leader, worker))
		return "";
	return "[parallel worker for pid " + leader[1].str() + "]";
}

std::map<uint32_t, std::string> process_root_labels(const std::vector<ProfileProcess> &processes)
{
	std::map<uint32_t, std::string> labels;
	for (const ProfileProcess &p : processes)
		if (std::string label = process_root_label(p); !label.empty())
			labels[uint32_t(p.pid)] = label;
	return labels;
}

void apply_titles(std::vector<ProfileProcess> &processes, const std::map<uint32_t, std::string> &titles)
{
	for (ProfileProcess &p : processes) {
		auto title = titles.find(uint32_t(p.pid));
		if (title == titles.end() || title->second.empty())
			continue;
		ProfileProcess titled = p;
		titled.cmdline = {title->second};
		if (p.cmdline.empty() || (process_root_label(p).empty() && !process_root_label(titled).empty()))
			p.cmdline = std::move(titled.cmdline);
	}
}

// Whether pid is a Ruby that loaded the repair script: only then are its
// cmethod probes safe (Ruby 3.1 reads a freed class name in them otherwise).
static bool ruby_repaired(int pid)
{
	std::error_code ec;
	std::filesystem::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec);
	for (; !ec && fds != std::filesystem::directory_iterator(); fds.increment(ec))
		if (std::filesystem::read_symlink(fds->path(), ec) == kRubyRepairScript)
			return true;
	return false;
}

static bool ruby_safe_in(const ProbeRole &probe, int pid)
{
	return !probe.name.starts_with("cmethod__") || (pid && ruby_repaired(pid));
}

const std::vector<Preset> &presets()
{
	static const std::vector<Preset> table = {
		{.name = "native", .summary = "usdtprof's own header (include/usdtprof/usdtprof.h)",
		 .roles = native_probe_roles},
		{.name = "php", .summary = "PHP: php:function__entry/return, named Class::function", .roles = php_roles,
		 .check = php_check, .launch_env = {{"USE_ZEND_DTRACE", "1"}},
		 .built_without = "php built without USDT probes (configure --enable-dtrace)",
		 .with_probes = "/usr/bin/php8.2"},
		{.name = "ruby",
		 .summary = "Ruby: ruby:method__entry/return and cmethod__entry/return, named Class#method "
			    "(singleton methods Class.method)",
		 .roles = ruby_roles,
		 .launch_env = {{"RUBYOPT", "-r{repair}"}, {"RUBYOPT", "-r{script}"}},
		 .launch_script = kRubyHooks,
		 .script_extension = ".rb",
		 .without_script = "Ruby fires method__entry/return only while a call/return hook is on: recording C "
				   "methods only; --ruby-call-hook installs one (Ruby calls 3x slower, before the probes' "
				   "own cost)",
		 .repair_script = kRubyRepair,
		 .repair_path = kRubyRepairScript,
		 .safe_in = ruby_safe_in,
		 .safe_signal = SIGURG, // ignored by default: raised by the repair script
		 .unsafe_note = "ruby: C method probes (cmethod__entry/return) not attached to %s: Ruby 3.1 can crash "
				"in them once its first GC has freed a class name; usdtprof repairs the Rubies it "
				"launches (record -- ruby ..., followed) and only those (docs/design.md)",
		 .built_without = "ruby built without USDT probes (configure --enable-dtrace)",
		 .with_probes = "/usr/bin/ruby3.1"},
		{.name = "java", .summary = "Java (HotSpot): hotspot:method__entry/return, named pkg.Class.method",
		 .roles = java_roles, .check = java_check, .launch_env = {{"JAVA_TOOL_OPTIONS", "-XX:+DTraceMethodProbes"}},
		 .late_library = java_library, .left_alone = java_left_alone, .attach_later = java_attach_later,
		 .ready_to_attach = java_ready_to_attach,
		 .built_without = "JVM built without USDT probes (configure --enable-dtrace)",
		 .with_probes = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"},
		{.name = "python", .summary = "CPython: python:function__entry/return, named file.py:function",
		 .roles = python_roles, .wants_site = python_wants_site,
		 .semaphore_note = "python 3.11 skips function entries (CPython gh-98894): holding its python:line "
				   "semaphore up so they fire, which slows the target down",
		 .built_without = "python built without USDT probes (configure --with-dtrace)",
		 .with_probes = "/usr/bin/python3.11"},
		{.name = "postgres", .summary = "PostgreSQL: one frame per statement shape, its phases and waits inside",
		 .roles = postgres_roles},
	};
	return table;
}

const char *held_semaphore_cost(std::string_view probe)
{
	for (const Preset &p : presets())
		for (const ProbeRole &r : p.roles())
			if (r.semaphore_only && r.held_cost && r.provider + ":" + r.name == probe)
				return r.held_cost;
	return nullptr;
}

const Preset *find_preset(std::string_view name)
{
	for (const Preset &p : presets())
		if (name == p.name)
			return &p;
	return nullptr;
}

std::vector<const Preset *> detect_presets(const std::vector<TargetFilePtr> &files)
{
	std::vector<const Preset *> found;
	for (const TargetFilePtr &file : files) {
		for (const Preset &p : presets()) {
			ProbeRole first = p.roles().front();
			bool has = std::any_of(file->sites.begin(), file->sites.end(), [&](const UsdtSite &s) {
				return s.provider == first.provider && s.name == first.name;
			});
			if (has && std::find(found.begin(), found.end(), &p) == found.end())
				found.push_back(&p);
		}
	}
	std::sort(found.begin(), found.end());
	return found;
}

std::vector<std::string> probe_presets(std::string_view provider, std::string_view name)
{
	std::vector<std::string> out;
	for (const Preset &preset : presets()) {
		const auto roles = preset.roles();
		if (std::any_of(roles.begin(), roles.end(),
				[&](const ProbeRole &r) { return r.provider == provider && r.name == name; }))
			out.push_back(preset.name);
	}
	return out;
}

} // namespace usdtprof
