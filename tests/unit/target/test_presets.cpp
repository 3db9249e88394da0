#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "target/naming.h"
#include "target/presets.h"

using namespace usdtprof;

namespace {

std::string env(std::initializer_list<const char *> entries)
{
	std::string out;
	for (const char *e : entries)
		out += std::string(e) + '\0';
	return out;
}

} // namespace

TEST_CASE("php: USE_ZEND_DTRACE is found wherever it stands in the environment", "[presets]")
{
	CHECK(php_dtrace_enabled(env({"USE_ZEND_DTRACE=1", "PATH=/bin", "HOME=/root"})));
	CHECK(php_dtrace_enabled(env({"PATH=/bin", "USE_ZEND_DTRACE=1", "HOME=/root"})));
	CHECK(php_dtrace_enabled(env({"PATH=/bin", "USE_ZEND_DTRACE=1"})));
	CHECK(php_dtrace_enabled(env({"USE_ZEND_DTRACE=1"})));
	// /proc/PID/environ of a process that rewrote its last entry may lack the final NUL.
	CHECK(php_dtrace_enabled(std::string("PATH=/bin\0USE_ZEND_DTRACE=1", 27)));
}

TEST_CASE("php: USE_ZEND_DTRACE counts as PHP reads it: the first entry, a non-zero integer", "[presets]")
{
	CHECK(php_dtrace_enabled(env({"USE_ZEND_DTRACE=2"})));
	CHECK_FALSE(php_dtrace_enabled(env({"USE_ZEND_DTRACE=0", "PATH=/bin"})));
	CHECK_FALSE(php_dtrace_enabled(env({"USE_ZEND_DTRACE=", "PATH=/bin"})));
	CHECK_FALSE(php_dtrace_enabled(env({"USE_ZEND_DTRACE=yes"})));
	CHECK_FALSE(php_dtrace_enabled(env({"USE_ZEND_DTRACE=0", "USE_ZEND_DTRACE=1"})));
	CHECK_FALSE(php_dtrace_enabled(env({"XUSE_ZEND_DTRACE=1", "USE_ZEND_DTRACE_X=1"})));
	CHECK_FALSE(php_dtrace_enabled(env({"PATH=/bin"})));
	CHECK_FALSE(php_dtrace_enabled(""));
}

TEST_CASE("java: methods are named with their parameters, overloads apart", "[presets]")
{
	CHECK(java_method_name("Srv", "over", "(I)V") == "Srv.over(int)");
	CHECK(java_method_name("Srv", "over", "(J)V") == "Srv.over(long)");
	CHECK(java_method_name("Srv", "over", "(Ljava/lang/String;)V") == "Srv.over(String)");
	CHECK(java_method_name("java/lang/Integer", "parseInt", "(Ljava/lang/String;I)I") ==
	      "java.lang.Integer.parseInt(String,int)");
	CHECK(java_method_name("Calls", "main", "([Ljava/lang/String;)V") == "Calls.main(String[])");
	CHECK(java_method_name("Calls$Counter", "<init>", "()V") == "Calls$Counter.<init>()");
	CHECK(java_parameters("([[IZBCSFD)V") == "(int[][],boolean,byte,char,short,float,double)");
	CHECK(java_parameters("(Ljava/util/Map$Entry;)V") == "(Map$Entry)");
	// Cut short by the name capture's bound: what was read, and "...".
	CHECK(java_parameters("(ILjava/lang/Str") == "(int,...)");
	CHECK(java_parameters("(II") == "(int,int,...)");
	CHECK(java_parameters("(") == "(...)");
	CHECK(java_parameters("") == "");
}

TEST_CASE("java: an object return type is named, so a bridge method is apart from the method it calls", "[presets]")
{
	// javac's bridge for Supplier<String> and the method it calls; a covariant override's bridge.
	CHECK(java_method_name("Name", "get", "()Ljava/lang/Object;") == "Name.get():Object");
	CHECK(java_method_name("Name", "get", "()Ljava/lang/String;") == "Name.get():String");
	CHECK(java_method_name("java/nio/ByteBuffer", "limit", "(I)Ljava/nio/Buffer;") ==
	      "java.nio.ByteBuffer.limit(int):Buffer");
	CHECK(java_method_name("A", "m", "()[I") == "A.m():int[]");
	CHECK(java_method_name("A", "m", "()[[Ljava/util/Map$Entry;") == "A.m():Map$Entry[][]");
	// Primitive and void return types are left out (they never tell methods apart).
	CHECK(java_method_name("A", "m", "()J") == "A.m()");
	CHECK(java_method_name("A", "m", "(I)V") == "A.m(int)");
	// Cut short: no return type, never a wrong one.
	CHECK(java_object_return("()Ljava/lang/Str") == "");
	CHECK(java_object_return("(I") == "");
	CHECK(java_object_return("()") == "");
	CHECK(java_object_return("") == "");
}

TEST_CASE("java: hidden classes (lambdas) are named without their address", "[presets]")
{
	CHECK(java_class_name("Srv$$Lambda$11+0x00007ff28c000c28") == "Srv$$Lambda$11");
	CHECK(java_class_name("java/lang/invoke/LambdaForm$MH+0x0000000800c01000") == "java.lang.invoke.LambdaForm$MH");
	CHECK(java_class_name("Srv$$Lambda$11/0x0000000800c01000") == "Srv$$Lambda$11");
	CHECK(java_method_name("Srv$$Lambda$11+0x00007ff28c000c28", "apply", "(Ljava/lang/Object;)Ljava/lang/Object;") ==
	      "Srv$$Lambda$11.apply(Object):Object");
	// Only an address at the end is cut.
	CHECK(java_class_name("a/b+0xyz") == "a.b+0xyz");
	CHECK(java_class_name("pkg/Plain") == "pkg.Plain");
}

TEST_CASE("java: a lambda's hidden class is named by the method it calls, the same whatever order lambdas were "
	  "made in", "[presets]")
{
	const std::string apply = ".apply(Object):Object", body0 = "Srv.lambda$main$0(Object):Object",
			  body1 = "Srv.lambda$main$1(Object):Object";
	// Two runs: two threads made the lambdas in either order, so the JVM numbered them either way.
	JavaLambdaNames first, second;
	first.add_call(7, "Srv$$Lambda$11" + apply, body0);
	first.add_call(7, "Srv$$Lambda$12" + apply, body1);
	second.add_call(9, "Srv$$Lambda$12" + apply, body0);
	second.add_call(9, "Srv$$Lambda$11" + apply, body1);
	CHECK(first.name(7, "Srv$$Lambda$11" + apply) == "Srv$$Lambda[lambda$main$0]" + apply);
	CHECK(second.name(9, "Srv$$Lambda$12" + apply) == "Srv$$Lambda[lambda$main$0]" + apply);
	CHECK(first.name(7, "Srv$$Lambda$12" + apply) == "Srv$$Lambda[lambda$main$1]" + apply);
	CHECK(second.name(9, "Srv$$Lambda$11" + apply) == "Srv$$Lambda[lambda$main$1]" + apply);
	// Its constructor, which calls Object.<init>() once, is named with its class.
	first.add_call(7, "Srv$$Lambda$11.<init>()", "java.lang.Object.<init>()");
	CHECK(first.name(7, "Srv$$Lambda$11.<init>()") == "Srv$$Lambda[lambda$main$0].<init>()");
	// Other names, and other processes' lambdas, as they are.
	CHECK(first.name(7, body0) == body0);
	CHECK(first.name(8, "Srv$$Lambda$11" + apply) == "Srv$$Lambda$11" + apply);
}

TEST_CASE("java: a method reference's hidden class is named by the method it names, boxing and class "
	  "initialisation left out", "[presets]")
{
	JavaLambdaNames lambdas;
	// Function<Integer,Integer> f = Srv::twice, twice(int) returning int: unboxed, called, boxed.
	for (const char *callee : {"java.lang.Integer.intValue()", "pkg.Srv.twice(int)", "java.lang.Integer.valueOf(int):Integer"})
		lambdas.add_call(7, "pkg.Srv$$Lambda$13.apply(Object):Object", callee);
	// ToIntFunction<String> f = String::length, and Foo::bar initialising Foo at its first call.
	lambdas.add_call(7, "pkg.Srv$$Lambda$14.applyAsInt(Object)", "java.lang.String.length()");
	lambdas.add_call(7, "pkg.Srv$$Lambda$15.run()", "pkg.Foo.<clinit>()");
	lambdas.add_call(7, "pkg.Srv$$Lambda$15.run()", "pkg.Foo.bar()");
	// IntFunction<Integer> f = Integer::valueOf: the conversion is the method named.
	lambdas.add_call(7, "pkg.Srv$$Lambda$16.apply(int):Object", "java.lang.Integer.valueOf(int):Integer");
	// A nested host class; its body's own class left out.
	lambdas.add_call(7, "Srv$Inner$$Lambda$17.run()", "Srv$Inner.lambda$go$0()");
	CHECK(lambdas.name(7, "pkg.Srv$$Lambda$13.apply(Object):Object") == "pkg.Srv$$Lambda[twice(int)].apply(Object):Object");
	CHECK(lambdas.name(7, "pkg.Srv$$Lambda$14.applyAsInt(Object)") ==
	      "pkg.Srv$$Lambda[java.lang.String.length()].applyAsInt(Object)");
	CHECK(lambdas.name(7, "pkg.Srv$$Lambda$15.run()") == "pkg.Srv$$Lambda[pkg.Foo.bar()].run()");
	CHECK(lambdas.name(7, "pkg.Srv$$Lambda$16.apply(int):Object") ==
	      "pkg.Srv$$Lambda[java.lang.Integer.valueOf(int):Integer].apply(int):Object");
	CHECK(lambdas.name(7, "Srv$Inner$$Lambda$17.run()") == "Srv$Inner$$Lambda[lambda$go$0].run()");
	// A bridge method of a hidden class that called nothing recorded is named with its class.
	CHECK(lambdas.name(7, "pkg.Srv$$Lambda$13.apply(Integer):Integer") ==
	      "pkg.Srv$$Lambda[twice(int)].apply(Integer):Integer");
}

TEST_CASE("java: two lambdas are never one name: two named alike are numbered in the JVM's order, one calling "
	  "several methods is named by all, one calling none keeps its number", "[presets]")
{
	JavaLambdaNames lambdas;
	// Two references to String::length in one class: one name would merge them, in this process;
	// numbered by the order the JVM made them (its numbers, not their text: 9 before 10).
	lambdas.add_call(7, "Srv$$Lambda$10.applyAsInt(Object)", "java.lang.String.length()");
	lambdas.add_call(7, "Srv$$Lambda$9.applyAsInt(Object)", "java.lang.String.length()");
	lambdas.add_call(8, "Srv$$Lambda$20.applyAsInt(Object)", "java.lang.String.length()");
	// Function<Integer,Integer> f = Integer::valueOf: two conversions, neither the one named.
	lambdas.add_call(7, "Srv$$Lambda$22.apply(Object):Object", "java.lang.Integer.valueOf(int):Integer");
	lambdas.add_call(7, "Srv$$Lambda$22.apply(Object):Object", "java.lang.Integer.intValue()");
	// Only an [other] frame (the path table was full) under it.
	lambdas.add_call(7, "Srv$$Lambda$23.run()", "[other]");
	CHECK(lambdas.name(7, "Srv$$Lambda$9.applyAsInt(Object)") ==
	      "Srv$$Lambda[java.lang.String.length()#1].applyAsInt(Object)");
	CHECK(lambdas.name(7, "Srv$$Lambda$10.applyAsInt(Object)") ==
	      "Srv$$Lambda[java.lang.String.length()#2].applyAsInt(Object)");
	CHECK(lambdas.name(8, "Srv$$Lambda$20.applyAsInt(Object)") ==
	      "Srv$$Lambda[java.lang.String.length()].applyAsInt(Object)");
	CHECK(lambdas.name(7, "Srv$$Lambda$22.apply(Object):Object") ==
	      "Srv$$Lambda[java.lang.Integer.intValue()+java.lang.Integer.valueOf(int):Integer].apply(Object):Object");
	CHECK(lambdas.name(7, "Srv$$Lambda$23.run()") == "Srv$$Lambda$23.run()");
	CHECK(lambdas.name(7, "Srv$$Lambda$24.run()") == "Srv$$Lambda$24.run()"); // no call recorded
	// JDK 21's classes, with no number: one name may be several lambdas, whose methods are not one's.
	lambdas.add_call(7, "Srv$$Lambda.run()", "Srv.lambda$main$0()");
	lambdas.add_call(7, "Srv$$Lambda.run()", "Srv.lambda$main$1()");
	CHECK(lambdas.name(7, "Srv$$Lambda.run()") == "Srv$$Lambda.run()");
	// A callee in a class whose name merely starts with the host's keeps its class.
	JavaLambdaNames other;
	other.add_call(7, "Srv$$Lambda$1.run()", "SrvX.lambda$go$0()");
	CHECK(other.name(7, "Srv$$Lambda$1.run()") == "Srv$$Lambda[SrvX.lambda$go$0()].run()");
	// A callee whose name would take the lambda's over the names' limit (two
	// such lambdas cut to one prefix would be one row): the number kept.
	JavaLambdaNames longer;
	const std::string near_limit = "a." + std::string(kMaxNameBytes - 10, 'x') + "()";
	const std::string short_one = "a." + std::string(kMaxNameBytes - 80, 'x') + "()";
	longer.add_call(7, "Srv$$Lambda$2.run()", near_limit);
	longer.add_call(7, "Srv$$Lambda$3.run()", short_one);
	CHECK(longer.name(7, "Srv$$Lambda$2.run()") == "Srv$$Lambda$2.run()");
	CHECK(longer.name(7, "Srv$$Lambda$3.run()") == "Srv$$Lambda[" + short_one + "].run()");
	CHECK(longer.name(7, "Srv$$Lambda$3.run()").size() <= kMaxNameBytes);
}

TEST_CASE("java: which names are a lambda's hidden class's methods", "[presets]")
{
	CHECK(JavaLambdaNames::is_lambda("Srv$$Lambda$11.apply(Object):Object"));
	CHECK(JavaLambdaNames::is_lambda("pkg.Srv$$Lambda.run()")); // JDK 21: no number
	CHECK(JavaLambdaNames::is_lambda("Srv$$Lambda$3.run"));	    // cut before its parameters
	CHECK_FALSE(JavaLambdaNames::is_lambda("Srv.lambda$main$0(int)"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("Srv$$LambdaX.run()"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("Srv$$Lambda$.run()"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("Srv$$Lambda$1x.run()"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("$$Lambda$1.run()"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("java.lang.invoke.LambdaForm$MH.invoke(Object)"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("Srv$$Lambda$1"));
	CHECK_FALSE(JavaLambdaNames::is_lambda("app.py:main.<locals>.<lambda>:12"));
}

TEST_CASE("presets: quirks are their rows' hooks; every row names its probes", "[presets]")
{
	for (const Preset &p : presets()) {
		CHECK(*p.name);
		CHECK(*p.summary);
		REQUIRE(p.roles);
		CHECK_FALSE(p.roles().empty());
	}
	const Preset *python = find_preset("python");
	REQUIRE(python);
	REQUIRE(python->wants_site);
	for (const ProbeRole &r : python->roles()) {
		CHECK(python->wants_site(r, "/usr/bin/python3.11"));
		// The line semaphore is held only in the 3.11 that needs it.
		CHECK(python->wants_site(r, "/usr/bin/python3.12") == !r.semaphore_only);
	}
	CHECK(std::string(find_preset("ruby")->script_extension) == ".rb");
	CHECK(std::string(find_preset("ruby")->repair_path) == kRubyRepairScript);
	CHECK(find_preset("native")->check == nullptr);
}

namespace {

usdtprof_name captured(std::initializer_list<std::pair<int, const char *>> texts,
		       std::initializer_list<std::pair<int, int64_t>> nums = {})
{
	usdtprof_name n{};
	for (const auto &[i, t] : texts)
		snprintf(n.text[i], USDTPROF_NAME_LEN, "%s", t);
	for (const auto &[i, v] : nums)
		n.num[i] = v;
	return n;
}

} // namespace

TEST_CASE("python: functions are named by their qualified name when it was read, by co_name otherwise", "[presets]")
{
	const ProbeRole role = usdtprof::find_preset("python")->roles().front();
	auto inner = python_function_name(captured({{0, "/srv/ctl.py"}, {1, "meth"}, {3, "K.Inner.meth"}}, {{2, 5}}), role);
	CHECK(inner.name == "ctl.py:K.Inner.meth");
	CHECK(inner.location == "/srv/ctl.py:5");
	CHECK(python_function_name(captured({{0, "/srv/ctl.py"}, {1, "meth"}}), role).name == "ctl.py:meth");
	// Both probes carry the derived identity, proved by the function name argument.
	for (const ProbeRole &r : usdtprof::find_preset("python")->roles())
		if (!r.semaphore_only) {
			CHECK(r.derived.used == 1);
			CHECK(r.derived.proof_arg < r.ident_args.size());
			CHECK(r.ident_args[r.derived.proof_arg] == 1);
		}
}

TEST_CASE("python: a package's __init__.py keeps its directory, a nested lambda or comprehension its line",
	  "[presets]")
{
	const ProbeRole role = usdtprof::find_preset("python")->roles().front();
	auto name = [&](const char *file, const char *qualified, int line) {
		return python_function_name(captured({{0, file}, {1, "x"}, {3, qualified}}, {{2, line}}), role).name;
	};
	// Module code of json and re, both "__init__.py:<module>" before: one imports the other.
	CHECK(name("/usr/lib/python3.11/json/__init__.py", "<module>", 1) == "json/__init__.py:<module>");
	CHECK(name("/usr/lib/python3.11/re/__init__.py", "<module>", 1) == "re/__init__.py:<module>");
	CHECK(name("/usr/lib/python3.11/json/__main__.py", "main", 3) == "json/__main__.py:main");
	CHECK(name("__init__.py", "f", 3) == "__init__.py:f");
	CHECK(name("/srv/app/json.py", "f", 3) == "json.py:f");
	CHECK(python_file_name("/__init__.py") == "__init__.py");
	CHECK(python_file_name("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>");
	// Two lambdas (comprehensions) of one function: one qualified name, two code objects.
	CHECK(name("/srv/lam.py", "main.<locals>.<lambda>", 9) == "lam.py:main.<locals>.<lambda>:9");
	CHECK(name("/srv/lam.py", "main.<locals>.<lambda>", 10) == "lam.py:main.<locals>.<lambda>:10");
	CHECK(name("/srv/lam.py", "K.<listcomp>", 4) == "lam.py:K.<listcomp>:4");
	CHECK(name("/srv/lam.py", "f.<locals>.<genexpr>", 4) == "lam.py:f.<locals>.<genexpr>:4");
	CHECK(name("/srv/lam.py", "f.<locals>.<dictcomp>", 4) == "lam.py:f.<locals>.<dictcomp>:4");
	CHECK(name("/srv/lam.py", "f.<locals>.<setcomp>", 4) == "lam.py:f.<locals>.<setcomp>:4");
	// At module level one string object for all (one identity): no line. Named functions: none.
	CHECK(name("/srv/lam.py", "<lambda>", 9) == "lam.py:<lambda>");
	CHECK(name("/srv/lam.py", "<listcomp>", 9) == "lam.py:<listcomp>");
	CHECK(name("/srv/lam.py", "main.<locals>.inner", 9) == "lam.py:main.<locals>.inner");
	CHECK(name("/srv/lam.py", "K.<lambdas>", 9) == "lam.py:K.<lambdas>");
	// Their ids hold their first line (co_firstlineno) where it was read: named by it, at module level too.
	auto first = [&](const char *qualified, int line, int first_line) {
		return python_function_name(captured({{0, "/srv/lam.py"}, {1, "x"}, {3, qualified}}, {{2, line}, {3, first_line}}),
					    role).name;
	};
	CHECK(first("<lambda>", 12, 12) == "lam.py:<lambda>:12");
	CHECK(first("<genexpr>", 14, 12) == "lam.py:<genexpr>:12"); // a generator's resume: its first line
	CHECK(first("f.<locals>.<genexpr>", 14, 12) == "lam.py:f.<locals>.<genexpr>:12");
	CHECK(first("f", 14, 12) == "lam.py:f");
	CHECK(python_function_name(captured({{0, "/srv/lam.py"}, {1, "x"}, {3, "<lambda>"}}, {{2, 12}, {3, 12}}), role)
		      .location == "/srv/lam.py:12");
	// The bare name (the qualified one unread) is one identity for all lambdas of a file: no line.
	CHECK(python_function_name(captured({{0, "/srv/lam.py"}, {1, "<lambda>"}}, {{2, 9}}), role).name ==
	      "lam.py:<lambda>");
}

// Code exec()'d or eval()'d under a made-up file name is keyed by its caller (num[1]): its name
// asks for the caller's (FunctionName::caller); a file's or frozen module's code, a function, never.
TEST_CASE("python: exec()'d module code is named from its caller, other code by itself", "[presets]")
{
	const ProbeRole role = usdtprof::find_preset("python")->roles().front();
	CHECK(role.parts.at(1).type == USDTPROF_PART_STR_CALLER);
	CHECK(role.derived.code_flags != 0);
	CHECK(role.derived.function_flags == 0x2); // CO_NEWLOCALS
	// The fields read in one piece lie within it.
	for (int32_t off : {role.derived.proof, role.derived.value, role.derived.first_line, role.derived.code_flags}) {
		CHECK(off >= role.derived.window);
		CHECK(off + 8 <= role.derived.window + USDTPROF_DERIVED_WINDOW);
	}
	auto caller = [&](const char *file, const char *qualified, int64_t id) {
		return python_function_name(captured({{0, file}, {1, qualified}, {3, qualified}}, {{1, id}, {2, 1}}), role)
			.caller;
	};
	CHECK(caller("<string>", "<module>", 42) == 42);
	CHECK(caller("<stdin>", "<module>", 42) == 42);
	CHECK(caller("<timeit-src>", "<module>", 42) == 42);
	CHECK(caller("<doctest t.txt[0]>", "<module>", 42) == 42);
	CHECK(caller("<string>", "<module>", 0) == 0);
	CHECK(caller("<frozen posixpath>", "<module>", 42) == 0);
	CHECK(caller("/usr/lib/python3.11/json/__init__.py", "<module>", 42) == 0);
	CHECK(caller("<string>", "K", 42) == 0);	 // a class body
	CHECK(caller("<string>", "__create_fn__", 42) == 0);
	CHECK(python_exec_file("<string>"));
	CHECK(!python_exec_file("<string"));
	CHECK(!python_exec_file("<frozen importlib._bootstrap>"));
	CHECK(!python_exec_file("/srv/<string>"));
	CHECK(python_function_name(captured({{0, "<string>"}, {1, "<module>"}, {3, "<module>"}}, {{1, 42}}), role).name ==
	      "<string>:<module>");
}

// http/client.py and xmlrpc/client.py were both client.py: a file keeps the directories below
// the directory Python imported it from, as its module name does, read from the path's text
// alone (usdtprof never looks a profiled process's path up).
TEST_CASE("python: a file keeps its directories below Python's import directory, another its base name",
	  "[presets]")
{
	CHECK(python_file_name("/usr/lib/python3.11/http/client.py") == "http/client.py");
	CHECK(python_file_name("/usr/lib/python3.11/xmlrpc/client.py") == "xmlrpc/client.py");
	CHECK(python_file_name("/usr/lib/python3.11/xml/etree/ElementTree.py") == "xml/etree/ElementTree.py");
	CHECK(python_file_name("/usr/lib/python3.11/json/__init__.py") == "json/__init__.py");
	CHECK(python_file_name("/usr/lib/python3.11/argparse.py") == "argparse.py");
	CHECK(python_file_name("/usr/lib/python3/dist-packages/yaml/reader.py") == "yaml/reader.py");
	CHECK(python_file_name("/srv/venv/lib/python3.11/site-packages/requests/api.py") == "requests/api.py");
	CHECK(python_file_name("/opt/python3/lib/python3.12/site-packages/a/b.py") == "a/b.py"); // the last one
	// Elsewhere: the base name, a package's __init__.py or __main__.py with its directory.
	CHECK(python_file_name("/srv/app/main.py") == "main.py");
	CHECK(python_file_name("/srv/app/pkg/mod.py") == "mod.py");
	CHECK(python_file_name("/srv/app/pkg/__init__.py") == "pkg/__init__.py");
	CHECK(python_file_name("/srv/app/pkg/__main__.py") == "pkg/__main__.py");
	CHECK(python_file_name("http/client.py") == "client.py");
	CHECK(python_file_name("pkg/__init__.py") == "pkg/__init__.py");
	CHECK(python_file_name("/__init__.py") == "__init__.py");
	CHECK(python_file_name("/srv/pythonic/x.py") == "x.py"); // no import directory
	CHECK(python_file_name("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>");
	const ProbeRole role = usdtprof::find_preset("python")->roles().front();
	const std::string xmlrpc = "/usr/lib/python3.11/xmlrpc/client.py";
	usdtprof_name n = captured({{0, xmlrpc.c_str()}, {1, "loads"}, {3, "loads"}}, {{2, 1020}});
	auto named = python_function_name(n, role);
	CHECK(named.name == "xmlrpc/client.py:loads");
	CHECK(named.location == xmlrpc + ":1020");
}

TEST_CASE("php: methods of anonymous classes are named by where they run", "[presets]")
{
	const ProbeRole role = usdtprof::find_preset("php")->roles().front();
	auto name = [&](const char *fn, const char *cls, int line) {
		return php_function_name(captured({{0, fn}, {1, "/srv/a.php"}, {3, cls}}, {{0, 6}, {2, line}}), role).name;
	};
	// PHP's probes read "class@anonymous" (its name's text ends in a NUL) for every one.
	CHECK(name("handle", "class@anonymous", 4) == "class@anonymous::handle:/srv/a.php:4");
	CHECK(name("handle", "class@anonymous", 5) == "class@anonymous::handle:/srv/a.php:5");
	CHECK(name("handle", "Foo\\Bar@anonymous", 5) == "Foo\\Bar@anonymous::handle:/srv/a.php:5");
	CHECK(name("{closure}", "class@anonymous", 7) == "class@anonymous::{closure:/srv/a.php:7}");
	CHECK(name("handle", "Foo", 4) == "Foo::handle");
	CHECK(name("handle", "anonymous", 4) == "anonymous::handle");
}

TEST_CASE("php: closures are named by where they run, other functions as PHP names them", "[presets]")
{
	const ProbeRole role = usdtprof::find_preset("php")->roles().front();
	auto closure = [&](const char *cls, int line) {
		return php_function_name(captured({{0, "{closure}"}, {1, "/srv/f.php"}, {3, cls}}, {{0, 9}, {2, line}}), role)
			.name;
	};
	CHECK(closure("", 12) == "{closure:/srv/f.php:12}");
	CHECK(closure("", 20) == "{closure:/srv/f.php:20}");
	CHECK(closure("Foo", 12) == "Foo::{closure:/srv/f.php:12}");
	CHECK(php_function_name(captured({{0, "run"}, {1, "/srv/f.php"}}, {{0, 3}, {2, 4}}), role).name == "run");
	// The preset's identity covers the file and the line, the same at entry and return; the
	// names it pins are forgotten at each request's start.
	for (const ProbeRole &r : usdtprof::find_preset("php")->roles()) {
		INFO(r.name);
		if (r.role == USDTPROF_ROLE_FORGET_NAMES) {
			CHECK(r.name == "request__startup");
			continue;
		}
		CHECK(r.ident_args == std::vector<unsigned>{0, 3, 1, 2});
		CHECK((r.content_mask & USDTPROF_CONTENT_PINNED));
		CHECK(r.names_freed_at == "request__startup");
	}
}

// Ruby names a class or module without a name by its address, a new one at every Class.new or
// Struct.new: the kernel keys it without the address (USDTPROF_CONTENT_ANON) and the report names
// it "(anonymous class)", so the methods of every such class are one function each.
TEST_CASE("ruby: anonymous classes and modules are named without their addresses", "[presets]")
{
	CHECK(ruby_class_name("Foo::Bar") == "Foo::Bar");
	CHECK(ruby_class_name("#<Class:0x00007fc5779bac28>") == "(anonymous class)");
	CHECK(ruby_class_name("#<Module:0x00007fc5779b9ff8>") == "(anonymous module)");
	CHECK(ruby_class_name("#<Class:0x00007fc5779bac28>::Inner") == "(anonymous class)::Inner");
	CHECK(ruby_class_name("#<Class:#<Class:0x00007fc5779bac28>>") == "#<Class:(anonymous class)>");
	CHECK(ruby_class_name("#<Class:Foo>") == "#<Class:Foo>"); // a singleton class of a named one
	CHECK(ruby_class_name("#<Foo:0x00007fc5779bac28>") == "#<Foo:0x>");
	CHECK(ruby_class_name("#<Class:0xzz>") == "#<Class:0xzz>"); // no address: kept
	CHECK(ruby_class_name("Foo:0x12") == "Foo:0x12");	       // not Ruby's notation: kept
	CHECK(ruby_class_name("") == "");
	const ProbeRole &method = usdtprof::find_preset("ruby")->roles().front();
	auto name = [&](const char *cls, int64_t verdict) {
		return ruby_method_name(captured({{0, cls}, {1, "call"}, {2, "/srv/u.rb"}}, {{0, verdict}, {3, 7}}), method)
			.name;
	};
	CHECK(name("#<Class:0x00007fc5779bac28>", USDTPROF_OWNER_CLASS) == "(anonymous class)#call");
	CHECK(name("#<Class:0x00007fc5779b5340>", USDTPROF_OWNER_SINGLETON) == "(anonymous class).call");
	for (const ProbeRole &r : usdtprof::find_preset("ruby")->roles()) {
		INFO(r.name);
		CHECK((r.content_mask & USDTPROF_CONTENT_ANON(0)) != 0); // the class, by content without its address
		CHECK((r.content_mask & 1) != 0);
		CHECK((r.content_mask & 2) == 0); // the method, an interned symbol, by its address
	}
}

TEST_CASE("ruby: a method proved a singleton method is Class.method, any other Class#method", "[presets]")
{
	const auto roles = usdtprof::find_preset("ruby")->roles();
	const ProbeRole &method = roles.front();
	auto name = [&](int64_t verdict) {
		return ruby_method_name(captured({{0, "Util"}, {1, "twice"}, {2, "/srv/u.rb"}}, {{0, verdict}, {3, 7}}),
					method);
	};
	CHECK(name(USDTPROF_OWNER_SINGLETON).name == "Util.twice");
	CHECK(name(USDTPROF_OWNER_CLASS).name == "Util#twice");
	CHECK(name(0).name == "Util#twice"); // unproved, or a C method's probe
	CHECK(name(USDTPROF_OWNER_SINGLETON).location == "/srv/u.rb:7");
	// Ruby methods' probes read the verdict, with the class it is about beside the identity's
	// arguments; C methods' too, where the site table of their build says where (below).
	for (const ProbeRole &r : roles) {
		INFO(r.name);
		bool ruby_method = !r.name.starts_with("c");
		CHECK(r.derived.used == (ruby_method ? 1u : 0u));
		CHECK(r.site_derived.empty() == ruby_method);
		CHECK(r.parts.front().type == USDTPROF_PART_STR_VERDICT);
		if (ruby_method) {
			CHECK(r.derived.kind == USDTPROF_DERIVED_OWNER);
			CHECK(r.derived.proof_arg >= r.ident_args.size());
			CHECK(r.derived.proof_arg < USDTPROF_MAX_IDENT_ARGS);
			CHECK(r.derived.from == USDTPROF_FROM_EC);
		}
		for (const SiteDerived &s : r.site_derived) {
			INFO(s.probe << " " << s.pc);
			if (!s.derived.used)
				continue;
			CHECK(s.derived.kind == USDTPROF_DERIVED_OWNER);
			CHECK(s.derived.proof_arg >= r.ident_args.size());
			CHECK(s.derived.proof_arg < USDTPROF_MAX_IDENT_ARGS);
		}
	}
}

namespace {

UsdtSite site(std::string provider, std::string name, uint64_t pc)
{
	UsdtSite s;
	s.provider = std::move(provider);
	s.name = std::move(name);
	s.pc = pc;
	return s;
}

} // namespace

TEST_CASE("ruby: C method sites take their build's per-site derived identity, only in that build", "[presets]")
{
	const auto roles = usdtprof::find_preset("ruby")->roles();
	const ProbeRole *entry = nullptr, *ret = nullptr;
	for (const ProbeRole &r : roles) {
		if (r.name == "cmethod__entry")
			entry = &r;
		if (r.name == "cmethod__return")
			ret = &r;
	}
	REQUIRE(entry);
	REQUIRE(ret);
	const auto &table = ruby31_cmethod_sites();
	REQUIRE(table.size() == 9);
	std::vector<UsdtSite> build = {site("ruby", "method__entry", 0x1000), site("ruby", "method__return", 0x2000)};
	for (const SiteDerived &r : table)
		build.push_back(site("ruby", std::string(r.probe), r.pc));
	// The build of the table: each site its row (vm_call_cfunc_with_frame's entry in %r14, its
	// inlined copy's return in the slot at %rsp, vm_dtrace's sites unproved).
	auto at = [&](const ProbeRole &role, const std::vector<UsdtSite> &sites, const char *name, uint64_t pc) {
		return site_derived(role, sites, site("ruby", name, pc));
	};
	usdtprof_derived d = at(*entry, build, "cmethod__entry", 0x249619);
	CHECK(d.used == 1);
	CHECK(d.reg == USDTPROF_REG_R14);
	CHECK(d.from == USDTPROF_FROM_ENTRY);
	d = at(*ret, build, "cmethod__return", 0x257f02);
	CHECK(d.used == 1);
	CHECK(d.reg == USDTPROF_REG_SP);
	CHECK(d.from == USDTPROF_FROM_SLOT_ENTRY);
	d = at(*ret, build, "cmethod__return", 0x2532ec);
	CHECK(d.from == USDTPROF_FROM_SLOT_EC);
	CHECK(d.slot == -0x150);
	CHECK(at(*ret, build, "cmethod__return", 0x249967).used == 0);
	CHECK(at(*entry, build, "cmethod__entry", 0x2499c8).used == 0);
	// A site the table lacks, in a build otherwise alike: another build, nothing used.
	std::vector<UsdtSite> other = build;
	other.push_back(site("ruby", "cmethod__return", 0x300000));
	CHECK(at(*entry, other, "cmethod__entry", 0x249619).used == 0);
	// A site moved, or one missing.
	other = build;
	other.back().pc += 16;
	CHECK(at(*entry, other, "cmethod__entry", 0x249619).used == 0);
	other = build;
	other.pop_back();
	CHECK(at(*entry, other, "cmethod__entry", 0x249619).used == 0);
	// Another provider's probes of the same names do not count.
	other = build;
	other.push_back(site("myapp", "cmethod__entry", 0x400000));
	CHECK(at(*entry, other, "cmethod__entry", 0x249619).used == 1);
	// Ruby methods' roles keep their one derived identity everywhere.
	CHECK(site_derived(roles.front(), other, site("ruby", "method__entry", 0x1000)).from == USDTPROF_FROM_EC);

	// The table is the installed build's, when Debian's 3.1.2 is installed (its first site there).
	const char *lib = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";
	if (!std::filesystem::exists(lib))
		return;
	auto sites = read_usdt_sites(lib);
	REQUIRE(sites);
	size_t used = 0, debian = 0;
	for (const UsdtSite &s : *sites) {
		if (s.provider != "ruby" || !s.name.starts_with("cmethod__"))
			continue;
		debian += s.pc == 0x249619;
		used += site_derived(s.name == "cmethod__entry" ? *entry : *ret, *sites, s).used;
	}
	if (debian)
		CHECK(used == 7);
}

TEST_CASE("postgres: a parallel worker's frames go under one naming its leader, no other process's",
	  "[presets]")
{
	auto label = [](std::vector<std::string> cmdline) {
		ProfileProcess p;
		p.pid = 7;
		p.comm = "postgres";
		p.cmdline = std::move(cmdline);
		return process_root_label(p);
	};
	CHECK(label({"postgres: parallel worker for PID 4242"}) == "[parallel worker for pid 4242]");
	CHECK(label({"postgres: parallel worker for PID 4242 ", "", ""}) == "[parallel worker for pid 4242]");
	CHECK(label({"postgres: main: parallel worker for PID 17"}) == "[parallel worker for pid 17]");
	CHECK(label({"postgres: postgres postgres [local] SELECT"}).empty());
	CHECK(label({"postgres: checkpointer "}).empty());
	CHECK(label({"/usr/lib/postgresql/15/bin/postgres", "-D", "/srv/pg"}).empty());
	CHECK(label({"python3", "parallel worker for PID 4242"}).empty());
	CHECK(label({}).empty());
	ProfileProcess backend, worker;
	backend.pid = 10;
	backend.cmdline = {"postgres: postgres postgres [local] SELECT"};
	worker.pid = 11;
	worker.cmdline = {"postgres: parallel worker for PID 10"};
	CHECK(process_root_labels({backend, worker}) == std::map<uint32_t, std::string>{{11, "[parallel worker for pid 10]"}});
}

TEST_CASE("the python preset says what holding python:line up costs; other probes nothing", "[presets]")
{
	const char *cost = held_semaphore_cost("python:line");
	REQUIRE(cost != nullptr);
	CHECK(std::string(cost).starts_with("CPython 3.11 traces every line it runs"));
	CHECK(held_semaphore_cost("python:function__entry") == nullptr);
	CHECK(held_semaphore_cost("x:y") == nullptr);
}
