// The JSON report (formats.cpp, docs/report-json.md): functions, paths,
// anomalies and calibration, and what the chosen view adds (views.cpp).
#include <charconv>
#include <string_view>
#include <unordered_map>

#include "profile/anomalies.h"
#include "profile/compensation.h"
#include "report/report_text.h"
#include "base/sink.h"
#include "profile/spans.h"
#include "report/views.h"

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

// A function's or path's call durations (CallTree::dists): written only
// when the profile carries them.
json durations_json(const Distribution &d)
{
	json histogram = json::array();
	for (const auto &[i, n] : d.buckets)
		histogram.push_back({{"low_ns", dist_bucket_low(i)}, {"high_ns", dist_bucket_high(i)}, {"count", n}});
	return {{"count", bucket_count(d.buckets)}, {"min_ns", d.min_ns}, {"p50_ns", dist_quantile(d, 0.5)},
		{"p99_ns", dist_quantile(d, 0.99)}, {"max_ns", d.max_ns}, {"histogram", histogram}};
}

// Writes the report as nlohmann's dump(2) of the whole document would, but
// the paths (a million, each with its stack) one by one into out: the
// rest is small and dumped by nlohmann, indented one level deeper.
class JsonReportWriter {
public:
	explicit JsonReportWriter(Sink &out) : out_(out) {}
	void key(const char *name)
	{
		out_.write(first_ ? "{\n  \"" : ",\n  \"");
		out_.write(name);
		out_.write("\": ");
		first_ = false;
	}
	void value(const json &j)
	{
		std::string text = dump(j);
		for (size_t from = 0;;) {
			size_t nl = text.find('\n', from);
			out_.write(std::string_view(text).substr(from, nl == std::string::npos ? nl : nl + 1 - from));
			if (nl == std::string::npos)
				break;
			out_.write("  ");
			from = nl + 1;
		}
	}
	void end() { out_.write(first_ ? "{}\n" : "\n}\n"); }
	// Names may not be UTF-8: replace invalid bytes rather than throw.
	static std::string dump(const json &j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

private:
	Sink &out_;
	bool first_ = true;
};

void number_field(std::string &out, const char *name, uint64_t value)
{
	out += ",\n      \"";
	out += name;
	out += "\": ";
	char digits[24];
	out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

// The paths array, "paths": [ ... ] as dump(2) would indent it.
void write_paths(Sink &out, const CallTree &tree, const CallTree *raw_tree)
{
	if (tree.nodes.empty()) {
		out.write("[]");
		return;
	}
	std::vector<std::string> names(tree.names.size()); // each name quoted and escaped once
	std::vector<bool> quoted(tree.names.size());
	std::vector<uint32_t> stack;
	std::string text;
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		stack.clear();
		for (uint32_t p = i; p != kNoParent; p = tree.nodes[p].parent)
			stack.push_back(tree.nodes[p].name);
		text = i ? ",\n    {\n      \"stack\": [" : "[\n    {\n      \"stack\": [";
		for (size_t k = stack.size(); k-- > 0;) {
			uint32_t name = stack[k];
			if (!quoted[name]) {
				names[name] = JsonReportWriter::dump(tree.names[name]);
				quoted[name] = true;
			}
			text += "\n        ";
			text += names[name];
			text += k ? "," : "\n      ]";
		}
		number_field(text, "calls", n.calls);
		number_field(text, "open", n.open);
		number_field(text, "self_ns", n.self_ns);
		number_field(text, "self_oncpu_ns", n.self_oncpu_ns);
		number_field(text, "self_offcpu_ns", n.self_offcpu_ns);
		number_field(text, "total_ns", n.total_ns);
		if (raw_tree) {
			number_field(text, "raw_self_ns", raw_tree->nodes[i].self_ns);
			number_field(text, "raw_total_ns", raw_tree->nodes[i].total_ns);
			number_field(text, "uncertain_ns", n.uncertain_ns);
			text += uncertain(n.self_ns, n.uncertain_ns) ? ",\n      \"self_uncertain\": true"
							       : ",\n      \"self_uncertain\": false";
		}
		if (!tree.dists.empty()) {
			// Indented as dump(2) would, three levels in.
			std::string d = JsonReportWriter::dump(durations_json(tree.dists[i]));
			text += ",\n      \"durations\": ";
			for (char c : d)
				text += c == '\n' ? std::string("\n      ") : std::string(1, c);
		}
		text += "\n    }";
		out.write(text);
	}
	out.write("\n  ]");
}

void write_json(Sink &out, const Profile &profile, const CallTree &tree, const ReportOptions &options,
		const CallTree &raw_tree, bool calibrated, const CompensationSummary &summary)
{
	json functions = json::array(), processes = json::array();
	bool with_raw = calibrated && raw_tree.nodes.size() == tree.nodes.size();
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
		if (!tree.dists.empty())
			j["durations"] = durations_json(f.dist);
		functions.push_back(std::move(j));
	}
	// The known counters first, in kernel order, then any others the profile has.
	json anomalies = json::object();
	for (const Anomaly &a : anomaly_table()) {
		auto it = profile.anomalies.find(a.name);
		anomalies[a.name] = it == profile.anomalies.end() ? uint64_t{0} : it->second;
	}
	for (const auto &[name, count] : profile.anomalies)
		anomalies[name] = count;
	for (const ProfileProcess &p : profile.processes) {
		json process = {{"pid", p.pid}, {"comm", p.comm}};
		if (p.ns_pid)
			process["ns_pid"] = p.ns_pid;
		for (auto [key, value] : {std::pair{"cgroup", &p.cgroup}, {"container_runtime", &p.container_runtime},
					  {"container_id", &p.container_id}})
			if (!value->empty())
				process[key] = *value;
		processes.push_back(std::move(process));
	}
	JsonReportWriter report(out);
	report.key("time");
	report.value(time_mode_name(tree.time));
	report.key("functions");
	report.value(functions);
	report.key("paths");
	write_paths(out, tree, with_raw ? &raw_tree : nullptr);
	report.key("anomalies");
	report.value(anomalies);
	report.key("total_self_ns");
	report.value(tree.total_self_ns);
	report.key("duration_ns");
	report.value(profile.duration_ns);
	report.key("sampled_fraction");
	report.value(profile.sampled_fraction);
	report.key("processes");
	report.value(processes);
	report.key("calibration");
	report.value(calibration_json(profile, summary, !options.raw));
	report.key("spans");
	report.value(spans_json(profile, options.per_process));
	if (const ReportView &view = find_view(options.view); view.json) {
		report.key(view.json_key);
		report.value(view.json(tree, options));
	}
	report.end();
}

} // namespace

void json_report(Profile measured, const ReportOptions &options, Sink &out)
{
	Profile profile = options.per_process ? split_by_process(measured) : std::move(measured);
	measured = Profile();
	// The measured times beside the compensated ones: the raw tree first,
	// then the profile compensated in place (compensation keeps the calibration).
	bool calibrated = profile.calibration.has_value();
	CallTree raw_tree = calibrated ? with_self_time(build_call_tree(profile), options.time) : CallTree{};
	CompensationSummary summary;
	if (!options.raw)
		compensate_in_place(profile, &summary);
	CallTree tree = with_self_time(build_call_tree(profile), options.time);
	write_json(out, profile, tree, options, raw_tree, calibrated, summary);
}

} // namespace usdtprof
