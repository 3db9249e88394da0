// Function naming, in one place: what a function id, a captured probe name
// or a C++ __PRETTY_FUNCTION__ is called in every output. The probe roles
// (probe_roles.h, presets.cpp) point at the namers below; the recorder and
// the monitor resolve ids through function_name().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
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
// changes every run ("Srv$$Lambda$11+0x0000000800c01000" -> "Srv$$Lambda$11"; then
// renamed by what it calls: JavaLambdaNames).
std::string java_method_name(std::string_view cls, std::string_view method, std::string_view descriptor);
std::string java_class_name(std::string_view internal);
// A lambda's hidden class named by what it calls, not by the number the JVM
// gives it in the order lambdas are made (two threads making them, or any
// change in start-up order, swap the numbers between runs). A hidden class's
// method calls one method: the body javac made for a lambda expression
// (Srv.lambda$main$3) or the method a reference names (String::length),
// with at most boxing conversions and a class's initialisation beside it
// (its constructor calls Object.<init>(): not counted, but named alike).
//   Srv$$Lambda$11.apply(Object):Object -> Srv$$Lambda[lambda$main$3].apply(Object):Object
//   Srv$$Lambda$12.applyAsInt(Object)   -> Srv$$Lambda[java.lang.String.length()].applyAsInt(Object)
// the callee's class left out when it is the lambda's own, a javac body's
// parameters too (its name is unique in its class). A hidden class keeps its
// number when its methods call none or several methods, or when another of
// its process would get its name (two references to one method): two
// lambdas are never one row, one is never two within a profile.
class JavaLambdaNames {
public:
	// Whether name is a method of a lambda's hidden class as
	// java_method_name gives it ("pkg.Srv$$Lambda$11.apply(Object):Object").
	static bool is_lambda(std::string_view name);
	// A call, in process tgid, from a lambda's method (is_lambda) to callee.
	void add_call(uint32_t tgid, const std::string &lambda, const std::string &callee);
	// The name of a function of process tgid, once every call is added: a
	// lambda's method with its hidden class renamed; any other name as it is.
	std::string name(uint32_t tgid, const std::string &name);

private:
	void resolve();
	// (tgid, hidden class) -> the methods its methods call; then its new name
	// ("" to keep its own).
	std::map<std::pair<uint32_t, std::string>, std::set<std::string>> callees_;
	std::map<std::pair<uint32_t, std::string>, std::string> renamed_;
	bool resolved_ = false;
};

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
// "<doctest ...>"): not a frozen module ("<frozen os>"), not a path. The
// kernel side tells such files by their first 8 bytes alone (made_up_file in
// bpf/identity.bpf.h, which keys their code by its name's text too): change
// the two together.
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
