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

uint64_t bucket_count(std::span<const BucketCount> buckets)
{
	uint64_t n = 0;
	for (const auto &b : buckets)
		n += b.second;
	return n;
}

namespace {

template <class Into> void merge_buckets(Into &into, std::span<const BucketCount> more)
{
	if (more.empty())
		return;
	if (into.empty()) { // a tree node's first path: most of them
		into.assign(more.begin(), more.end());
		return;
	}
	// On the stack when small (a path's histogram has kDistBuckets at most).
	BucketCount small[2 * kDistBuckets];
	std::vector<BucketCount> large;
	size_t most = into.size() + more.size();
	if (most > std::size(small))
		large.resize(most);
	BucketCount *merged = most > std::size(small) ? large.data() : small;
	size_t n = 0;
	auto a = into.begin(), b = more.begin();
	while (a != into.end() || b != more.end()) {
		bool from_a = b == more.end() || (a != into.end() && a->first <= b->first);
		const BucketCount &next = from_a ? *a++ : *b++;
		if (n && merged[n - 1].first == next.first)
			merged[n - 1].second += next.second;
		else
			merged[n++] = next;
	}
	into.assign(merged, merged + n);
}

} // namespace

void add_buckets(Buckets &into, std::span<const BucketCount> more) { merge_buckets(into, more); }

void add_buckets(std::vector<BucketCount> &into, std::span<const BucketCount> more) { merge_buckets(into, more); }

void add_distribution(Distribution &into, const Distribution &more)
{
	if (more.empty())
		return;
	into.min_ns = into.empty() ? more.min_ns : std::min(into.min_ns, more.min_ns);
	into.max_ns = std::max(into.max_ns, more.max_ns);
	add_buckets(into.buckets, more.buckets);
}

uint64_t DurationCut::operator()(uint64_t ns) const
{
	if (ns <= own_ns || keep_den == 0)
		return 0;
	if (keep_num == keep_den)
		return ns - own_ns;
	// Rounded, in 128 bits: a path called once keeps its compensated total to the ns.
	return uint64_t(((unsigned __int128)(ns - own_ns) * keep_num + keep_den / 2) / keep_den);
}

void shorten(Distribution &d, const DurationCut &cut)
{
	if (d.empty() || (cut.own_ns == 0 && cut.keep_num == cut.keep_den))
		return;
	std::vector<uint64_t> into(kDistBuckets, 0);
	for (const auto &[b, n] : d.buckets) {
		// The bucket's values within min..max (the last bucket holds all above its low).
		uint64_t lo = std::max(dist_bucket_low(b), d.min_ns);
		uint64_t hi = b + 1 >= kDistBuckets ? d.max_ns : std::min(dist_bucket_high(b) - 1, d.max_ns);
		if (hi < lo) // a histogram that disagrees with its extremes: keep the count at the bucket's edge
			hi = lo = std::clamp(lo, d.min_ns, std::max(d.min_ns, d.max_ns));
		uint64_t a = cut(lo), z = cut(hi);
		uint32_t first = dist_bucket_of(a), last = dist_bucket_of(z);
		if (first == last) {
			into[first] += n;
			continue;
		}
		// Shares of n by overlap with each target bucket, largest remainder first.
		double width = double(z - a + 1);
		std::vector<std::pair<double, uint32_t>> rest;
		uint64_t given = 0;
		for (uint32_t t = first; t <= last; t++) {
			uint64_t from = std::max(a, dist_bucket_low(t));
			uint64_t to = t + 1 >= kDistBuckets ? z : std::min(z, dist_bucket_high(t) - 1);
			double share = double(n) * double(to - from + 1) / width;
			uint64_t whole = uint64_t(share);
			into[t] += whole;
			given += whole;
			rest.push_back({share - double(whole), t});
		}
		std::stable_sort(rest.begin(), rest.end(), [](const auto &x, const auto &y) { return x.first > y.first; });
		for (size_t i = 0; given < n; i = (i + 1) % rest.size(), given++)
			into[rest[i].second]++;
	}
	d.min_ns = cut(d.min_ns);
	d.max_ns = cut(d.max_ns);
	d.buckets.clear();
	for (uint32_t b = 0; b < kDistBuckets; b++)
		if (into[b])
			d.buckets.emplace_back(b, into[b]);
}

uint64_t bucket_quantile(std::span<const BucketCount> buckets, uint64_t min_ns, uint64_t max_ns, double q,
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
