#include "profile/spans.h"
#include "profile/distribution.h"

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
	add_buckets(s.buckets, span.buckets);
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
	return bucket_quantile(span.buckets, span.min_ns, span.max_ns, q, span_bucket_low, span_bucket_high);
}

} // namespace usdtprof
