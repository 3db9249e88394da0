// A 64-bit id's position in an array, for a million ids built once: one
// open-addressed table of two flat arrays (linear probing), sized up front.
// std::unordered_map allocated a node per id and freed them one by one
// (add_call_paths at 1M call paths: a third of its time). The arrays are
// mapped apart (MappedArray): freed, they go back to the kernel at once.
#pragma once

#include <cstdint>

#include "base/huge_pages.h"

namespace usdtprof {

class IdIndex {
public:
	static constexpr uint32_t kNone = UINT32_MAX;

	// Room for n ids: at most half the slots used.
	explicit IdIndex(size_t n)
	{
		size_t slots = 16;
		while (slots < 2 * n)
			slots *= 2;
		mask_ = slots - 1;
		ids_ = MappedArray<uint64_t>(slots);
		at_ = MappedArray<uint32_t>(slots);
	}

	// Maps id to at (below kNone); an id given again keeps its last
	// position, as unordered_map's operator[] did. At most n distinct ids.
	void set(uint64_t id, uint32_t at)
	{
		size_t s = slot_of(id);
		ids_[s] = id;
		at_[s] = at + 1;
	}

	// id's position, kNone when it was never set.
	uint32_t find(uint64_t id) const { return at_[slot_of(id)] - 1; }

private:
	// The slot holding id, or the empty one where it would go.
	size_t slot_of(uint64_t id) const
	{
		// Ids are hashes or addresses: mixed (murmur3's finalizer) so that
		// neighbouring ones spread.
		uint64_t h = id;
		h ^= h >> 33;
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
		size_t s = size_t(h) & mask_;
		while (at_[s] != kEmpty && ids_[s] != id)
			s = (s + 1) & mask_;
		return s;
	}

	// A slot's position plus one: the mapping's zero pages are empty slots.
	static constexpr uint32_t kEmpty = 0;
	size_t mask_ = 0;
	MappedArray<uint64_t> ids_;
	MappedArray<uint32_t> at_;
};

} // namespace usdtprof
