// Pieces the report's formats (format_text.cpp, format_json.cpp) and views
// (view_*.cpp) share: number formatting, ranking and pruning.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "profile/profile.h"
#include "report/report.h"

namespace usdtprof {

double percent(uint64_t part, uint64_t whole);
std::string open_marker(uint64_t open); // " (N open)" or ""
uint64_t average(const FunctionSummary &f);
uint64_t total_calls(const CallTree &tree);
std::string line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "sampled: ..." for a monitor interval probed for only part of its time, else "".
std::string sampled_line(const Profile &profile);
// "process srv (pid 4242): pid 1 in its pid namespace, docker container
// 0123456789ab" for each process in another pid namespace or a container.
std::string container_lines(const Profile &profile);
// "lost paths: ..." when the kernel's call-path table was full: the share of
// the time charged to [other] frames, said first, since every line below is
// coarser for it; else "".
std::string lost_paths_line(const Profile &profile, const CallTree &tree);
// "~" before a time within the calibration's spread (uncertain_ns): a self
// time against its calls' spread, one call's time against one call's.
std::string time_text(uint64_t ns, uint64_t uncertain_ns);
// One call's share of its calls' spread (rounded up): what an average or a
// single call's duration is held against. A lower bound for a duration,
// which also loses its deeper callees' costs.
uint64_t call_spread(uint64_t uncertain_ns, uint64_t calls);
// The duration columns of a text table when the tree has distributions:
// " %10s" each of min, p50, p99, max (headings when d is null, "-" when
// the calls have none; "~" before one within call_spread_ns), else "".
std::string duration_cells(const CallTree &tree, const Distribution *d, uint64_t call_spread_ns = 0);
// What those columns are, said under the table: compensated like the totals
// unless --raw or the profile has no calibration (compensation.h).
inline std::string durations_note(const Profile &profile, const ReportOptions &options)
{
	bool compensated = !options.raw && profile.calibration && !profile.calibration->kinds.empty();
	return std::string("min, p50, p99, max: durations of single calls (inclusive, wall-clock, ") +
	       (compensated ? "probe overhead taken out as from the totals: each call's own exactly, its callees' in "
			      "proportion to its length, so a single call's is approximate"
			    : "as measured: probe overhead included") +
	       "); p50 and p99 are exact to their power-of-two bucket\n";
}
// Largest total first, then by name: the order of the tree views.
std::vector<uint32_t> by_total(const CallTree &tree, std::vector<uint32_t> group);
bool below_min_percent(const CallTree &tree, uint32_t node, const ReportOptions &options);
// Sorted by options.sort, cut to options.limit; also returns how many were cut.
// nested: as summarize_functions takes it.
std::pair<std::vector<FunctionSummary>, size_t> ranked_functions(const CallTree &tree, const ReportOptions &options,
								   const std::vector<bool> *nested = nullptr);

} // namespace usdtprof
