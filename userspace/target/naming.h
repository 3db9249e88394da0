// Function naming, in one place: what a function id, a captured probe name
// or a C++ __PRETTY_FUNCTION__ is called in every output. The probe roles
// (probe_roles.h, presets.cpp) point at the namers below; the recorder and
// the monitor resolve ids through function_name().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

// A function's name as reports show it, and where it is defined.
struct FunctionName {
	std::string name;
	std::string location; // "file:line", "file" or ""
	int32_t cost_kind = -1; // index into the profile's calibration kinds; -1: none known
	// Another function id of the process this one is named "from" (code
	// exec()'d by it: python_function_name); 0: none. FunctionNamer
	// appends that function's name.
	uint64_t caller = 0;
};

// Resolves a function id of a process to its name.
using NameLookup = std::function<Result<FunctionName>(uint32_t tgid, uint64_t func)>;

// A function's name or location is kept to this many bytes: a target's names
// are its own to choose, and every output holds them.
inline constexpr size_t kMaxNameBytes = 1024;

// Cuts s to at most max_bytes, at a UTF-8 character boundary, ending in
// "..."; true when it was longer.
bool cap_name(std::string &s, size_t max_bytes);

// The name of a function id: from lookup (name and location capped at
// kMaxNameBytes; *cut tells whether either was), "[unknown 0x...]" when it
// fails, and the synthetic ids' own names.
FunctionName function_name(const NameLookup &lookup, uint32_t tgid, uint64_t func, bool *cut = nullptr);

// "int ns::Cls<T>::run(int) const" -> "ns::Cls<T>::run"; other names
// unchanged. Applied when recording to the names of native probes.
std::string simplify_function_name(const std::string &name);

// HotSpot's names as reports show them: "pkg.Class.method(int,String[])",
// overloads apart, an object return type after a colon
// ("pkg.Class.get():String", bridge methods apart); a hidden class (a lambda's) without the address that
// changes every run ("Srv$$Lambda$11+0x0000000800c01000" -> "Srv$$Lambda$11").
std::string java_method_name(std::string_view cls, std::string_view method, std::string_view descriptor);
std::string java_class_name(std::string_view internal);
// A method descriptor's parameters, "(Ljava/lang/String;I)V" -> "(String,int)";
// one cut short ends in "...)".
std::string java_parameters(std::string_view descriptor);
// ":String" for "()Ljava/lang/String;", "" for a primitive or void return.
std::string java_object_return(std::string_view descriptor);

// A Python file as function names show it, from the path's text alone (never
// looked up): below the last directory Python imports from (pythonX.Y,
// site-packages, dist-packages) with the directories between, as its module
// name has them ("http/client.py" beside "xmlrpc/client.py"); elsewhere by its
// base name ("app.py"), a package's __init__.py or __main__.py with its
// directory ("pkg/__init__.py").
std::string python_file_name(const std::string &path);
// Whether a Python code object's file is no file but code exec()'d or
// eval()'d under a made-up name ("<string>", "<stdin>", "<timeit-src>",
// "<doctest ...>"): not a frozen module ("<frozen os>"), not a path.
bool python_exec_file(const std::string &file);
// Whether a co_qualname names a lambda, comprehension or generator
// expression ("<lambda>", "main.<locals>.<lambda>"): all of one scope have
// that name, each its own code object (and identity, by its first line), so
// its name takes its first line too.
bool python_anonymous(const std::string &qualified);

// A Ruby class name as reports show it: a class or module without a name,
// which Ruby names by its address ("#<Class:0x00007f...>", a new one at each
// Class.new, Struct.new, Module.new), is "(anonymous class)" ("(anonymous
// module)", "(anonymous class)::Inner"); any other address after ":0x" in a
// name starting with '#' is left out ("#<Foo:0x>"), as its identity leaves it.
std::string ruby_class_name(const std::string &name);

// Namers of the names runtime probes capture (ProbeRole::format), one per
// kind of probe; their probes are described where they are used (presets.cpp,
// probe_roles.cpp).
struct ProbeRole;
FunctionName php_function_name(const usdtprof_name &captured, const ProbeRole &probe);
FunctionName ruby_method_name(const usdtprof_name &captured, const ProbeRole &probe);
FunctionName java_captured_name(const usdtprof_name &captured, const ProbeRole &probe);
FunctionName python_function_name(const usdtprof_name &captured, const ProbeRole &probe);
FunctionName sql_statement_name(const usdtprof_name &captured, const ProbeRole &probe);
// Our header's native probes with their name captured (the name string read
// in the kernel, not its address): __PRETTY_FUNCTION__ simplified.
FunctionName native_captured_name(const usdtprof_name &captured, const ProbeRole &probe);
// Custom pairs: the name argument's text, or "probe(N)" for an integer.
FunctionName string_name(const usdtprof_name &captured, const ProbeRole &probe);
FunctionName integer_name(const usdtprof_name &captured, const ProbeRole &probe);

} // namespace usdtprof
