#include <catch2/catch.hpp>
#include <string>

#include "presets.h"

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
