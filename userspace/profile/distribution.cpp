#include "profile/distribution.h"

#include <algorithm>
#include <iterator>

namespace usdtprof {

uint32_t dist_bucket_of(uint64_t ns)
{
	uint32_t b = 0;
	while (ns >>= 1)
		b++;
	return std::min(b, kDistBuckets - 1);
}

uint64_t dist_bucket_low(uint32_t bucket) { return bucket ? uint64_t(1) << bucket : 0; }

uint64_t dist_bucket_high(uint32_t bucket) { return uint64_t(1) << (std::min(bucket, kDistBuckets - 1) + 1); }

uint64_t bucket_count(const Buckets &buckets)
{
	uint64_t n = 0;
	for (const auto &b : buckets)
		n += b.second;
	return n;
}

void add_buckets(Buckets &into, const Buckets &more)
{
	if (more.empty())
		return;
	Buckets merged;
	merged.reserve(into.size() + more.size());
	std::merge(into.begin(), into.end(), more.begin(), more.end(), std::back_inserter(merged),
		   [](const auto &a, const auto &b) { return a.first < b.first; });
	into.clear();
	for (const auto &b : merged)
		if (!into.empty() && into.back().first == b.first)
			into.back().second += b.second;
		else
			into.push_back(b);
}

void add_distribution(Distribution &into, const Distribution &more)
{
	if (more.empty())
		return;
	into.min_ns = into.empty() ? more.min_ns : std::min(into.min_ns, more.min_ns);
	into.max_ns = std::max(into.max_ns, more.max_ns);
	add_buckets(into.buckets, more.buckets);
}

uint64_t bucket_quantile(const Buckets &buckets, uint64_t min_ns, uint64_t max_ns, double q,
			 uint64_t (*low)(uint32_t), uint64_t (*high)(uint32_t))
{
	uint64_t counted = bucket_count(buckets);
	if (!counted)
		return 0;
	// The rank-th smallest duration (from 1), placed linearly in its bucket.
	uint64_t rank = std::clamp<uint64_t>(uint64_t(q * double(counted) + 0.5), 1, counted), below = 0;
	for (const auto &[i, n] : buckets) {
		if (below + n >= rank) {
			uint64_t lo = low(i), hi = high(i);
			double at = double(rank - below) / double(n);
			// Within the bucket: its last duration at hi - 1, not at the next one's low.
			auto ns = std::min(uint64_t(double(lo) + at * double(hi - lo)), hi - 1);
			return std::clamp(ns, min_ns, std::max(min_ns, max_ns));
		}
		below += n;
	}
	return max_ns;
}

} // namespace usdtprof
