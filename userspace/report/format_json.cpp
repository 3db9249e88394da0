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

// docs/report-json.md: 2 since paths name their parent (version 1 had no
// "version" key and a "stack" per path).
constexpr int kReportJsonVersion = 2;

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

// The measured (uncompensated) times beside the compensated tree's, when the
// profile is calibrated: each node's (by its index in the tree) and each
// function's by name. Only these of the measured tree are kept, not the tree.
struct RawTimes {
	bool present = false;
	std::vector<uint64_t> self_ns, total_ns;
	std::unordered_map<std::string, FunctionSummary> functions;
};

RawTimes raw_times(const CallTree &raw_tree)
{
	RawTimes raw;
	raw.present = true;
	for (FunctionSummary &f : summarize_functions(raw_tree))
		raw.functions.emplace(f.name, f);
	raw.self_ns.reserve(raw_tree.nodes.size());
	raw.total_ns.reserve(raw_tree.nodes.size());
	for (const TreeNode &n : raw_tree.nodes) {
		raw.self_ns.push_back(n.self_ns);
		raw.total_ns.push_back(n.total_ns);
	}
	return raw;
}

template <size_t N> void number_field(std::string &out, const char (&name)[N], uint64_t value)
{
	out += ",\n      \"";
	out.append(name, N - 1);
	out += "\": ";
	char digits[24];
	out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
}

// The paths array, "paths": [ ... ] as dump(2) would indent it: each path
// names its parent by id (its index) and holds its own frame's name, so the
// output grows with the paths, not with paths x depth (version 2; version 1
// repeated every path's whole stack).
void write_paths(Sink &out, const CallTree &tree, const RawTimes *raw)
{
	if (tree.nodes.empty()) {
		out.write("[]");
		return;
	}
	std::vector<std::string> names(tree.names.size()); // each name quoted and escaped once
	std::vector<bool> quoted(tree.names.size());
	std::string text;
	char digits[24];
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		if (!quoted[n.name]) {
			names[n.name] = JsonReportWriter::dump(tree.names[n.name]);
			quoted[n.name] = true;
		}
		text = i ? ",\n    {\n      \"id\": " : "[\n    {\n      \"id\": ";
		text.append(digits, std::to_chars(digits, digits + sizeof digits, i).ptr);
		if (n.parent == kNoParent)
			text += ",\n      \"parent\": null";
		else
			number_field(text, "parent", n.parent);
		text += ",\n      \"name\": ";
		text += names[n.name];
		number_field(text, "calls", n.calls);
		number_field(text, "open", n.open);
		number_field(text, "self_ns", n.self_ns);
		number_field(text, "self_oncpu_ns", n.self_oncpu_ns);
		number_field(text, "self_offcpu_ns", n.self_offcpu_ns);
		number_field(text, "total_ns", n.total_ns);
		if (raw) {
			number_field(text, "raw_self_ns", raw->self_ns[i]);
			number_field(text, "raw_total_ns", raw->total_ns[i]);
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
		RawTimes &raw, const CompensationSummary &summary)
{
	json functions = json::array(), processes = json::array();
	bool with_raw = raw.present && raw.self_ns.size() == tree.nodes.size();
	std::unordered_map<std::string, FunctionSummary> &raw_functions = raw.functions;
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
	report.key("version");
	report.value(kReportJsonVersion);
	report.key("time");
	report.value(time_mode_name(tree.time));
	report.key("functions");
	report.value(functions);
	report.key("paths");
	write_paths(out, tree, with_raw ? &raw : nullptr);
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
	// The measured times beside the compensated ones: the raw tree first, its
	// times kept, then the profile compensated in place (compensation keeps
	// the calibration and changes only times) and the same tree refilled
	// from it: one tree built, not two (at a million paths a second tree was
	// 72 MB and a fifth of the CPU).
	std::vector<uint32_t> tree_index;
	CallTree tree = with_self_time(build_call_tree(profile, tree_index), options.time);
	RawTimes raw;
	if (profile.calibration.has_value())
		raw = raw_times(tree);
	CompensationSummary summary;
	if (!options.raw) {
		compensate_in_place(profile, &summary);
		if (summary.applied) {
			refill_times(tree, profile, tree_index);
			tree = with_self_time(std::move(tree), options.time);
		}
	}
	tree_index = {};
	write_json(out, profile, tree, options, raw, summary);
}

} // namespace usdtprof
