// The text report (formats.cpp): the chosen view (views.cpp), then the
// anomalies and what compensation did.
#include <algorithm>

#include "anomalies.h"
#include "compensation.h"
#include "report_text.h"
#include "sink.h"
#include "text_escape.h"
#include "views.h"

namespace usdtprof {

namespace {

std::string render_anomalies(const Profile &profile)
{
	std::string out;
	for (const auto &[name, count] : profile.anomalies) {
		if (!count)
			continue;
		const char *what = anomaly_description(name);
		out += "  " + escape_text(name) + ": " + std::to_string(count) + (what ? std::string("  (") + what + ")" : "") + "\n";
	}
	return out.empty() ? "anomalies: none\n" : "anomalies:\n" + out;
}

std::string one_report(Profile profile, const ReportOptions &options)
{
	// Compensation keeps the calibration: what the lines below say of the measured profile.
	CompensationSummary summary;
	if (!options.raw)
		compensate_in_place(profile, &summary);
	CallTree tree = with_self_time(build_call_tree(profile), options.time);
	std::string out = find_view(options.view).text(profile, tree, options);
	if (options.time != TimeMode::Wall) // "usdtprof report (on-CPU time): ..."
		out.insert(out.find(':'), options.time == TimeMode::Cpu ? " (on-CPU time)" : " (off-CPU time)");
	out += "\n" + render_anomalies(profile);
	if (options.raw && profile.calibration)
		out += "times as measured (--raw): probe overhead included\n";
	out += compensation_line(profile, summary);
	if (std::any_of(tree.nodes.begin(), tree.nodes.end(),
			[](const TreeNode &n) { return uncertain(n.self_ns, n.uncertain_ns); }))
		out += "~: a self time within the calibration's spread: not precise\n";
	return out;
}

// --per-process of a view with tables: one report per process, under a
// "process comm (pid N)" line.
std::string per_process_reports(const Profile &profile, const ReportOptions &options)
{
	std::vector<int32_t> pids;
	for (const ProfileProcess &p : profile.processes)
		pids.push_back(p.pid);
	for (const PathNode &n : profile.nodes)
		if (std::find(pids.begin(), pids.end(), n.pid) == pids.end())
			pids.push_back(n.pid);
	std::string out;
	for (int32_t pid : pids) {
		Profile one = only_process(profile, pid);
		if (one.nodes.empty())
			continue;
		std::string comm = one.processes.empty() ? "" : escape_text(one.processes[0].comm);
		out += (out.empty() ? "" : "\n") + std::string("process ") + (comm.empty() ? "" : comm + " ") + "(pid " +
		       std::to_string(pid) + ")\n" + one_report(one, options);
	}
	return out;
}

} // namespace

void text_report(Profile measured, const ReportOptions &options, Sink &out)
{
	if (!options.per_process)
		out.write(one_report(std::move(measured), options));
	else
		out.write(find_view(options.view).per_process_tables ? per_process_reports(measured, options)
								     : one_report(split_by_process(measured), options));
}

} // namespace usdtprof
