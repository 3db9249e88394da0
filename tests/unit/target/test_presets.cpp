#include <catch2/catch.hpp>
#include <string>

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

TEST_CASE("java: hidden classes (lambdas) are named without their address", "[presets]")
{
	CHECK(java_class_name("Srv$$Lambda$11+0x00007ff28c000c28") == "Srv$$Lambda$11");
	CHECK(java_class_name("java/lang/invoke/LambdaForm$MH+0x0000000800c01000") == "java.lang.invoke.LambdaForm$MH");
	CHECK(java_class_name("Srv$$Lambda$11/0x0000000800c01000") == "Srv$$Lambda$11");
	CHECK(java_method_name("Srv$$Lambda$11+0x00007ff28c000c28", "apply", "(Ljava/lang/Object;)Ljava/lang/Object;") ==
	      "Srv$$Lambda$11.apply(Object)");
	// Only an address at the end is cut.
	CHECK(java_class_name("a/b+0xyz") == "a.b+0xyz");
	CHECK(java_class_name("pkg/Plain") == "pkg.Plain");
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
	// The preset's identity covers the file and the line, the same at entry and return.
	for (const ProbeRole &r : usdtprof::find_preset("php")->roles())
		CHECK(r.ident_args == std::vector<unsigned>{0, 3, 1, 2});
}
