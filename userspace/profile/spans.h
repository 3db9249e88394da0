// Spans (record --span): intervals timed beside the call tree, as reports
// show them (docs/report-json.md, "Spans").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace usdtprof {

// Adds a span's counts into the one of the same name and pid in `into`, or
// appends it.
void add_span(std::vector<ProfileSpan> &into, const ProfileSpan &span);

// The spans of every process added up per name (pid 0), by name.
std::vector<ProfileSpan> spans_by_name(const std::vector<ProfileSpan> &spans);

// The duration below which a share q (0 to 1) of the ended spans fall,
// estimated from the histogram (within a quarter of a power of two: its
// bucket's width), never outside [min_ns, max_ns]; 0 when none ended.
uint64_t span_quantile(const ProfileSpan &span, double q);

} // namespace usdtprof
