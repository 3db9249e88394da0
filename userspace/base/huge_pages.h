// Large arrays in transparent huge pages. At a million call paths the
// report's arrays are tens of MB each, and first touching them, 4 KiB page
// by page, cost more than the work done in them (measured: 256 MB touched in
// 0.9 s of CPU in 4 KiB pages, 0.3 s in 2 MiB pages, on this host, whose THP
// mode is "madvise": a program has to ask). Not for the call paths read from
// the kernel (reserve_fresh): a huge page of fresh memory is dearer here.
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

// v.reserve(n) in 4 KiB pages, not advised: for the arrays a record's stop
// or a monitor interval fills once, in fresh memory, with the kernel's call
// paths (~190 MB at a million). This host is a VM that reports free 2 MiB
// blocks back to its host, which then faults them in again on first touch:
// a huge page can only come from such a block, while 4 KiB pages come first
// from the guest's small free blocks, still backed. The first interval of a
// million new paths: 0.62-0.70 s of CPU in 4 KiB pages, 0.56-1.51 s in huge
// pages (docs/benchmarks.md, "Fresh memory in 4 KiB pages"). Where huge
// pages are backed, 4 KiB ones cost ~0.05 s more per 190 MB in faults.
template <class T> void reserve_fresh(std::vector<T> &v, size_t n)
{
	v.reserve(n);
}

// std::vector<T>(n, value) in advised memory.
template <class T> std::vector<T> huge_vector(size_t n, const T &value = T())
{
	std::vector<T> v;
	reserve_huge(v, n);
	v.resize(n, value);
	return v;
}

// An array of n zero-initialised T in its own anonymous mapping, in 4 KiB
// pages (as reserve_fresh: its users, IdIndex, index the kernel's paths
// read fresh), unmapped when destroyed: its memory goes back to the kernel then,
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
