// The call-path table's totals in the kernel: slots in arrays of
// USDTPROF_PATH_CHUNK paths (bpf/maps.bpf.h, path_chunks), which a thread of
// this class adds ahead of the table's fill, read in batches, and freed for
// reuse through the free_slots ring (docs/design.md, "Call-path table").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "usdtprof/bpf_shared.h"

struct usdtprof_bpf;
struct ring_buffer;

namespace usdtprof {

// How many chunks the table should have once `made` slots have been taken:
// room for a quarter more, and at least two chunks' worth, ahead of them
// (what the programs can fill between two looks of the grower), within
// `most`. Pure (unit-tested).
uint32_t path_chunks_wanted(uint64_t made, uint32_t most);

// The slots taken at which a table of `chunks` wants another (the least
// `made` for which path_chunks_wanted exceeds chunks, at least 1): where the
// programs wake the grower. 0 when the table has all `most`. Pure (unit-tested).
uint32_t path_grow_at(uint32_t chunks, uint32_t most);

// A BPF map's kernel memory by the kernel's own accounting (the memlock line
// of its fdinfo, from its contents on kernels 6.4+), bytes.
uint64_t bpf_map_memlock(int fd);

class PathSlots {
public:
	// Before load: sizes the chunk array and the free ring for max_paths.
	static void size(usdtprof_bpf *skel, uint32_t max_paths);
	// After load: the first chunks, the ring mapped, the grower started.
	static Result<std::unique_ptr<PathSlots>> start(usdtprof_bpf *skel);
	~PathSlots();
	PathSlots(const PathSlots &) = delete;
	PathSlots &operator=(const PathSlots &) = delete;

	// Each slot holding a path (its id set), with its index: batched
	// (thousands per system call) or one slot at a time.
	using Visit = std::function<void(uint32_t slot, const usdtprof_path_stats &)>;
	void read(const Visit &visit, bool batched) const;
	// Makes slots whose paths have left the `paths` hash free again: makes
	// the slot numbers threads keep stale (slot_generation), waits until
	// no program can still be adding to them, zeroes them, and gives
	// them to the programs through the ring.
	void free(std::vector<uint32_t> slots);
	// Slots the programs have taken from the never-used ones.
	uint32_t made() const;
	// The chunks' and the ring's kernel memory (memlock), bytes.
	uint64_t kernel_bytes() const;

private:
	explicit PathSlots(usdtprof_bpf *skel) : skel_(skel) {}
	Result<void> add_chunks(uint32_t want);
	// The programs' wakes (grow_wake) and the stop, in one epoll.
	Result<void> open_wakes();
	void grow_until_stopped();
	// Sleeps until the programs' wake, a stop, or timeout_ms (-1: none).
	// False once stopping.
	bool wait_for_wake(int timeout_ms);
	uint32_t chunk_count() const;
	// What the programs can see of the chunks: the fds, copied under the lock.
	std::vector<int> chunk_fds() const;
	// Returns once every program that could hold a slot pointer has returned
	// (a replace in an array of maps waits for an RCU grace period).
	void wait_for_programs() const;

	usdtprof_bpf *skel_;
	uint32_t most_chunks_ = 0;
	mutable std::mutex mutex_;
	std::vector<UniqueFd> chunks_;
	uint32_t *ring_ = nullptr; // free_slots, mapped: a slot number each
	size_t ring_bytes_ = 0;
	uint32_t ring_size_ = 0;
	struct RingDeleter {
		void operator()(ring_buffer *rb) const;
	};
	std::unique_ptr<ring_buffer, RingDeleter> wakes_; // grow_wake
	UniqueFd stop_;                                  // an eventfd: written to stop the grower
	UniqueFd poll_;                                  // epoll of both
	std::thread grower_;
};

} // namespace usdtprof
