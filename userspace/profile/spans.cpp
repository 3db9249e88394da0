#include "profile/spans.h"

#include <algorithm>

namespace usdtprof {

void add_span(std::vector<ProfileSpan> &into, const ProfileSpan &span)
{
	auto same = std::find_if(into.begin(), into.end(),
				 [&](const ProfileSpan &s) { return s.name == span.name && s.pid == span.pid; });
	if (same == into.end()) {
		into.push_back(span);
		return;
	}
	ProfileSpan &s = *same;
	if (span.count)
		s.min_ns = s.count ? std::min(s.min_ns, span.min_ns) : span.min_ns;
	s.max_ns = std::max(s.max_ns, span.max_ns);
	s.count += span.count;
	s.total_ns += span.total_ns;
	s.open += span.open;
	s.restarted += span.restarted;
	s.unstarted += span.unstarted;
	std::vector<std::pair<uint32_t, uint64_t>> buckets;
	std::merge(s.buckets.begin(), s.buckets.end(), span.buckets.begin(), span.buckets.end(),
		   std::back_inserter(buckets), [](const auto &a, const auto &b) { return a.first < b.first; });
	s.buckets.clear();
	for (const auto &b : buckets)
		if (!s.buckets.empty() && s.buckets.back().first == b.first)
			s.buckets.back().second += b.second;
		else
			s.buckets.push_back(b);
}

std::vector<ProfileSpan> spans_by_name(const std::vector<ProfileSpan> &spans)
{
	std::vector<ProfileSpan> out;
	for (ProfileSpan s : spans) {
		s.pid = 0;
		add_span(out, s);
	}
	std::stable_sort(out.begin(), out.end(), [](const ProfileSpan &a, const ProfileSpan &b) { return a.name < b.name; });
	return out;
}

uint64_t span_quantile(const ProfileSpan &span, double q)
{
	uint64_t counted = 0;
	for (const auto &[i, n] : span.buckets)
		counted += n;
	if (!counted)
		return 0;
	// The rank-th smallest duration (from 1), placed linearly in its bucket.
	uint64_t rank = std::max<uint64_t>(1, uint64_t(q * double(counted) + 0.5)), below = 0;
	for (const auto &[i, n] : span.buckets) {
		if (below + n >= rank) {
			uint64_t low = span_bucket_low(i), high = span_bucket_high(i);
			double at = double(rank - below) / double(n);
			auto ns = uint64_t(double(low) + at * double(high - low));
			return std::clamp(ns, span.min_ns, std::max(span.min_ns, span.max_ns));
		}
		below += n;
	}
	return span.max_ns;
}

} // namespace usdtprof
