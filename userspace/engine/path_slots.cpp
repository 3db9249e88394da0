#include "engine/path_slots.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <string>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "usdtprof.skel.h"

namespace usdtprof {

namespace {

// A chunk the kernel would not make is tried again this much later (the
// programs' wake came and went).
constexpr int kRetryMs = 1000;

uint32_t chunks_for(uint64_t slots)
{
	return uint32_t((slots + USDTPROF_PATH_CHUNK - 1) / USDTPROF_PATH_CHUNK);
}

std::string errno_text(int err)
{
	return strerror(err < 0 ? -err : err);
}

} // namespace

uint32_t path_chunks_wanted(uint64_t made, uint32_t most)
{
	uint64_t ahead = std::max<uint64_t>(2 * uint64_t(USDTPROF_PATH_CHUNK), made / 4);
	return uint32_t(std::min<uint64_t>(most, chunks_for(made + ahead)));
}

uint32_t path_grow_at(uint32_t chunks, uint32_t most)
{
	if (chunks >= most)
		return 0;
	// path_chunks_wanted grows with made, and exceeds chunks by
	// chunks * USDTPROF_PATH_CHUNK at the latest (two chunks ahead).
	uint64_t low = 0, high = uint64_t(chunks) * USDTPROF_PATH_CHUNK;
	while (low < high) {
		uint64_t mid = (low + high) / 2;
		if (path_chunks_wanted(mid, most) > chunks)
			high = mid;
		else
			low = mid + 1;
	}
	return uint32_t(std::max<uint64_t>(low, 1)); // 0 would wake no one
}

void PathSlots::size(usdtprof_bpf *skel, uint32_t max_paths)
{
	uint32_t chunks = std::max<uint32_t>(1, chunks_for(max_paths));
	bpf_map__set_max_entries(skel->maps.path_chunks, chunks);
	// The ring holds every slot there can be: it never wraps onto one not
	// yet taken. Two 4-byte numbers to each of its 8-byte elements.
	bpf_map__set_max_entries(skel->maps.free_slots, chunks * USDTPROF_PATH_CHUNK / 2);
	skel->rodata->free_ring = chunks * USDTPROF_PATH_CHUNK;
}

Result<std::unique_ptr<PathSlots>> PathSlots::start(usdtprof_bpf *skel)
{
	std::unique_ptr<PathSlots> slots(new PathSlots(skel));
	slots->most_chunks_ = bpf_map__max_entries(skel->maps.path_chunks);
	slots->ring_size_ = skel->rodata->free_ring;
	size_t page = size_t(sysconf(_SC_PAGESIZE));
	slots->ring_bytes_ = (size_t(slots->ring_size_) * sizeof(uint32_t) + page - 1) / page * page;
	void *ring = mmap(nullptr, slots->ring_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED,
			  bpf_map__fd(skel->maps.free_slots), 0);
	if (ring == MAP_FAILED)
		return Error{"cannot map the call-path table's free slots: " + errno_text(errno)};
	slots->ring_ = static_cast<uint32_t *>(ring);
	// As many as the first slot taken wants: fewer would wake the grower at
	// the first path of every recording (its calibration's, or the target's).
	if (auto r = slots->add_chunks(path_chunks_wanted(1, slots->most_chunks_)); !r)
		return r.error();
	if (auto r = slots->open_wakes(); !r)
		return r.error();
	slots->grower_ = std::thread([p = slots.get()] { p->grow_until_stopped(); });
	// Named, for top -H and ps -L (and the e2e test that it sleeps).
	pthread_setname_np(slots->grower_.native_handle(), "usdtprof-grow");
	return slots;
}

PathSlots::~PathSlots()
{
	if (grower_.joinable()) {
		uint64_t one = 1;
		(void)!write(stop_.get(), &one, sizeof(one));
		grower_.join();
	}
	if (ring_)
		munmap(ring_, ring_bytes_);
}

void PathSlots::RingDeleter::operator()(ring_buffer *rb) const
{
	ring_buffer__free(rb);
}

Result<void> PathSlots::open_wakes()
{
	auto ignore = [](void *, void *, size_t) { return 0; };
	wakes_.reset(ring_buffer__new(bpf_map__fd(skel_->maps.grow_wake), ignore, nullptr, nullptr));
	stop_ = UniqueFd(eventfd(0, EFD_CLOEXEC));
	poll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
	if (!wakes_ || stop_.get() < 0 || poll_.get() < 0)
		return Error{"cannot watch the call-path table's fill: " + errno_text(errno)};
	for (int fd : {ring_buffer__epoll_fd(wakes_.get()), stop_.get()}) {
		epoll_event e{};
		e.events = EPOLLIN;
		e.data.fd = fd;
		if (epoll_ctl(poll_.get(), EPOLL_CTL_ADD, fd, &e))
			return Error{"cannot watch the call-path table's fill: " + errno_text(errno)};
	}
	return {};
}

Result<void> PathSlots::add_chunks(uint32_t want)
{
	std::lock_guard lock(mutex_);
	int outer = bpf_map__fd(skel_->maps.path_chunks);
	while (chunks_.size() < std::min(want, most_chunks_)) {
		UniqueFd fd(bpf_map_create(BPF_MAP_TYPE_ARRAY, "path_chunk", sizeof(uint32_t),
					   sizeof(usdtprof_path_stats), USDTPROF_PATH_CHUNK, nullptr));
		if (fd.get() < 0)
			return Error{"cannot add to the call-path table: " + errno_text(errno)};
		uint32_t index = uint32_t(chunks_.size()), inner = uint32_t(fd.get());
		if (bpf_map_update_elem(outer, &index, &inner, BPF_ANY))
			return Error{"cannot add to the call-path table: " + errno_text(errno)};
		chunks_.push_back(std::move(fd));
		// Only once the chunk is in may the programs take its slots.
		__atomic_store_n(&skel_->bss->slots_ready, uint32_t(chunks_.size()) * USDTPROF_PATH_CHUNK,
				 __ATOMIC_RELEASE);
	}
	return {};
}

uint32_t PathSlots::chunk_count() const
{
	std::lock_guard lock(mutex_);
	return uint32_t(chunks_.size());
}

// Adds chunks when the slots taken want them, then sleeps until the programs
// take the slot where the table wants its next (grow_at): no look while the
// table's fill stays as it is.
void PathSlots::grow_until_stopped()
{
	for (;;) {
		bool added = true;
		if (path_chunks_wanted(made(), most_chunks_) > chunk_count())
			// A chunk the kernel will not make (its memory) leaves the
			// table as it is: new paths go to [other] children,
			// counted (agg_full, agg_late), until a later try.
			added = bool(add_chunks(path_chunks_wanted(made(), most_chunks_)));
		uint32_t at = path_grow_at(chunk_count(), most_chunks_);
		// Sequentially consistent, as the programs' compare-and-swap of
		// slots_made before their read of grow_at: one of the two sees
		// the other, so a slot taken meanwhile is seen here.
		__atomic_store_n(&skel_->bss->grow_at, at, __ATOMIC_SEQ_CST);
		if (added && at && __atomic_load_n(&skel_->bss->slots_made, __ATOMIC_SEQ_CST) >= at)
			continue;
		if (!wait_for_wake(added ? -1 : kRetryMs))
			return;
	}
}

bool PathSlots::wait_for_wake(int timeout_ms)
{
	epoll_event events[2];
	int n = epoll_wait(poll_.get(), events, 2, timeout_ms);
	for (int i = 0; i < n; i++)
		if (events[i].data.fd == stop_.get())
			return false;
	ring_buffer__consume(wakes_.get());
	return true;
}

std::vector<int> PathSlots::chunk_fds() const
{
	std::lock_guard lock(mutex_);
	uint32_t made = __atomic_load_n(&skel_->bss->slots_made, __ATOMIC_ACQUIRE);
	std::vector<int> fds;
	for (size_t i = 0; i < chunks_.size() && i < chunks_for(made); i++)
		fds.push_back(chunks_[i].get());
	return fds;
}

void PathSlots::read(const Visit &visit, bool batched) const
{
	std::vector<uint32_t> keys(USDTPROF_PATH_CHUNK);
	std::vector<usdtprof_path_stats> values(USDTPROF_PATH_CHUNK);
	std::vector<int> fds = chunk_fds();
	for (uint32_t c = 0; c < fds.size(); c++) {
		uint32_t base = c * USDTPROF_PATH_CHUNK, count = USDTPROF_PATH_CHUNK, out_batch = 0;
		// An array has every key: one call reads the whole chunk.
		bool whole = batched && (bpf_map_lookup_batch(fds[c], nullptr, &out_batch, keys.data(), values.data(),
							      &count, nullptr) == 0 ||
					 errno == ENOENT) && count == USDTPROF_PATH_CHUNK;
		if (whole) {
			for (uint32_t i = 0; i < count; i++)
				if (values[i].path)
					visit(base + keys[i], values[i]);
			continue;
		}
		for (uint32_t i = 0; i < USDTPROF_PATH_CHUNK; i++)
			if (bpf_map_lookup_elem(fds[c], &i, &values[0]) == 0 && values[0].path)
				visit(base + i, values[0]);
	}
}

void PathSlots::wait_for_programs() const
{
	// Replacing an array of maps' element makes the system call wait for a
	// grace period (the kernel's maybe_wait_bpf_programs): every program
	// that ran before it has returned. Chunk 0 replaced by itself.
	std::lock_guard lock(mutex_);
	uint32_t index = 0, inner = uint32_t(chunks_.front().get());
	bpf_map_update_elem(bpf_map__fd(skel_->maps.path_chunks), &index, &inner, BPF_ANY);
}

void PathSlots::free(std::vector<uint32_t> slots)
{
	if (slots.empty())
		return;
	// The paths are out of the hash: no program finds these slots any more,
	// but one that found them before may still be adding to them, and
	// threads keep slot numbers (a frame's, a path cache's): the new
	// generation makes every number kept before it a lookup again, and a
	// program that read the old one began before the wait below.
	__atomic_add_fetch(&skel_->bss->slot_generation, 1, __ATOMIC_SEQ_CST);
	wait_for_programs();
	std::sort(slots.begin(), slots.end());
	std::vector<int> fds;
	{
		std::lock_guard lock(mutex_);
		for (const UniqueFd &fd : chunks_)
			fds.push_back(fd.get());
	}
	std::vector<usdtprof_path_stats> zeros;
	for (size_t i = 0; i < slots.size();) {
		uint32_t chunk = slots[i] / USDTPROF_PATH_CHUNK;
		size_t end = i;
		std::vector<uint32_t> keys;
		for (; end < slots.size() && slots[end] / USDTPROF_PATH_CHUNK == chunk; end++)
			keys.push_back(slots[end] % USDTPROF_PATH_CHUNK);
		zeros.assign(keys.size(), usdtprof_path_stats{});
		uint32_t count = uint32_t(keys.size());
		if (chunk < fds.size() &&
		    bpf_map_update_batch(fds[chunk], keys.data(), zeros.data(), &count, nullptr) != 0)
			for (uint32_t k : keys)
				bpf_map_update_elem(fds[chunk], &k, &zeros[0], BPF_ANY);
		i = end;
	}
	// Entries first, then the count the programs take up to.
	uint64_t given = __atomic_load_n(&skel_->bss->free_given, __ATOMIC_RELAXED);
	for (uint32_t slot : slots)
		ring_[given++ % ring_size_] = slot;
	__atomic_store_n(&skel_->bss->free_given, given, __ATOMIC_RELEASE);
}

uint32_t PathSlots::made() const
{
	return __atomic_load_n(&skel_->bss->slots_made, __ATOMIC_ACQUIRE);
}

uint64_t bpf_map_memlock(int fd)
{
	FILE *f = fopen(("/proc/self/fdinfo/" + std::to_string(fd)).c_str(), "r");
	if (!f)
		return 0;
	unsigned long long bytes = 0;
	char line[256];
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "memlock: %llu", &bytes) == 1)
			break;
	fclose(f);
	return bytes;
}

uint64_t PathSlots::kernel_bytes() const
{
	uint64_t total = bpf_map_memlock(bpf_map__fd(skel_->maps.free_slots)) +
			 bpf_map_memlock(bpf_map__fd(skel_->maps.path_chunks));
	std::lock_guard lock(mutex_);
	for (const UniqueFd &fd : chunks_)
		total += bpf_map_memlock(fd.get());
	return total;
}

} // namespace usdtprof
