// Durations per call path (issue 17): the kernel's log2 histogram of a
// path's inclusive call durations and their extremes, merged and read as
// quantiles. Spans (spans.h) share the histogram arithmetic with their own
// buckets.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <span>
#include <utility>
#include <vector>

namespace usdtprof {

// Buckets of a call path's durations (USDTPROF_DIST_BUCKETS): bucket b holds
// [2^b, 2^(b+1)) ns, bucket 0 also 0 ns, the last one all from 2^39 ns up.
inline constexpr uint32_t kDistBuckets = 40;

// A histogram bucket: its index, its count.
using BucketCount = std::pair<uint32_t, uint64_t>;

// Non-zero buckets of a call path's histogram, ascending: a vector that holds
// one bucket in itself, allocating only for more. A path's durations fall in
// one to three buckets, a path called once in one; at a million paths an
// allocation for each path's histogram, and again for each tree node's, was
// a fifth of `report`'s CPU and 64 MB (docs/design.md, "Large profiles").
class Buckets {
public:
	using value_type = BucketCount;
	using iterator = value_type *;
	using const_iterator = const value_type *;

	Buckets() = default;
	Buckets(std::initializer_list<value_type> init) { assign(init.begin(), init.end()); }
	Buckets(const Buckets &other) { assign(other.begin(), other.end()); }
	Buckets(Buckets &&other) noexcept { take(other); }
	Buckets &operator=(const Buckets &other)
	{
		if (this != &other)
			assign(other.begin(), other.end());
		return *this;
	}
	Buckets &operator=(Buckets &&other) noexcept
	{
		if (this != &other) {
			release();
			take(other);
		}
		return *this;
	}
	~Buckets() { release(); }

	template <class It> void assign(It first, It last)
	{
		clear();
		for (; first != last; ++first)
			push_back(value_type(first->first, first->second));
	}
	value_type *data() { return capacity_ > 1 ? heap_ : &one_; }
	const value_type *data() const { return capacity_ > 1 ? heap_ : &one_; }
	iterator begin() { return data(); }
	iterator end() { return data() + size_; }
	const_iterator begin() const { return data(); }
	const_iterator end() const { return data() + size_; }
	size_t size() const { return size_; }
	bool empty() const { return size_ == 0; }
	value_type &operator[](size_t i) { return data()[i]; }
	const value_type &operator[](size_t i) const { return data()[i]; }
	value_type &back() { return data()[size_ - 1]; }
	const value_type &back() const { return data()[size_ - 1]; }
	void clear() { size_ = 0; }
	void truncate(size_t n) { size_ = uint32_t(std::min<size_t>(n, size_)); } // the first n kept
	void reserve(size_t n)
	{
		if (n <= capacity_)
			return;
		auto *grown = new value_type[n];
		std::copy(begin(), end(), grown);
		uint32_t size = size_;
		release();
		heap_ = grown;
		size_ = size;
		capacity_ = uint32_t(n);
	}
	void push_back(const value_type &b)
	{
		if (size_ == capacity_)
			reserve(size_t(capacity_) * 2);
		data()[size_++] = b;
	}
	void emplace_back(uint32_t bucket, uint64_t count) { push_back(value_type(bucket, count)); }

	friend bool operator==(const Buckets &a, const Buckets &b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
	friend bool operator==(const Buckets &a, const std::vector<value_type> &b)
	{
		return std::equal(a.begin(), a.end(), b.begin(), b.end());
	}

private:
	// Back to empty, inline.
	void release()
	{
		if (capacity_ > 1) {
			delete[] heap_;
			new (&one_) value_type();
		}
		capacity_ = 1;
		size_ = 0;
	}
	// What other held, from this empty and inline; leaves other so.
	void take(Buckets &other)
	{
		if (other.capacity_ > 1) {
			heap_ = other.heap_;
			new (&other.one_) value_type();
		} else {
			one_ = other.one_;
		}
		size_ = other.size_;
		capacity_ = other.capacity_;
		other.capacity_ = 1;
		other.size_ = 0;
	}

	union {
		value_type one_{}; // the bucket, while capacity_ is 1
		value_type *heap_; // capacity_ buckets, when more
	};
	uint32_t size_ = 0, capacity_ = 1;
};


struct Distribution {
	uint64_t min_ns = 0, max_ns = 0; // of the timed calls; 0, 0 when none
	Buckets buckets;                 // log2 (kDistBuckets)
	bool empty() const { return buckets.empty(); }
};

uint32_t dist_bucket_of(uint64_t ns);
uint64_t dist_bucket_low(uint32_t bucket);
uint64_t dist_bucket_high(uint32_t bucket); // exclusive; the last bucket's: 2^40

// The calls a histogram counts.
uint64_t bucket_count(std::span<const BucketCount> buckets);
// Adds the counts of more into into, bucket by bucket (a path's histogram,
// or a span's: spans.h).
void add_buckets(Buckets &into, std::span<const BucketCount> more);
void add_buckets(std::vector<BucketCount> &into, std::span<const BucketCount> more);
// Histograms add up, minimum of minimums, maximum of maximums (of those that
// have timed calls).
void add_distribution(Distribution &into, const Distribution &more);
// How compensation shortens a path's durations (compensation.h): a duration
// ns becomes (ns - own_ns) * keep_num / keep_den, never below 0.
struct DurationCut {
	uint64_t own_ns = 0;
	uint64_t keep_num = 1, keep_den = 1;
	uint64_t operator()(uint64_t ns) const;
};
// Every duration d made cut(d). min and max move exactly; each bucket's count
// is spread over the buckets its values land in, as if they were uniform over
// the part of the bucket within min..max (the model quantiles already assume;
// the cut is linear, so they stay uniform), largest remainder first, so the
// count is kept and a bucket of one value moves whole.
void shorten(Distribution &d, const DurationCut &cut);
// Every duration made shorter by by_ns, never below 0.
inline void shift_down(Distribution &d, uint64_t by_ns) { shorten(d, DurationCut{.own_ns = by_ns}); }

// The duration below which a share q (0 to 1) of the counted durations
// fall, placed linearly in its bucket [low(b), high(b)), never outside
// [min_ns, max_ns]; 0 when nothing is counted. Exact to its bucket.
uint64_t bucket_quantile(std::span<const BucketCount> buckets, uint64_t min_ns, uint64_t max_ns, double q,
			 uint64_t (*low)(uint32_t), uint64_t (*high)(uint32_t));
inline uint64_t dist_quantile(const Distribution &d, double q)
{
	return bucket_quantile(d.buckets, d.min_ns, d.max_ns, q, dist_bucket_low, dist_bucket_high);
}

} // namespace usdtprof
