// The text report (formats.cpp): the chosen view (views.cpp), then the
// anomalies and what compensation did.
#include <algorithm>

#include "profile/anomalies.h"
#include "profile/compensation.h"
#include "report/report_text.h"
#include "base/sink.h"
#include "profile/spans.h"
#include "base/text_escape.h"
#include "report/views.h"

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

// record --span: the spans' durations, wall-clock and measured (the probes'
// own cost inside them is not taken out).
std::string render_spans(const Profile &profile, bool per_process)
{
	if (profile.spans.empty())
		return "";
	std::vector<ProfileSpan> spans = per_process ? profile.spans : spans_by_name(profile.spans);
	std::vector<std::vector<std::string>> rows = {
		{"span", "count", "total", "avg", "min", "p50", "p90", "p99", "max"}};
	std::string notes;
	for (const ProfileSpan &s : spans) {
		std::string name = escape_text(s.name) + (s.pid ? " (pid " + std::to_string(s.pid) + ")" : "");
		auto t = [&](uint64_t ns) { return s.count ? human_ns(ns) : std::string("-"); };
		rows.push_back({name, std::to_string(s.count), t(s.total_ns), t(s.count ? s.total_ns / s.count : 0),
				t(s.min_ns), t(span_quantile(s, 0.5)), t(span_quantile(s, 0.9)),
				t(span_quantile(s, 0.99)), t(s.max_ns)});
		if (s.open || s.restarted || s.unstarted)
			notes += "  " + name + ": " + std::to_string(s.open) + " open at the stop, " +
				 std::to_string(s.restarted) + " started again before an end (dropped), " +
				 std::to_string(s.unstarted) + " ended without a start\n";
	}
	std::vector<size_t> width(rows[0].size(), 0);
	for (const auto &r : rows)
		for (size_t i = 0; i < r.size(); i++)
			width[i] = std::max(width[i], r[i].size());
	std::string out = "\nspans (wall-clock, measured; percentiles within 25%):\n";
	for (const auto &r : rows) {
		std::string line = "  " + r[0] + std::string(width[0] - r[0].size(), ' ');
		for (size_t i = 1; i < r.size(); i++)
			line += "  " + std::string(width[i] - r[i].size(), ' ') + r[i];
		out += line + "\n";
	}
	return out + notes;
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
	out += render_spans(profile, options.per_process);
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
		if (one.nodes.empty() && one.spans.empty())
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
