// The JSON report (formats.cpp, docs/report-json.md): functions, paths,
// anomalies and calibration, and what the chosen view adds (views.cpp).
#include <unordered_map>

#include "anomalies.h"
#include "compensation.h"
#include "report_text.h"
#include "spans.h"
#include "views.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json; // keeps keys in schema order

// The measured times beside the compensated ones, and the uncertainty.
void add_raw(json &j, uint64_t self_ns, uint64_t raw_self_ns, uint64_t raw_total_ns, uint64_t uncertain_ns)
{
	j["raw_self_ns"] = raw_self_ns;
	j["raw_total_ns"] = raw_total_ns;
	j["uncertain_ns"] = uncertain_ns;
	j["self_uncertain"] = uncertain(self_ns, uncertain_ns);
}

json calibration_json(const Profile &raw, const CompensationSummary &summary, bool compensated)
{
	if (!raw.calibration)
		return nullptr;
	json kinds = json::array();
	for (const ProbeCost &k : raw.calibration->kinds)
		kinds.push_back({{"kind", k.kind}, {"own_ns", k.own_ns}, {"caller_ns", k.caller_ns},
			{"own_spread_ns", k.own_spread_ns}, {"caller_spread_ns", k.caller_spread_ns},
			{"batches", k.batches},
			{"uncompensated_ns", k.uncompensated_ns < 0 ? json(nullptr) : json(k.uncompensated_ns)}});
	return {{"compensated", compensated}, {"kinds", kinds}, {"cost_ns", raw.calibration->cost_ns},
		{"removed_ns", summary.removed_ns}, {"clamped", summary.clamped}};
}

json spans_json(const Profile &profile, bool per_process)
{
	json out = json::array();
	for (const ProfileSpan &s : per_process ? profile.spans : spans_by_name(profile.spans)) {
		json histogram = json::array();
		for (const auto &[i, n] : s.buckets)
			histogram.push_back({{"low_ns", span_bucket_low(i)}, {"high_ns", span_bucket_high(i)}, {"count", n}});
		out.push_back({{"name", s.name}, {"pid", s.pid ? json(s.pid) : json(nullptr)}, {"count", s.count},
			{"total_ns", s.total_ns}, {"avg_ns", s.count ? s.total_ns / s.count : 0}, {"min_ns", s.min_ns},
			{"p50_ns", span_quantile(s, 0.5)}, {"p90_ns", span_quantile(s, 0.9)},
			{"p99_ns", span_quantile(s, 0.99)}, {"max_ns", s.max_ns}, {"open", s.open},
			{"restarted", s.restarted}, {"unstarted", s.unstarted}, {"histogram", histogram}});
	}
	return out;
}

std::string render_json(const Profile &profile, const CallTree &tree, const ReportOptions &options,
			const Profile &raw, const CompensationSummary &summary)
{
	json functions = json::array(), paths = json::array(), processes = json::array();
	CallTree raw_tree = with_self_time(build_call_tree(raw), options.time);
	bool with_raw = raw.calibration && raw_tree.nodes.size() == tree.nodes.size();
	std::unordered_map<std::string, FunctionSummary> raw_functions;
	if (with_raw)
		for (FunctionSummary &f : summarize_functions(raw_tree))
			raw_functions.emplace(f.name, f);
	for (const FunctionSummary &f : ranked_functions(tree, options).first) {
		json j = {{"name", f.name}, {"calls", f.calls}, {"open", f.open}, {"self_ns", f.self_ns},
			{"self_oncpu_ns", f.self_oncpu_ns}, {"self_offcpu_ns", f.self_offcpu_ns},
			{"total_ns", f.total_ns}, {"recursive", f.recursive}};
		if (with_raw) {
			const FunctionSummary &r = raw_functions[f.name];
			add_raw(j, f.self_ns, r.self_ns, r.total_ns, f.uncertain_ns);
		}
		functions.push_back(std::move(j));
	}
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		json j = {{"stack", stack_of(tree, i)}, {"calls", n.calls}, {"open", n.open},
			{"self_ns", n.self_ns}, {"self_oncpu_ns", n.self_oncpu_ns},
			{"self_offcpu_ns", n.self_offcpu_ns}, {"total_ns", n.total_ns}};
		if (with_raw)
			add_raw(j, n.self_ns, raw_tree.nodes[i].self_ns, raw_tree.nodes[i].total_ns,
				n.uncertain_ns);
		paths.push_back(std::move(j));
	}
	// The known counters first, in kernel order, then any others the profile has.
	json anomalies = json::object();
	for (const Anomaly &a : anomaly_table()) {
		auto it = profile.anomalies.find(a.name);
		anomalies[a.name] = it == profile.anomalies.end() ? uint64_t{0} : it->second;
	}
	for (const auto &[name, count] : profile.anomalies)
		anomalies[name] = count;
	for (const ProfileProcess &p : profile.processes)
		processes.push_back({{"pid", p.pid}, {"comm", p.comm}});
	json report = {
		{"time", time_mode_name(tree.time)},
		{"functions", functions},
		{"paths", paths},
		{"anomalies", anomalies},
		{"total_self_ns", tree.total_self_ns},
		{"duration_ns", profile.duration_ns},
		{"sampled_fraction", profile.sampled_fraction},
		{"processes", processes},
		{"calibration", calibration_json(raw, summary, !options.raw)},
		{"spans", spans_json(profile, options.per_process)},
	};
	if (const ReportView &view = find_view(options.view); view.json)
		report[view.json_key] = view.json(tree, options);
	// Names may not be UTF-8: replace invalid bytes rather than throw.
	return report.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace

std::string json_report(const Profile &measured, const ReportOptions &options)
{
	const Profile &raw = options.per_process ? split_by_process(measured) : measured;
	CompensationSummary summary;
	Profile profile = options.raw ? raw : compensate(raw, &summary);
	return render_json(profile, with_self_time(build_call_tree(profile), options.time), options, raw, summary);
}

} // namespace usdtprof
