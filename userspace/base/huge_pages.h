// Large arrays in transparent huge pages. At a million call paths the
// report's arrays are tens of MB each, and first touching them, 4 KiB page
// by page, cost more than the work done in them (measured: 256 MB touched in
// 0.9 s of CPU in 4 KiB pages, 0.3 s in 2 MiB pages, on this host, whose THP
// mode is "madvise": a program has to ask). The call paths read from the
// kernel go where fresh memory is cheaper on the host (reserve_fresh).
#pragma once

#include <cstddef>
#include <new>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace usdtprof {

// Asks for huge pages for the whole 2 MiB pages inside [data, data + bytes);
// nothing below 4 MiB. Best effort: a refusal changes nothing.
void advise_huge_pages(const void *data, size_t bytes);

// v.reserve(n), the reserved memory advised, before anything touches it.
template <class T> void reserve_huge(std::vector<T> &v, size_t n)
{
	v.reserve(n);
	advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// Whether memory touched for the first time is cheaper in huge pages on this
// host; measured once per process (the first call): what a first write to a
// 4 KiB page costs, over 64 pages (~0.1-0.7 ms). Hosts differ by ~10x:
// - a KVM guest whose host takes back the 2 MiB blocks it frees (free page
//   reporting) faults a 4 KiB page in ~1.5 us, a huge page of reported
//   memory in up to ~10 ms (~20 us per 4 KiB of it);
// - a guest of shadow page tables (PVM) traps every first touch of a 4 KiB
//   page to its hypervisor: ~11 us each, 0.7 s per 256 MB, where its huge
//   pages cost 0.02-0.5 s (docs/benchmarks.md, "Fresh memory, by host").
// Above 4 us a page, huge pages. USDTPROF_FRESH_PAGES=huge or small decides
// instead (the bench compares the two in one build).
bool fresh_memory_in_huge_pages();
// The choice itself: forced (USDTPROF_FRESH_PAGES, may be null) or by what a
// first write to a 4 KiB page cost, ns.
bool fresh_pages_huge(const char *forced, int64_t small_page_fault_ns);

// v.reserve(n) for the arrays a record's stop or a monitor interval fills
// once, in fresh memory, with the kernel's call paths (~190 MB at a
// million): advised as fresh_memory_in_huge_pages says, its whole 2 MiB
// pages past the first 512 KiB, so that a small recording's arrays stay in 4 KiB pages.
void advise_fresh(const void *data, size_t bytes);
template <class T> void reserve_fresh(std::vector<T> &v, size_t n)
{
	v.reserve(n);
	advise_fresh(v.data(), v.capacity() * sizeof(T));
}

// std::vector<T>(n, value), reserved as reserve_fresh.
template <class T> std::vector<T> fresh_vector(size_t n, const T &value = T())
{
	std::vector<T> v;
	reserve_fresh(v, n);
	v.resize(n, value);
	return v;
}

// std::vector<T>(n, value) in advised memory.
template <class T> std::vector<T> huge_vector(size_t n, const T &value = T())
{
	std::vector<T> v;
	reserve_huge(v, n);
	v.resize(n, value);
	return v;
}

// An array of n zero-initialised T in its own anonymous mapping, advised as
// reserve_fresh (its users, IdIndex, index the kernel's paths read fresh),
// unmapped when destroyed: its memory goes back to the kernel then,
// whatever malloc would have done with it. A 24 MB index of a million paths
// freed by glibc landed in its heap (its mmap threshold grows with what is
// freed) and stayed resident beside the profile made after it; unmapped,
// its pages are the next allocation's first ones (docs/benchmarks.md, "What
// a monitor interval pays"). Pages are only touched when written: no fill.
void *map_zeroed(size_t bytes);           // nullptr when refused
void unmap(void *data, size_t bytes);

template <class T> class MappedArray {
	static_assert(std::is_trivially_copyable_v<T>, "zero bytes must be a valid T");

public:
	MappedArray() = default;
	explicit MappedArray(size_t n) : size_(n)
	{
		data_ = static_cast<T *>(map_zeroed(n * sizeof(T)));
		if (n && !data_)
			throw std::bad_alloc();
	}
	MappedArray(MappedArray &&o) noexcept
		: data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
	MappedArray &operator=(MappedArray &&o) noexcept
	{
		if (this != &o) {
			unmap(data_, size_ * sizeof(T));
			data_ = std::exchange(o.data_, nullptr);
			size_ = std::exchange(o.size_, 0);
		}
		return *this;
	}
	~MappedArray() { unmap(data_, size_ * sizeof(T)); }

	size_t size() const { return size_; }
	T &operator[](size_t i) { return data_[i]; }
	const T &operator[](size_t i) const { return data_[i]; }

private:
	T *data_ = nullptr;
	size_t size_ = 0;
};

} // namespace usdtprof
