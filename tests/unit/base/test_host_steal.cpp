#include <catch2/catch.hpp>

#include "base/host_steal.h"

using namespace usdtprof;

TEST_CASE("host steal: the 8th field of /proc/stat's cpu line, in ns", "[steal]")
{
	const std::string stat = "cpu  2831539 2584 646381 920278 6272 0 2551 53288 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
	CHECK(parse_host_steal_ns(stat, 100) == 53288ull * 10'000'000);
	CHECK(parse_host_steal_ns(stat, 1000) == 53288ull * 1'000'000);
	CHECK_FALSE(parse_host_steal_ns("cpu0 1 2 3 4 5 6 7 8\n", 100)); // not the sum line
	CHECK_FALSE(parse_host_steal_ns("cpu  1 2 3 4 5 6 7\n", 100));   // a kernel without steal
	CHECK_FALSE(parse_host_steal_ns(stat, 0));
	CHECK(host_steal_ns().has_value()); // this machine's own
}
