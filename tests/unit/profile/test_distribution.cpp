#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <map>

#include "profile/distribution.h"
#include "profile/profile.h"
#include "profile/profile_set.h"
#include "report/report.h"
#include "usdtprof/bpf_shared.h"
// The kernel's bucket arithmetic, plain C, compiled here as it is for BPF.
#include "../../../bpf/bits.bpf.h"

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
	p.nodes.push_back(n);
	p.distributions = true;
	p.dists.push_back(d);
	return p;
}

} // namespace

TEST_CASE("distribution buckets: the highest set bit, as the kernel's dist_bucket", "[distribution]")
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

TEST_CASE("the kernel's buckets (bpf/bits.bpf.h): the highest set bit of every width, as userspace reads it",
	  "[distribution]")
{
	std::vector<uint64_t> values{0, 1, 2, 3, UINT64_MAX};
	for (unsigned k = 1; k < 64; k++) {
		uint64_t p = uint64_t(1) << k;
		for (uint64_t v : {p - 1, p, p + 1, p | (p >> 1), p | (p - 1)})
			values.push_back(v);
	}
	for (uint64_t v : values) {
		INFO(v);
		CHECK(highest_set_bit(v) == (v ? std::bit_width(v) - 1 : 0));
		CHECK(dist_bucket(v) == dist_bucket_of(v));
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
	CHECK(merged.dists[0].buckets == m.buckets);
	CHECK(merged.dists[0].min_ns == 50);
	CHECK(merged.dists[0].max_ns == 1'000'000);
	// With a profile of an older usdtprof (no distributions): its calls add;
	// the merge has no durations, rather than those of 3 of its 8 calls.
	Profile old = one_path(Distribution{}, 5);
	old.distributions = false;
	Profile mixed = merge_profiles({one_path(a, 3), old}, true);
	CHECK_FALSE(mixed.distributions);
	CHECK(mixed.dists.empty());
	CHECK(mixed.nodes[0].calls == 8);
	CHECK(mixed.parts_without_durations == 1);
}

TEST_CASE("profile file: distributions after the nodes (version 2), older files without them load", "[distribution]")
{
	Profile p = one_path(dist_of({100, 300, 5000}), 3);
	p.nodes.push_back(p.nodes[0]);
	p.nodes[1].parent = 0;
	p.dists.push_back({}); // a path with no timed call
	p.nodes.push_back(p.nodes[0]);
	p.dists.push_back({});
	p.nodes[2].parent = 1;
	p.dists[2] = dist_of({7, 1ull << 45});
	p.nodes[2].self_ns = 0;
	p.nodes[0].total_ns = p.nodes[1].total_ns = 2000;
	std::string bytes = serialize_profile(p);
	auto back = parse_profile(bytes);
	REQUIRE(back);
	CHECK(back->distributions);
	REQUIRE(back->nodes.size() == 3);
	for (size_t i = 0; i < 3; i++) {
		CHECK(back->dists[i].min_ns == p.dists[i].min_ns);
		CHECK(back->dists[i].max_ns == p.dists[i].max_ns);
		CHECK(back->dists[i].buckets == p.dists[i].buckets);
	}
	CHECK(serialize_profile(*back) == bytes);

	// Without them (an older usdtprof's file): it loads, with none.
	Profile old = p;
	old.distributions = false;
	auto loaded = parse_profile(serialize_profile(old));
	REQUIRE(loaded);
	CHECK_FALSE(loaded->distributions);
	CHECK(loaded->dists.empty());
	for (size_t i = 0; i < loaded->nodes.size(); i++)
		CHECK(node_dist(*loaded, i).empty());

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

TEST_CASE("a histogram's buckets: one held inline, more on the heap, copied and moved whole", "[distribution]")
{
	static_assert(sizeof(Buckets) == sizeof(std::vector<BucketCount>));
	Buckets one{{3, 1}};
	REQUIRE(one.size() == 1);
	Buckets many = one;
	for (uint32_t b = 4; b < kDistBuckets; b++)
		many.emplace_back(b, b);
	REQUIRE(many.size() == kDistBuckets - 3);
	CHECK(many[0] == BucketCount{3, 1});
	CHECK(many.back() == BucketCount{kDistBuckets - 1, kDistBuckets - 1});
	CHECK(one.size() == 1); // the copy is its own
	Buckets copy = many, moved = std::move(copy);
	CHECK(moved == many);
	CHECK(copy.empty());
	copy = one;
	CHECK(copy == one);
	copy = std::move(moved);
	CHECK(copy == many);
	moved = Buckets{{1, 2}, {2, 3}};
	CHECK(moved == std::vector<BucketCount>{{1, 2}, {2, 3}});
	moved.clear();
	CHECK(moved.empty());

	// Merging: into an empty one, a copy; else bucket by bucket, ascending.
	Buckets into;
	add_buckets(into, one);
	CHECK(into == one);
	add_buckets(into, many);
	CHECK(into.size() == many.size());
	CHECK(into[0] == BucketCount{3, 2});
	CHECK(bucket_count(into) == bucket_count(many) + 1);
	Buckets low{{0, 5}};
	add_buckets(low, Buckets{{39, 1}});
	CHECK(low == std::vector<BucketCount>{{0, 5}, {39, 1}});
	// A span's histogram (finer buckets, more of them) merges the same way.
	std::vector<BucketCount> span_buckets{{1, 1}, {200, 2}}, more{{0, 1}, {200, 1}, {250, 4}};
	add_buckets(span_buckets, more);
	CHECK(span_buckets == std::vector<BucketCount>{{0, 1}, {1, 1}, {200, 3}, {250, 4}});
}

TEST_CASE("a profile's durations stay with their nodes when nodes are made anew", "[distribution]")
{
	Profile p = one_path(dist_of({100, 300}), 2);
	p.processes = {{42, "a"}, {43, "b"}};
	PathNode other = p.nodes[0];
	other.pid = 43;
	add_node(p, other, dist_of({7}));
	REQUIRE(p.dists.size() == 2);
	Profile split = split_by_process(p); // a root per process above its paths
	REQUIRE(split.nodes.size() == 4);
	REQUIRE(split.dists.size() == 4);
	for (size_t i = 0; i < split.nodes.size(); i++) {
		bool root = split.nodes[i].parent == kNoParent;
		CHECK(split.dists[i].empty() == root);
	}
	CHECK(split.dists[1].buckets == p.dists[0].buckets);
	CHECK(split.dists[3].buckets == p.dists[1].buckets);
	Profile one = only_process(p, 43);
	REQUIRE(one.dists.size() == 1);
	CHECK(one.dists[0].min_ns == 7);
	drop_distributions(one);
	CHECK((!one.distributions && one.dists.empty() && node_dist(one, 0).empty()));
}
