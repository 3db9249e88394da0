#include <catch2/catch.hpp>
#include <random>
#include <unordered_map>

#include "base/id_index.h"

using namespace usdtprof;

TEST_CASE("id index: finds what was set, kNone for the rest, the last position of an id set twice")
{
	IdIndex index(4);
	REQUIRE(index.find(0) == IdIndex::kNone);
	index.set(7, 0);
	index.set(0, 1); // 0 is an id like any other
	index.set(7, 2);
	REQUIRE(index.find(7) == 2);
	REQUIRE(index.find(0) == 1);
	REQUIRE(index.find(8) == IdIndex::kNone);
}

TEST_CASE("id index: a full load of ids that collide in their low bits, checked against unordered_map")
{
	// Ids that differ only above bit 32 (addresses in one page, hashes'
	// high halves) and random ones, up to the room asked for.
	const size_t n = 50000;
	IdIndex index(n);
	std::unordered_map<uint64_t, uint32_t> want;
	std::mt19937_64 rng(16);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t id = i % 2 ? uint64_t(i) << 33 : rng();
		index.set(id, i);
		want[id] = i;
	}
	for (auto [id, at] : want)
		REQUIRE(index.find(id) == at);
	for (int i = 0; i < 1000; i++) {
		uint64_t id = rng();
		if (!want.count(id))
			REQUIRE(index.find(id) == IdIndex::kNone);
	}
}
