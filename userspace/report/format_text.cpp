// The text report (formats.cpp): the chosen view (views.cpp), then the
// anomalies and what compensation did.
#include <algorithm>

#include "profile/anomalies.h"
#include "profile/compensation.h"
#include "report/report_text.h"
#include "base/sink.h"
#include "profile/spans.h"
#include "base/text_escape.h"
#include "target/presets.h"
#include "report/views.h"

namespace usdtprof {

namespace {

// "process comm (pid N)", of the profile's process pid.
std::string process_heading(const Profile &profile, int32_t pid)
{
	auto p = std::find_if(profile.processes.begin(), profile.processes.end(),
			      [&](const ProfileProcess &p) { return p.pid == pid; });
	std::string comm = p == profile.processes.end() ? "" : escape_text(p->comm);
	return "process " + (comm.empty() ? "" : comm + " ") + "(pid " + std::to_string(pid) + ")";
}

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

// What follows a report's tables: the spans, the anomalies and what
// compensation did; uncertain: some time shown may be within the spread.
std::string report_footer(const Profile &profile, const ReportOptions &options, const CompensationSummary &summary,
			  bool uncertain)
{
	std::string out = render_spans(profile, options.per_process);
	out += "\n" + render_anomalies(profile);
	if (options.raw && profile.calibration)
		out += "times as measured (--raw): probe overhead included\n";
	out += compensation_line(profile, summary);
	out += merged_compensation_line(profile);
	out += merged_durations_line(profile);
	out += held_semaphore_line(profile, held_semaphore_cost);
	if (uncertain)
		out += "~: within the calibration's spread, not precise (a self time: of its calls; an average or one call's "
		       "duration: of one call)\n";
	return out;
}

bool any_uncertain(const CallTree &tree)
{
	// A node's shortest call, or its average, within one call's spread: a
	// table's average or duration may be marked (its rows merge nodes).
	for (size_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		uint64_t spread = call_spread(n.uncertain_ns, n.calls);
		if (uncertain(n.self_ns, n.uncertain_ns) || (n.calls && uncertain(n.total_ns / n.calls, spread)) ||
		    (!tree.dists.empty() && !tree.dists[i].empty() && uncertain(tree.dists[i].min_ns, spread)))
			return true;
	}
	return false;
}

// The view's text of a (compensated) profile, its title line saying the time domain.
std::string view_text(const Profile &profile, const CallTree &tree, const ReportOptions &options)
{
	std::string out = find_view(options.view).text(profile, tree, options);
	if (options.time != TimeMode::Wall) // "usdtprof report (on-CPU time): ..."
		out.insert(out.find(':'), options.time == TimeMode::Cpu ? " (on-CPU time)" : " (off-CPU time)");
	return out;
}

std::string one_report(Profile profile, const ReportOptions &options)
{
	// Compensation keeps the calibration: what the lines below say of the measured profile.
	CompensationSummary summary;
	if (!options.raw)
		compensate_in_place(profile, &summary);
	CallTree tree = with_self_time(build_call_tree(profile), options.time);
	return view_text(profile, tree, options) + report_footer(profile, options, summary, any_uncertain(tree));
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
		out += (out.empty() ? "" : "\n") + process_heading(one, pid) + "\n" + one_report(one, options);
	}
	return out;
}

// --per-thread of a view with tables: one table per thread, largest first,
// under a "thread NAME (tid N), process comm (pid P): S% of the recorded
// time" line; then the recording's spans, anomalies and compensation once.
std::string per_thread_reports(Profile profile, const ReportOptions &options)
{
	CompensationSummary summary;
	if (!options.raw)
		compensate_in_place(profile, &summary);
	struct Table {
		CallTree tree;
		ThreadProfile thread;
	};
	std::vector<Table> tables;
	uint64_t total_ns = 0;
	for (ThreadProfile &t : split_by_thread(profile)) {
		CallTree tree = with_self_time(build_call_tree(t.profile), options.time);
		total_ns += tree.total_self_ns;
		tables.push_back({std::move(tree), std::move(t)});
	}
	std::stable_sort(tables.begin(), tables.end(), [](const Table &a, const Table &b) {
		return a.tree.total_self_ns != b.tree.total_self_ns ? a.tree.total_self_ns > b.tree.total_self_ns
								    : a.thread.tid < b.thread.tid;
	});
	std::string out = tables.empty() ? "usdtprof report: no thread has a call path\n" : "";
	bool uncertain = false;
	for (const Table &t : tables) {
		out += (&t == &tables[0] ? "" : "\n") + std::string("thread ") +
		       (t.thread.name.empty() ? "" : escape_text(t.thread.name) + " ") + "(tid " +
		       std::to_string(t.thread.tid) + "), " + process_heading(t.thread.profile, t.thread.pid) +
		       line(": %.1f%% of the recorded time\n", percent(t.tree.total_self_ns, total_ns)) +
		       view_text(t.thread.profile, t.tree, options);
		uncertain = uncertain || any_uncertain(t.tree);
	}
	return out + report_footer(profile, options, summary, uncertain);
}
} // namespace

void text_report(Profile measured, const ReportOptions &options, Sink &out)
{
	if (options.per_thread && find_view(options.view).per_process_tables)
		out.write(per_thread_reports(std::move(measured), options));
	else if (!options.per_process)
		out.write(one_report(std::move(measured), options));
	else
		out.write(find_view(options.view).per_process_tables ? per_process_reports(measured, options)
								     : one_report(split_by_process(measured), options));
}

} // namespace usdtprof
