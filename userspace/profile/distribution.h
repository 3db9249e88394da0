// Durations per call path (issue 17): the kernel's log2 histogram of a
// path's inclusive call durations and their extremes, merged and read as
// quantiles. Spans (spans.h) share the histogram arithmetic with their own
// buckets.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace usdtprof {

// Non-zero buckets of a histogram: bucket index, count; ascending.
using Buckets = std::vector<std::pair<uint32_t, uint64_t>>;

// Buckets of a call path's durations (USDTPROF_DIST_BUCKETS): bucket b holds
// [2^b, 2^(b+1)) ns, bucket 0 also 0 ns, the last one all from 2^39 ns up.
inline constexpr uint32_t kDistBuckets = 40;

struct Distribution {
	uint64_t min_ns = 0, max_ns = 0; // of the timed calls; 0, 0 when none
	Buckets buckets;                 // log2 (kDistBuckets)
	bool empty() const { return buckets.empty(); }
};

uint32_t dist_bucket_of(uint64_t ns);
uint64_t dist_bucket_low(uint32_t bucket);
uint64_t dist_bucket_high(uint32_t bucket); // exclusive; the last bucket's: 2^40

// The calls a histogram counts.
uint64_t bucket_count(const Buckets &buckets);
// Adds the counts of more into into, bucket by bucket.
void add_buckets(Buckets &into, const Buckets &more);
// Histograms add up, minimum of minimums, maximum of maximums (of those that
// have timed calls).
void add_distribution(Distribution &into, const Distribution &more);
// Every duration made shorter by by_ns, never below 0 (overhead compensation:
// compensation.h). min and max move exactly; each bucket's count is spread
// over the buckets its values land in, as if they were uniform over the part
// of the bucket within min..max (the model quantiles already assume),
// largest remainder first, so the count is kept and a bucket of one value
// moves whole.
void shift_down(Distribution &d, uint64_t by_ns);

// The duration below which a share q (0 to 1) of the counted durations
// fall, placed linearly in its bucket [low(b), high(b)), never outside
// [min_ns, max_ns]; 0 when nothing is counted. Exact to its bucket.
uint64_t bucket_quantile(const Buckets &buckets, uint64_t min_ns, uint64_t max_ns, double q,
			 uint64_t (*low)(uint32_t), uint64_t (*high)(uint32_t));
inline uint64_t dist_quantile(const Distribution &d, double q)
{
	return bucket_quantile(d.buckets, d.min_ns, d.max_ns, q, dist_bucket_low, dist_bucket_high);
}

} // namespace usdtprof
