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

TEST_CASE("fresh pages: huge where a 4 KiB page's first write costs over 4 us, or as forced")
{
	CHECK(fresh_pages_huge(nullptr, 11'000));  // a shadow-paging guest (PVM)
	CHECK_FALSE(fresh_pages_huge(nullptr, 1'500)); // a KVM guest
	CHECK_FALSE(fresh_pages_huge(nullptr, 0));     // not measured
	CHECK(fresh_pages_huge("huge", 0));
	CHECK_FALSE(fresh_pages_huge("small", 11'000));
	CHECK(fresh_pages_huge("other", 11'000)); // not a choice: measured
}

TEST_CASE("fresh vector: n copies of the value, whatever pages it is in")
{
	const size_t n = (5u << 20) / sizeof(uint32_t); // past the 512 KiB head and a 2 MiB page
	std::vector<uint32_t> v = fresh_vector<uint32_t>(n, 7);
	REQUIRE(v.size() == n);
	CHECK(v.front() == 7);
	CHECK(v[n / 2] == 7);
	CHECK(v.back() == 7);
	CHECK(fresh_vector<uint64_t>(0).empty());
	std::vector<uint64_t> r;
	reserve_fresh(r, 3);
	CHECK(r.capacity() >= 3);
}
