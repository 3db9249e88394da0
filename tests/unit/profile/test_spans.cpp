#include <catch2/catch.hpp>

#include "profile/profile.h"
#include "profile/spans.h"
#include "usdtprof/bpf_shared.h"
#include "../../../bpf/bits.bpf.h"

using namespace usdtprof;

namespace {

// The kernel's bucket of a duration (bpf/bits.bpf.h, compiled here as for BPF).
uint32_t bucket_of(uint64_t ns) { return span_bucket(ns); }

ProfileSpan span_of(const std::vector<uint64_t> &durations, int32_t pid = 7)
{
	ProfileSpan s{"p:a/b", pid};
	std::map<uint32_t, uint64_t> buckets;
	for (uint64_t d : durations) {
		s.min_ns = s.count ? std::min(s.min_ns, d) : d;
		s.max_ns = std::max(s.max_ns, d);
		s.count++;
		s.total_ns += d;
		buckets[bucket_of(d)]++;
	}
	s.buckets.assign(buckets.begin(), buckets.end());
	return s;
}

} // namespace

TEST_CASE("spans: each bucket holds the durations the kernel puts in it", "[spans]")
{
	for (uint64_t ns : std::initializer_list<uint64_t>{0, 1, 3, 4, 5, 7, 8, 1000, 1023, 1024, 123456789,
			    (1ull << 40) + 12345, UINT64_MAX / 2, UINT64_MAX}) {
		INFO(ns);
		uint32_t b = bucket_of(ns);
		REQUIRE(b < USDTPROF_SPAN_BUCKETS);
		CHECK(span_bucket_low(b) <= ns);
		CHECK((ns < span_bucket_high(b) || span_bucket_high(b) == UINT64_MAX));
		// A quarter of a power of two wide at most.
		if (ns >= 4)
			CHECK(span_bucket_high(b) - span_bucket_low(b) <= span_bucket_low(b) / 4);
	}
	for (uint32_t b = 8; b + 1 < USDTPROF_SPAN_BUCKETS; b++)
		CHECK(span_bucket_high(b) == span_bucket_low(b + 1));
}

TEST_CASE("spans: quantiles within a bucket's width, inside min and max", "[spans]")
{
	std::vector<uint64_t> d;
	for (uint64_t i = 1; i <= 1000; i++)
		d.push_back(i * 1000); // 1 us .. 1 ms
	ProfileSpan s = span_of(d);
	for (double q : {0.5, 0.9, 0.99}) {
		INFO(q);
		double truth = q * 1e6, got = double(span_quantile(s, q));
		CHECK(std::abs(got - truth) <= truth / 4);
	}
	CHECK(span_quantile(s, 1.0) <= s.max_ns);
	CHECK(span_quantile(span_of({42}), 0.5) == 42);
	CHECK(span_quantile(span_of({}), 0.5) == 0);
}

TEST_CASE("spans: merged by name and pid, counts and histograms added", "[spans]")
{
	std::vector<ProfileSpan> all;
	add_span(all, span_of({10, 20}, 1));
	add_span(all, span_of({5, 1000}, 1));
	add_span(all, span_of({}, 2));
	all.back().open = 3;
	REQUIRE(all.size() == 2);
	CHECK(all[0].count == 4);
	CHECK(all[0].total_ns == 1035);
	CHECK(all[0].min_ns == 5);
	CHECK(all[0].max_ns == 1000);
	uint64_t in_buckets = 0;
	for (const auto &[b, n] : all[0].buckets)
		in_buckets += n;
	CHECK(in_buckets == 4);
	CHECK(std::is_sorted(all[0].buckets.begin(), all[0].buckets.end()));
	auto named = spans_by_name(all);
	REQUIRE(named.size() == 1);
	CHECK(named[0].pid == 0);
	CHECK(named[0].count == 4);
	CHECK(named[0].min_ns == 5); // a process with none ended does not make it 0
	CHECK(named[0].open == 3);
}

TEST_CASE("spans: a profile keeps them in both versions", "[spans][profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	Profile p;
	p.spans = {span_of({100, 200, 4000}, 9)};
	p.spans[0].restarted = 1;
	p.spans[0].unstarted = 2;
	p.spans[0].open = 4;
	auto r = parse_profile(serialize_profile(p, version));
	REQUIRE(r.ok());
	REQUIRE(r->spans.size() == 1);
	const ProfileSpan &s = r->spans[0];
	CHECK(s.name == "p:a/b");
	CHECK(s.pid == 9);
	CHECK(s.count == 3);
	CHECK(s.total_ns == 4300);
	CHECK(s.min_ns == 100);
	CHECK(s.max_ns == 4000);
	CHECK((s.open == 4 && s.restarted == 1 && s.unstarted == 2));
	CHECK(s.buckets == p.spans[0].buckets);
}
