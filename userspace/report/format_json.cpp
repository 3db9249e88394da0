// The JSON report (formats.cpp, docs/report-json.md): functions, paths,
// anomalies and calibration, and what the chosen view adds (views.cpp).
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "profile/anomalies.h"
#include "profile/compensation.h"
#include "report/report_text.h"
#include "base/sink.h"
#include "base/huge_pages.h"
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
			{"batches", k.batches}, {"rounds", k.rounds},
			{"uncompensated_ns", k.uncompensated_ns < 0 ? json(nullptr) : json(k.uncompensated_ns)}});
	return {{"compensated", compensated}, {"kinds", kinds}, {"cost_ns", raw.calibration->cost_ns},
		{"removed_ns", summary.removed_ns}, {"measured_ns", summary.measured_ns}, {"clamped", summary.clamped},
		{"held_semaphores", held_semaphores(raw)}};
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

RawTimes raw_times(const CallTree &raw_tree, const std::vector<bool> *nested = nullptr)
{
	RawTimes raw;
	raw.present = true;
	// Only the functions' times are read (add_raw): their durations, merged
	// again per function from a million paths, were most of this.
	for (FunctionSummary &f : summarize_functions(raw_tree, false, nested))
		raw.functions.emplace(f.name, std::move(f));
	reserve_huge(raw.self_ns, raw_tree.nodes.size());
	reserve_huge(raw.total_ns, raw_tree.nodes.size());
	for (const TreeNode &n : raw_tree.nodes) {
		raw.self_ns.push_back(n.self_ns);
		raw.total_ns.push_back(n.total_ns);
	}
	return raw;
}

// The paths' text, built in one buffer and handed to the sink in chunks of
// ~64 KiB: a million paths made a string and a sink write each (and a strlen
// per literal). Literals are copied by their compile-time length; a path's
// fields but its name (< 1 KiB), or a histogram bucket, always fit in the
// slack after a chunk (chunk_done between them); names are checked.
class PathsText {
public:
	explicit PathsText(Sink &out) : out_(out), text_(new char[kSize]) {}
	// What is left of the text, written.
	void finish()
	{
		out_.write(text_.get(), used_);
		used_ = 0;
	}
	template <size_t N> void lit(const char (&s)[N])
	{
		memcpy(text_.get() + used_, s, N - 1);
		used_ += N - 1;
	}
	void str(const std::string &s)
	{
		if (used_ + s.size() > kChunk)
			finish();
		if (s.size() > kChunk)
			out_.write(s);
		else {
			memcpy(text_.get() + used_, s.data(), s.size());
			used_ += s.size();
		}
	}
	void number(uint64_t value)
	{
		used_ = size_t(std::to_chars(text_.get() + used_, text_.get() + kSize, value).ptr - text_.get());
	}
	// ",\n" INDENT "\"NAME\": VALUE", INDENT (spaces) and NAME literals.
	template <size_t I, size_t N> void field(const char (&indent)[I], const char (&name)[N], uint64_t value)
	{
		lit(",\n");
		lit(indent);
		lit("\"");
		lit(name);
		lit("\": ");
		number(value);
	}
	void chunk_done()
	{
		if (used_ >= kChunk)
			finish();
	}

private:
	static constexpr size_t kChunk = 64 * 1024, kSize = kChunk + 16 * 1024;
	Sink &out_;
	std::unique_ptr<char[]> text_;
	size_t used_ = 0;
};

// durations_json(d) as dump(2) writes it three levels in, written directly
// (a million paths' durations through a DOM took most of the report's time).
void write_durations(PathsText &t, const Distribution &d)
{
	t.lit(",\n      \"durations\": {\n        \"count\": ");
	t.number(bucket_count(d.buckets));
	t.field("        ", "min_ns", d.min_ns);
	t.field("        ", "p50_ns", dist_quantile(d, 0.5));
	t.field("        ", "p99_ns", dist_quantile(d, 0.99));
	t.field("        ", "max_ns", d.max_ns);
	t.lit(",\n        \"histogram\": ");
	if (d.buckets.empty())
		t.lit("[]");
	for (size_t b = 0; b < d.buckets.size(); b++) {
		t.lit(b ? ",\n          {\n            \"low_ns\": " : "[\n          {\n            \"low_ns\": ");
		t.number(dist_bucket_low(d.buckets[b].first));
		t.field("            ", "high_ns", dist_bucket_high(d.buckets[b].first));
		t.field("            ", "count", d.buckets[b].second);
		t.lit("\n          }");
		t.chunk_done(); // the room for the next, whatever the number of buckets
	}
	if (!d.buckets.empty())
		t.lit("\n        ]");
	t.lit("\n      }");
}

// One path of the array, as dump(2) would indent it; name: its frame's name,
// quoted.
void write_path(PathsText &t, const CallTree &tree, uint32_t i, const std::string &name, const RawTimes *raw)
{
	const TreeNode &n = tree.nodes[i];
	if (i)
		t.lit(",\n    {\n      \"id\": ");
	else
		t.lit("[\n    {\n      \"id\": ");
	t.number(i);
	if (n.parent == kNoParent)
		t.lit(",\n      \"parent\": null");
	else
		t.field("      ", "parent", n.parent);
	t.lit(",\n      \"name\": ");
	t.str(name);
	t.field("      ", "calls", n.calls);
	t.field("      ", "open", n.open);
	t.field("      ", "self_ns", n.self_ns);
	t.field("      ", "self_oncpu_ns", n.self_oncpu_ns);
	t.field("      ", "self_offcpu_ns", n.self_offcpu_ns);
	t.field("      ", "total_ns", n.total_ns);
	if (raw) {
		t.field("      ", "raw_self_ns", raw->self_ns[i]);
		t.field("      ", "raw_total_ns", raw->total_ns[i]);
		t.field("      ", "uncertain_ns", n.uncertain_ns);
		if (uncertain(n.self_ns, n.uncertain_ns))
			t.lit(",\n      \"self_uncertain\": true");
		else
			t.lit(",\n      \"self_uncertain\": false");
	}
	if (!tree.dists.empty())
		write_durations(t, tree.dists[i]);
	t.lit("\n    }");
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
	PathsText text(out);
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		uint32_t name = tree.nodes[i].name;
		if (!quoted[name]) {
			names[name] = JsonReportWriter::dump(tree.names[name]);
			quoted[name] = true;
		}
		write_path(text, tree, i, names[name], raw);
		text.chunk_done();
	}
	text.lit("\n  ]");
	text.finish();
}

// The "functions" array of a (compensated) tree, with the measured times beside when raw has them.
json functions_json(const CallTree &tree, const ReportOptions &options, RawTimes &raw,
		   const std::vector<bool> *nested = nullptr)
{
	json functions = json::array();
	bool with_raw = raw.present && raw.self_ns.size() == tree.nodes.size();
	for (const FunctionSummary &f : ranked_functions(tree, options, nested).first) {
		json j = {{"name", f.name}, {"calls", f.calls}, {"open", f.open}, {"self_ns", f.self_ns},
			{"self_oncpu_ns", f.self_oncpu_ns}, {"self_offcpu_ns", f.self_offcpu_ns},
			{"total_ns", f.total_ns}, {"recursive", f.recursive}};
		if (with_raw) {
			const FunctionSummary &r = raw.functions[f.name];
			add_raw(j, f.self_ns, r.self_ns, r.total_ns, f.uncertain_ns);
		}
		if (!tree.dists.empty())
			j["durations"] = durations_json(f.dist);
		functions.push_back(std::move(j));
	}
	return functions;
}

// --per-thread: per thread of the measured profile (split_by_thread), its
// name, tid, pid, calls and time, and its functions as "functions" has them;
// largest total first, then by tid.
json threads_json(const Profile &measured, const ReportOptions &options)
{
	std::vector<std::pair<uint64_t, json>> threads;
	for (ThreadProfile &t : split_by_thread(measured)) {
		CallTree tree = with_self_time(build_call_tree(t.profile), options.time);
		RawTimes raw;
		if (t.profile.calibration)
			raw = raw_times(tree);
		if (t.profile.calibration && !options.raw) {
			compensate_in_place(t.profile);
			tree = with_self_time(build_call_tree(t.profile), options.time);
		}
		uint64_t oncpu_ns = 0, offcpu_ns = 0;
		for (const TreeNode &n : tree.nodes) {
			oncpu_ns += n.self_oncpu_ns;
			offcpu_ns += n.self_offcpu_ns;
		}
		threads.emplace_back(tree.total_self_ns,
				     json{{"name", t.name}, {"tid", t.tid}, {"pid", t.pid}, {"calls", total_calls(tree)},
					  {"total_ns", tree.total_self_ns}, {"total_oncpu_ns", oncpu_ns},
					  {"total_offcpu_ns", offcpu_ns}, {"functions", functions_json(tree, options, raw)}});
	}
	std::stable_sort(threads.begin(), threads.end(), [](const auto &a, const auto &b) {
		return a.first != b.first ? a.first > b.first : a.second["tid"] < b.second["tid"];
	});
	json out = json::array();
	for (auto &t : threads)
		out.push_back(std::move(t.second));
	return out;
}

void write_json(Sink &out, const Profile &profile, const CallTree &tree, const ReportOptions &options,
		RawTimes &raw, const CompensationSummary &summary, const json &threads, const std::vector<bool> *nested)
{
	json functions = functions_json(tree, options, raw, nested), processes = json::array();
	bool with_raw = raw.present && raw.self_ns.size() == tree.nodes.size();
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
		if (p.sampled_fraction < 1) // monitor -p A,B, --all: its own window's share
			process["sampled_fraction"] = p.sampled_fraction;
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
	if (profile.compensated_parts) { // merged profiles calibrated apart: compensated each before merging
		report.key("compensated_parts");
		report.value(json{{"compensated", profile.compensated_parts}, {"merged", profile.merged_parts}});
	}
	report.key("spans");
	report.value(spans_json(profile, options.per_process));
	if (options.per_thread) {
		report.key("threads");
		report.value(threads);
	}
	if (const ReportView &view = find_view(options.view); view.json) {
		report.key(view.json_key);
		report.value(view.json(tree, options));
	}
	report.end();
}

} // namespace

void json_report(Profile measured, const ReportOptions &options, Sink &out)
{
	json threads = options.per_thread ? threads_json(measured, options) : json();
	Profile profile = options.per_process ? split_by_process(measured) : std::move(measured);
	measured = Profile();
	// The measured times beside the compensated ones: the raw tree first, its
	// times kept, then the profile compensated in place (compensation keeps
	// the calibration and changes only times) and the same tree refilled
	// from it: one tree built, not two (at a million paths a second tree was
	// 72 MB and a fifth of the CPU).
	std::vector<uint32_t> tree_index;
	CallTree tree = with_self_time(build_call_tree(profile, tree_index), options.time);
	// Which activations are nested depends on the tree's shape only: found
	// once for the measured functions and the compensated ones.
	std::vector<bool> nested = nested_activations(tree);
	RawTimes raw;
	if (profile.calibration.has_value())
		raw = raw_times(tree, &nested);
	CompensationSummary summary;
	if (!options.raw) {
		compensate_in_place(profile, &summary);
		if (summary.applied) {
			refill_times(tree, profile, tree_index);
			tree = with_self_time(std::move(tree), options.time);
		}
	}
	tree_index = {};
	write_json(out, profile, tree, options, raw, summary, threads, &nested);
}

} // namespace usdtprof
