// The views of one real profile with tasks agree on what a total is: the flat
// report, the tree, JSON, folded stacks, pprof, the trace and the metrics
// (docs/report-json.md "Inclusive time and tasks"), in every time domain.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "gzip.h"
#include "profile/compensation.h"
#include "harness.h"
#include "serve/metrics.h"
#include "profile/profile.h"
#include "proto/profile.pb.h"

using namespace e2e;
using nlohmann::json;

namespace {

constexpr double kUs = 1e3;

uint64_t n(const json &v) { return v.get<uint64_t>(); }

// "871 us" -> 871000: the text reports' times, 3 significant digits.
// A time as the text shows it; "~" marks one within the calibration's
// spread (a self time compensated to ~0 ns, say).
double parse_human(const std::string &value, const std::string &unit)
{
	double scale = unit == "ns" ? 1 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : 1e9;
	return std::stod(value.starts_with('~') ? value.substr(1) : value) * scale;
}

// A time the text shows, against the exact one: within its rounding.
void require_shown(double shown, uint64_t exact)
{
	INFO("shown " << shown << " exact " << exact);
	REQUIRE(std::abs(shown - double(exact)) <= 0.006 * double(exact) + 1);
}

std::string file_text(const std::string &file)
{
	std::ifstream in(file, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// pprof's cum per function in its default sample type: each sample counted
// once per function in its stack.
std::map<std::string, int64_t> pprof_cum(const std::string &file)
{
	perftools::profiles::Profile p;
	std::string raw;
	REQUIRE(gunzip(file_text(file), raw));
	REQUIRE(p.ParseFromString(raw));
	auto str = [&](int64_t i) { return p.string_table(int(i)); };
	int column = 0;
	while (p.sample_type(column).type() != p.default_sample_type())
		column++;
	std::map<uint64_t, std::string> name_of;
	for (const auto &f : p.function())
		name_of[f.id()] = str(f.name());
	std::map<std::string, int64_t> cum;
	for (const auto &s : p.sample()) {
		std::set<std::string> seen;
		for (uint64_t loc : s.location_id())
			if (seen.insert(name_of.at(loc)).second) // location id == function id (docs/pprof.md)
				cum[name_of.at(loc)] += s.value(column);
	}
	return cum;
}

// Every path's total is its self plus its children's; no child exceeds its parent.
void require_tree_sums(const json &report)
{
	std::map<json, uint64_t> children, total;
	for (const json &p : report["paths"]) {
		json parent = p["stack"];
		parent.erase(parent.size() - 1);
		children[parent] += n(p["total_ns"]);
		total[p["stack"]] = n(p["total_ns"]);
	}
	for (const json &p : report["paths"]) {
		INFO(p.dump());
		REQUIRE(n(p["total_ns"]) == n(p["self_ns"]) + children[p["stack"]]);
		json parent = p["stack"];
		parent.erase(parent.size() - 1);
		if (!parent.empty())
			REQUIRE(n(p["total_ns"]) <= total.at(parent));
	}
	for (const json &f : report["functions"])
		REQUIRE(n(f["total_ns"]) <= n(report["total_self_ns"]));
}

// The row of name in `report` text (flat) or `report --tree` text: its times.
struct Row {
	double self = 0, total = 0, percent = 0;
	uint64_t calls = 0;
	bool found = false;
};

Row text_row(const std::string &text, const std::string &name, bool tree)
{
	std::istringstream lines(text);
	for (std::string line; std::getline(lines, line);) {
		std::istringstream in(line);
		std::string a, au, pc, b, bu, c, cu, last;
		Row r;
		// The name is the last word: duration columns (min p50 p99 max) may come before it.
		auto name_last = [&] {
			for (std::string w; in >> w;)
				last = w;
			return last == name;
		};
		if (tree) { // total total% self calls [min p50 p99 max] name
			if (!(in >> a >> au >> pc >> b >> bu >> r.calls) || !name_last())
				continue;
			r.total = parse_human(a, au);
			r.self = parse_human(b, bu);
		} else { // calls self self% total avg [min p50 p99 max] name
			if (!(in >> r.calls >> b >> bu >> pc >> a >> au >> c >> cu) || !name_last())
				continue;
			r.total = parse_human(a, au);
			r.self = parse_human(b, bu);
		}
		r.percent = std::stod(pc);
		r.found = true;
		return r;
	}
	FAIL("no row " << name << " in\n" << text);
	return {};
}

json report_in(const std::string &data, const std::string &time, bool tree = false)
{
	std::vector<std::string> argv = {e2e::usdtprof(), "report", data, "--format", "json", "--time", time};
	if (tree)
		argv.push_back("--tree");
	Output o = run(argv);
	REQUIRE(o.status == 0);
	return e2e::parse_report(o.out);
}

} // namespace

TEST_CASE("tasks: report, tree, JSON, folded, pprof and metrics agree on a task's inclusive time", "[tasks][views]")
{
	std::string dir = temp_dir(), data = dir + "/tasks.data";
	Output o = run({e2e::usdtprof(), "record", "-o", data, "--", target("tasks"), "10"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	double slack = slack_ns(o.out);
	json report = report_in(data, "wall");
	require_no_anomalies(report);
	REQUIRE(report["time"] == "wall");
	require_tree_sums(report);

	// The task's work is under its creator and in its creator's total.
	json work = path(report, "main;spawn;[task];work"), task = path(report, "main;spawn;[task]");
	json spawn = path(report, "main;spawn"), body = path(report, "thread_body");
	REQUIRE(work["calls"] == 10);
	REQUIRE(task["calls"] == 10);
	require_time(work["self_ns"], 10 * 1000 * kUs, slack);
	require_time(spawn["self_ns"], 10 * 300 * kUs, slack);
	REQUIRE(n(spawn["total_ns"]) == n(spawn["self_ns"]) + n(task["total_ns"]));
	REQUIRE(n(task["total_ns"]) >= n(work["total_ns"]));
	REQUIRE(n(function(report, "spawn")["total_ns"]) == n(spawn["total_ns"]));
	// ...and not in the worker's: thread_body's total is its own work.
	REQUIRE(path(report, "thread_body;[task]").is_null());
	REQUIRE(n(body["total_ns"]) == n(body["self_ns"]) + n(path(report, "thread_body;own")["total_ns"]));
	REQUIRE(path(report, "thread_body;own")["calls"] == 10);
	REQUIRE(path(report, "thread_body")["calls"] == 1);

	// The text reports show the same numbers.
	Output flat = run({e2e::usdtprof(), "report", data});
	Output tree = run({e2e::usdtprof(), "report", data, "--tree", "--min-percent", "0"});
	REQUIRE(flat.status == 0);
	REQUIRE(tree.status == 0);
	for (const char *name : {"spawn", "[task]", "thread_body", "work"}) {
		INFO(name << "\n" << flat.out << tree.out);
		json f = function(report, name);
		require_shown(text_row(flat.out, name, false).total, n(f["total_ns"]));
		require_shown(text_row(flat.out, name, false).self, n(f["self_ns"]));
		require_shown(text_row(tree.out, name, true).total, n(f["total_ns"]));
		REQUIRE(text_row(tree.out, name, true).percent <= 100.0);
	}
	REQUIRE(text_row(tree.out, "[task]", true).total <= text_row(tree.out, "spawn", true).total);

	// Folded: the weights below a frame add up to its total.
	Output folded = run({e2e::usdtprof(), "export", data, "--format", "folded"});
	REQUIRE(folded.status == 0);
	uint64_t under_spawn = 0, under_body = 0, lines = 0;
	std::istringstream in(folded.out);
	for (std::string line; std::getline(in, line); lines++) {
		uint64_t weight = std::stoull(line.substr(line.rfind(' ') + 1));
		if (line.rfind("main;spawn", 0) == 0)
			under_spawn += weight;
		if (line.rfind("thread_body", 0) == 0)
			under_body += weight;
	}
	// Nanoseconds: exactly.
	REQUIRE(lines > 0);
	REQUIRE(under_spawn == n(spawn["total_ns"]));
	REQUIRE(under_body == n(body["total_ns"]));

	// pprof's cum and the metrics' self counters, in every time domain.
	for (const char *time : {"wall", "cpu", "offcpu"}) {
		INFO(time);
		json r = report_in(data, time, true);
		REQUIRE(r["time"] == time);
		require_tree_sums(r);
		REQUIRE(r["tree"].is_array());
		std::string pb = dir + "/p-" + time + ".pb.gz";
		REQUIRE(run({e2e::usdtprof(), "export", data, "--format", "pprof", "--time", time, "-o", pb}).status == 0);
		std::map<std::string, int64_t> cum = pprof_cum(pb);
		for (const json &f : r["functions"]) {
			INFO(f.dump());
			REQUIRE(cum[f["name"]] == int64_t(n(f["total_ns"])));
		}
	}
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile.ok());
	usdtprof::MetricsRegistry metrics;
	metrics.add_interval(usdtprof::compensate(*profile)); // as monitor adds it
	std::string exposition = metrics.render();
	for (const char *name : {"spawn", "[task]", "work", "thread_body"}) {
		std::string key = std::string("usdtprof_function_self_seconds_total{process=\"tasks\",function=\"") + name + "\"} ";
		size_t at = exposition.find(key);
		INFO(exposition);
		REQUIRE(at != std::string::npos);
		double seconds = std::stod(exposition.substr(at + key.size()));
		REQUIRE(std::llround(seconds * 1e9) == int64_t(n(function(report, name)["self_ns"])));
		// The off-CPU part: the report's --time offcpu self time.
		std::string off_key = std::string("usdtprof_function_self_offcpu_seconds_total{process=\"tasks\",function=\"") +
				      name + "\"} ";
		size_t off_at = exposition.find(off_key);
		REQUIRE(off_at != std::string::npos);
		double off_seconds = std::stod(exposition.substr(off_at + off_key.size()));
		REQUIRE(std::llround(off_seconds * 1e9) == int64_t(n(function(report, name)["self_offcpu_ns"])));
	}
}

TEST_CASE("tasks: --time cpu and offcpu put every number in one domain", "[tasks][views][time]")
{
	std::string dir = temp_dir(), data = dir + "/tasks.data";
	Output o = run({e2e::usdtprof(), "record", "-o", data, "--", target("tasks"), "10"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	json wall = report_in(data, "wall"), cpu = report_in(data, "cpu"), off = report_in(data, "offcpu");
	// The domains split wall-clock self time exactly.
	REQUIRE(n(cpu["total_self_ns"]) + n(off["total_self_ns"]) == n(wall["total_self_ns"]));
	for (const json &p : wall["paths"]) {
		std::string stack;
		for (const json &s : p["stack"])
			stack += (stack.empty() ? "" : ";") + s.get<std::string>();
		INFO(stack);
		json c = path(cpu, stack), f = path(off, stack);
		REQUIRE(n(c["self_ns"]) == n(p["self_oncpu_ns"]));
		REQUIRE(n(f["self_ns"]) == n(p["self_offcpu_ns"]));
		REQUIRE(n(c["total_ns"]) + n(f["total_ns"]) == n(p["total_ns"]));
	}
	// main waits for the tasks off the CPU: its on-CPU total is its subtree's
	// on-CPU work, far below its wall-clock total.
	REQUIRE(n(path(cpu, "main")["total_ns"]) < n(path(wall, "main")["total_ns"]));
	REQUIRE(n(path(cpu, "main")["total_ns"]) >= n(path(cpu, "main;spawn;[task];work")["self_ns"]));

	for (const char *time : {"cpu", "offcpu"}) {
		Output tree = run({e2e::usdtprof(), "report", data, "--tree", "--time", time, "--min-percent", "0"});
		REQUIRE(tree.status == 0);
		INFO(tree.out);
		json r = time == std::string("cpu") ? cpu : off;
		for (const char *name : {"main", "spawn", "[task]", "work", "thread_body"}) {
			Row row = text_row(tree.out, name, true);
			REQUIRE(row.percent <= 100.0);
			require_shown(row.total, n(function(r, name)["total_ns"]));
		}
	}
}

TEST_CASE("tasks: the trace names each task's creator; speedscope's totals are the report's", "[tasks][views][trace]")
{
	std::string dir = temp_dir();
	Output o = run({e2e::usdtprof(), "trace", "-o", dir + "/t.json", "--profile", dir + "/t.data", "--", target("tasks"), "10"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	json trace = json::parse(file_text(dir + "/t.json"));
	size_t tasks = 0;
	for (const json &e : trace["traceEvents"])
		if (e["ph"] == "X" && e["name"] == "[task]") {
			REQUIRE(e["args"]["created_in"] == json{"main", "spawn"});
			tasks++;
		}
	REQUIRE(tasks == 10);

	Output s = run({e2e::usdtprof(), "trace", "--format", "speedscope", "-o", dir + "/s.json", "--profile", dir + "/s.data",
			"--", target("tasks"), "10"});
	INFO(s.err);
	REQUIRE(s.status == 0);
	json doc = json::parse(file_text(dir + "/s.json"));
	// Time each frame name is open, over every thread: speedscope's total.
	std::map<std::string, double> open_ns;
	for (const json &profile : doc["profiles"]) {
		std::vector<std::pair<std::string, double>> stack;
		for (const json &e : profile["events"]) {
			std::string name = doc["shared"]["frames"][e["frame"].get<size_t>()]["name"];
			if (e["type"] == "O") {
				stack.push_back({name, e["at"].get<double>()});
				continue;
			}
			REQUIRE(stack.back().first == name);
			bool outermost = true;
			for (size_t i = 0; i + 1 < stack.size(); i++)
				outermost &= stack[i].first != name;
			if (outermost)
				open_ns[name] += e["at"].get<double>() - stack.back().second;
			stack.pop_back();
		}
		REQUIRE(stack.empty());
	}
	json report = report_json(dir + "/s.data", true); // a timeline keeps measured times
	for (const char *name : {"spawn", "[task]", "work", "thread_body", "main"}) {
		INFO(name << " speedscope " << open_ns[name] << " report " << function(report, name)["total_ns"]);
		double total = double(n(function(report, name)["total_ns"]));
		// The trace's timestamps and the profile's sums come from the same
		// probe hits; they differ only by events in flight at the stop.
		REQUIRE(std::abs(open_ns[name] - total) <= 0.01 * total + 50 * kUs);
	}
}
