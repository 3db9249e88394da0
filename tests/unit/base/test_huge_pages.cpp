#include <catch2/catch.hpp>
#include <utility>

#include "base/huge_pages.h"

using namespace usdtprof;

TEST_CASE("mapped array: zeroed, written and read, moved without a copy, empty when size 0")
{
	// 6 MiB: several pages of its own mapping.
	const size_t n = (6u << 20) / sizeof(uint64_t);
	MappedArray<uint64_t> a(n);
	REQUIRE(a.size() == n);
	REQUIRE(a[0] == 0);
	REQUIRE(a[n / 2] == 0);
	REQUIRE(a[n - 1] == 0);
	a[n - 1] = 42;
	const uint64_t *where = &a[n - 1];
	MappedArray<uint64_t> b(std::move(a));
	REQUIRE(a.size() == 0);
	REQUIRE(b.size() == n);
	REQUIRE(&b[n - 1] == where);
	REQUIRE(b[n - 1] == 42);
	MappedArray<uint64_t> c(3);
	c[2] = 7;
	c = std::move(b); // c's own mapping is given back
	REQUIRE(c.size() == n);
	REQUIRE(c[n - 1] == 42);
	MappedArray<uint32_t> none(0);
	REQUIRE(none.size() == 0);
}
