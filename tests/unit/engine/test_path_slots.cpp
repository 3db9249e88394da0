#include <catch2/catch.hpp>

#include "engine/path_slots.h"

using namespace usdtprof;

TEST_CASE("path_chunks_wanted: two chunks ahead of the slots taken, or a quarter more, within the table")
{
	constexpr uint64_t chunk = USDTPROF_PATH_CHUNK;
	// An empty table starts with room for two chunks' worth of new paths.
	REQUIRE(path_chunks_wanted(0, 128) == 2);
	REQUIRE(path_chunks_wanted(1, 128) == 3);
	REQUIRE(path_chunks_wanted(chunk, 128) == 3);
	// Large: a quarter more, so a fast fill is met by larger steps.
	REQUIRE(path_chunks_wanted(40 * chunk, 128) == 50);
	REQUIRE(path_chunks_wanted(40 * chunk + 1, 128) == 51);
	// Never beyond what --max-paths sized.
	REQUIRE(path_chunks_wanted(0, 1) == 1);
	REQUIRE(path_chunks_wanted(200 * chunk, 128) == 128);
	// A million paths in the default table (2^20: 128 chunks).
	REQUIRE(path_chunks_wanted(1000000, 128) == 128);
}
