// The flat view: one line per function, sorted and cut as asked (views.cpp).
#include "report/report_text.h"
#include "base/text_escape.h"
#include "report/views.h"

namespace usdtprof {

std::string flat_text(const Profile &profile, const CallTree &tree, const ReportOptions &options)
{
	auto [fs, cut] = ranked_functions(tree, options);
	std::string out = "usdtprof report: " + human_ns(tree.total_self_ns) + " recorded in " +
		std::to_string(total_calls(tree)) + " calls over " + human_ns(profile.duration_ns) + "\n" +
		lost_paths_line(profile, tree) + sampled_line(profile) + container_lines(profile) + "\n";
	out += line("%12s %10s %6s %10s %10s", "calls", "self", "self%", "total", "avg") + duration_cells(tree, nullptr) +
	       "  name\n";
	for (const FunctionSummary &f : fs) {
		uint64_t spread = call_spread(f.uncertain_ns, f.calls);
		out += line("%12llu %10s %5.1f%% %10s %10s", static_cast<unsigned long long>(f.calls),
			time_text(f.self_ns, f.uncertain_ns).c_str(), percent(f.self_ns, tree.total_self_ns), human_ns(f.total_ns).c_str(),
			f.calls ? time_text(average(f), spread).c_str() : "-") + duration_cells(tree, &f.dist, spread) + "  " +
			escape_text(f.name) + (f.recursive ? " [recursive]" : "") + open_marker(f.open) + "\n";
	}
	if (cut)
		out += "... " + std::to_string(cut) + " more functions not shown\n";
	if (!tree.dists.empty())
		out += durations_note(profile, options);
	return out;
}

} // namespace usdtprof
