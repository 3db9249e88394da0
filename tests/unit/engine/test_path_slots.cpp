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

TEST_CASE("path_grow_at: the first slots taken at which the table wants another chunk")
{
	constexpr uint32_t chunk = USDTPROF_PATH_CHUNK;
	for (uint32_t most : {1u, 2u, 3u, 8u, 128u, 1024u})
		for (uint32_t chunks = 1; chunks <= most; chunks++) {
			INFO("most " << most << ", chunks " << chunks);
			uint32_t at = path_grow_at(chunks, most);
			if (chunks == most) {
				// A table with all its chunks wakes no one.
				REQUIRE(at == 0);
				continue;
			}
			REQUIRE(at > 0);
			REQUIRE(path_chunks_wanted(at, most) > chunks);
			// (A table short already at 0 taken is woken at the first.)
			REQUIRE((at == 1 || path_chunks_wanted(at - 1, most) <= chunks));
		}
	// Two chunks ahead: the third chunk is wanted at the first slot, the
	// fourth once a chunk's worth is taken.
	REQUIRE(path_grow_at(2, 128) == 1);
	REQUIRE(path_grow_at(3, 128) == chunk + 1);
}
