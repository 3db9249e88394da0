#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "profile/distribution.h"
#include "profile/profile.h"
#include "profile/profile_set.h"
#include "usdtprof/bpf_shared.h"

using namespace usdtprof;

namespace {

Distribution dist_of(const std::vector<uint64_t> &durations)
{
	Distribution d;
	std::map<uint32_t, uint64_t> buckets;
	for (uint64_t ns : durations) {
		d.min_ns = d.empty() && buckets.empty() ? ns : std::min(d.min_ns, ns);
		d.max_ns = std::max(d.max_ns, ns);
		buckets[dist_bucket_of(ns)]++;
	}
	d.buckets.assign(buckets.begin(), buckets.end());
	return d;
}

Profile one_path(const Distribution &d, uint64_t calls)
{
	Profile p;
	p.functions = {"work"};
	PathNode n;
	n.pid = 42;
	n.calls = calls;
	n.self_ns = n.total_ns = 1000;
	n.dist = d;
	p.nodes.push_back(n);
	p.distributions = true;
	return p;
}

} // namespace

TEST_CASE("distribution buckets: the highest set bit, as the kernel's usdtprof_dist_bucket", "[distribution]")
{
	static_assert(kDistBuckets == USDTPROF_DIST_BUCKETS);
	CHECK(dist_bucket_of(0) == 0);
	CHECK(dist_bucket_of(1) == 0);
	CHECK(dist_bucket_of(2) == 1);
	CHECK(dist_bucket_of(3) == 1);
	CHECK(dist_bucket_of(100'000) == 16); // 100 us in [65536, 131072)
	CHECK(dist_bucket_of(1'000'000) == 19); // 1 ms in [524288, 1048576)
	CHECK(dist_bucket_of(uint64_t(1) << 39) == 39);
	CHECK(dist_bucket_of(UINT64_MAX) == 39); // the last bucket holds the rest
	for (uint32_t b = 1; b < kDistBuckets; b++) {
		CHECK(dist_bucket_of(dist_bucket_low(b)) == b);
		CHECK(dist_bucket_of(dist_bucket_high(b) - 1) == std::min(b, kDistBuckets - 1));
		CHECK(dist_bucket_low(b) == dist_bucket_high(b - 1));
	}
}

TEST_CASE("distribution quantiles: in the right bucket, never outside min and max", "[distribution]")
{
	std::vector<uint64_t> ds;
	for (int i = 0; i < 1000; i++)
		ds.push_back(i % 10 == 9 ? 1'000'000 + i : 100'000 + i);
	Distribution d = dist_of(ds);
	REQUIRE(bucket_count(d.buckets) == 1000);
	CHECK(dist_bucket_of(dist_quantile(d, 0.5)) == 16);
	CHECK(dist_bucket_of(dist_quantile(d, 0.9)) == 16); // the 900th is the last fast one
	CHECK(dist_bucket_of(dist_quantile(d, 0.91)) == 19);
	CHECK(dist_bucket_of(dist_quantile(d, 0.99)) == 19);
	CHECK(dist_quantile(d, 0) >= d.min_ns);
	CHECK(dist_quantile(d, 1) == d.max_ns);
	// One value: every quantile is it.
	Distribution one = dist_of({123'456});
	for (double q : {0.0, 0.5, 0.99, 1.0})
		CHECK(dist_quantile(one, q) == 123'456);
	CHECK(dist_quantile(Distribution{}, 0.5) == 0);
}

TEST_CASE("distributions merge: histograms add, min of mins, max of maxes", "[distribution]")
{
	Distribution a = dist_of({100, 300, 5000}), b = dist_of({50, 310, 1'000'000}), none;
	Distribution m = a;
	add_distribution(m, b);
	CHECK(m.min_ns == 50);
	CHECK(m.max_ns == 1'000'000);
	CHECK(m.buckets == dist_of({100, 300, 5000, 50, 310, 1'000'000}).buckets);
	// An empty one changes nothing, and adds into nothing as itself.
	Distribution m2 = m;
	add_distribution(m2, none);
	CHECK(m2.buckets == m.buckets);
	CHECK(m2.min_ns == m.min_ns);
	add_distribution(none, a);
	CHECK(none.min_ns == a.min_ns);
	CHECK(none.max_ns == a.max_ns);
	CHECK(none.buckets == a.buckets);

	// Profiles merged: the same path's distributions add.
	Profile merged = merge_profiles({one_path(a, 3), one_path(b, 3)}, true);
	REQUIRE(merged.nodes.size() == 1);
	CHECK(merged.distributions);
	CHECK(merged.nodes[0].dist.buckets == m.buckets);
	CHECK(merged.nodes[0].dist.min_ns == 50);
	CHECK(merged.nodes[0].dist.max_ns == 1'000'000);
	// With a profile of an older usdtprof (no distributions): its calls add, its durations are unknown.
	Profile old = one_path(Distribution{}, 5);
	old.distributions = false;
	Profile mixed = merge_profiles({one_path(a, 3), old}, true);
	CHECK(mixed.distributions);
	CHECK(mixed.nodes[0].calls == 8);
	CHECK(mixed.nodes[0].dist.buckets == a.buckets);
}

TEST_CASE("profile file: distributions after the nodes (version 2), older files without them load", "[distribution]")
{
	Profile p = one_path(dist_of({100, 300, 5000}), 3);
	p.nodes.push_back(p.nodes[0]);
	p.nodes[1].parent = 0;
	p.nodes[1].dist = {}; // a path with no timed call
	p.nodes.push_back(p.nodes[0]);
	p.nodes[2].parent = 1;
	p.nodes[2].dist = dist_of({7, 1ull << 45});
	p.nodes[2].self_ns = 0;
	p.nodes[0].total_ns = p.nodes[1].total_ns = 2000;
	std::string bytes = serialize_profile(p);
	auto back = parse_profile(bytes);
	REQUIRE(back);
	CHECK(back->distributions);
	REQUIRE(back->nodes.size() == 3);
	for (size_t i = 0; i < 3; i++) {
		CHECK(back->nodes[i].dist.min_ns == p.nodes[i].dist.min_ns);
		CHECK(back->nodes[i].dist.max_ns == p.nodes[i].dist.max_ns);
		CHECK(back->nodes[i].dist.buckets == p.nodes[i].dist.buckets);
	}
	CHECK(serialize_profile(*back) == bytes);

	// Without them (an older usdtprof's file): it loads, with none.
	Profile old = p;
	old.distributions = false;
	auto loaded = parse_profile(serialize_profile(old));
	REQUIRE(loaded);
	CHECK_FALSE(loaded->distributions);
	for (const PathNode &n : loaded->nodes)
		CHECK(n.dist.empty());

	// More durations than calls is corrupt.
	Profile bad = one_path(dist_of({1, 2, 3, 4}), 3);
	auto rejected = parse_profile(serialize_profile(bad));
	REQUIRE_FALSE(rejected);
	CHECK(rejected.error().message.find("distributions[0].buckets: more durations than calls") != std::string::npos);
}

namespace {

// min <= p50 <= p99 <= max, the count kept, every bucket between min's and max's.
void check_shifted(const Distribution &d, uint64_t count)
{
	CHECK(bucket_count(d.buckets) == count);
	CHECK(d.min_ns <= dist_quantile(d, 0.5));
	CHECK(dist_quantile(d, 0.5) <= dist_quantile(d, 0.99));
	CHECK(dist_quantile(d, 0.99) <= d.max_ns);
	for (const auto &[b, n] : d.buckets) {
		CHECK(b >= dist_bucket_of(d.min_ns));
		CHECK(b <= dist_bucket_of(d.max_ns));
		CHECK(n > 0);
	}
}

} // namespace

TEST_CASE("distributions shift down: min and max exactly, counts kept, never below 0", "[distribution][compensation]")
{
	SECTION("one call moves whole, to its exact duration")
	{
		Distribution d = dist_of({5'010'000});
		shift_down(d, 2'610'000);
		CHECK(d.min_ns == 2'400'000);
		CHECK(d.max_ns == 2'400'000);
		CHECK(d.buckets == Buckets{{dist_bucket_of(2'400'000), 1}});
		CHECK(dist_quantile(d, 0.5) == 2'400'000);
		CHECK(dist_quantile(d, 0.99) == 2'400'000);
	}
	SECTION("many calls: spread over the buckets their values land in")
	{
		std::vector<uint64_t> ns = {100, 1000, 1500, 3000, 3100, 3900, 10000, 20000, 70000};
		for (uint64_t by : {0, 1, 99, 100, 101, 700, 2500, 9999, 30000}) {
			Distribution d = dist_of(ns);
			shift_down(d, by);
			CHECK(d.min_ns == (ns.front() > by ? ns.front() - by : 0));
			CHECK(d.max_ns == ns.back() - by);
			check_shifted(d, ns.size());
		}
		// A bucket's values are taken as uniform over its part within min..max:
		// [2048, 4095] shifted by 2048 is [0, 2047]: half of 4 in [1024, 2048), a
		// quarter in [512, 1024), the last by the largest remainder ([256, 512)'s).
		Distribution d{.min_ns = 2048, .max_ns = 4095, .buckets = {{11, 4}}};
		shift_down(d, 2048);
		CHECK(d.buckets == Buckets{{8, 1}, {9, 1}, {10, 2}});
	}
	SECTION("durations shorter than the shift are 0")
	{
		Distribution d = dist_of({300, 400, 900});
		shift_down(d, 1000);
		CHECK(d.min_ns == 0);
		CHECK(d.max_ns == 0);
		CHECK(d.buckets == Buckets{{0, 3}});
		check_shifted(d, 3);
	}
	SECTION("the last bucket holds all above its low")
	{
		uint64_t big = uint64_t(1) << 41;
		Distribution d = dist_of({big, big + 5000});
		shift_down(d, 1000);
		CHECK(d.max_ns == big + 4000);
		check_shifted(d, 2);
	}
	SECTION("empty stays empty")
	{
		Distribution d;
		shift_down(d, 1000);
		CHECK(d.empty());
	}
}
