#include <catch2/catch.hpp>
#include <cstdio>

#include "engine/probes.h"
#include "target/presets.h"

using namespace usdtprof;

namespace {

usdtprof_name python_code(const char *file, const char *qualified, int64_t caller)
{
	usdtprof_name n{};
	snprintf(n.text[0], USDTPROF_NAME_LEN, "%s", file);
	snprintf(n.text[1], USDTPROF_NAME_LEN, "%s", qualified);
	snprintf(n.text[3], USDTPROF_NAME_LEN, "%s", qualified);
	n.num[1] = caller; // PART_STR_CALLER: the caller's id the code is keyed by
	n.num[2] = 1;
	n.num[3] = 1;
	return n;
}

} // namespace

// Every exec()'d string is "<string>:<module>" from line 1: the kernel keys such code by its
// caller's function id too, and the namer names it from that caller, callers' callers as well.
TEST_CASE("FunctionNamer: exec()'d Python code is named from its caller, at every depth", "[engine]")
{
	AttachedProbes attached;
	attached.spec_probes[0] = find_preset("python")->roles().front();
	std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> captured;
	const uint32_t pid = 7;
	captured[{pid, 100}] = python_code("<string>", "<module>", 0); // python -c: run by nobody
	captured[{pid, 101}] = python_code("<string>", "<module>", 100);
	captured[{pid, 102}] = python_code("<string>", "<module>", 101);
	captured[{pid, 200}] = python_code("/usr/lib/python3.11/collections/__init__.py", "namedtuple", 0);
	captured[{pid, 201}] = python_code("<string>", "<module>", 200);
	captured[{pid, 300}] = python_code("<timeit-src>", "<module>", 200);
	// A file's module code (keyed by the importer too) and a frozen module's: their own names.
	captured[{pid, 400}] = python_code("/usr/lib/python3.11/json/__init__.py", "<module>", 200);
	captured[{pid, 401}] = python_code("<frozen posixpath>", "<module>", 200);
	captured[{pid, 500}] = python_code("<string>", "<module>", 999); // caller's name never captured
	captured[{pid, 600}] = python_code("<string>", "<module>", 600); // ids colliding into a cycle
	TargetFiles files;
	FunctionNamer namer(attached, captured, {}, files);
	auto name = [&](uint64_t func) {
		Result<FunctionName> n = namer(pid, func);
		REQUIRE(n);
		CHECK(n->caller == 0);
		return n->name;
	};
	CHECK(name(100) == "<string>:<module>");
	CHECK(name(101) == "<string>:<module> from <string>:<module>");
	CHECK(name(102) == "<string>:<module> from <string>:<module> from <string>:<module>");
	CHECK(name(201) == "<string>:<module> from collections/__init__.py:namedtuple");
	CHECK(name(300) == "<timeit-src>:<module> from collections/__init__.py:namedtuple");
	CHECK(name(400) == "json/__init__.py:<module>");
	CHECK(name(401) == "<frozen posixpath>:<module>");
	CHECK(name(500) == "<string>:<module> from [unknown]");
	std::string cycle = name(600); // bounded: 32 callers, then unknown, within the name cap
	CHECK(cycle.size() <= kMaxNameBytes);
	CHECK(cycle.starts_with("<string>:<module> from <string>:<module> from "));
	// Another process's ids are its own.
	CHECK(!namer(pid + 1, 101));
}
