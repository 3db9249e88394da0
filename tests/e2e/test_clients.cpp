// Our outputs loaded in the real tools people open them with (docs/viewing.md),
// compared with `report --format json` of the same recording: go tool pprof,
// the DevTools Performance panel's trace engine, speedscope in headless
// Chromium, promtool. One recording of each kind serves every check.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"
#include "serve/http.h"

using namespace e2e;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;


void write_text(const std::string &file, const std::string &text)
{
	std::ofstream(file, std::ios::binary) << text;
}

std::string join(const std::vector<std::string> &names)
{
	std::string out;
	for (const std::string &n : names)
		out += (out.empty() ? "" : ";") + n;
	return out;
}

// The report of the times as measured. The timelines (Chrome trace,
// speedscope's evented format) keep measured times; where reports and exports
// take the probes' own cost out, `report --raw` gives the measured ones.
json measured_report(const std::string &data)
{
	return report_json(data, true);
}

// The recordings the checks share, made once per test run.
struct Recordings {
	std::string dir = temp_dir();
	std::string cxx_data = dir + "/clients.data";   // tests/targets/clients.cpp, with tasks and a named thread
	std::string cxx_trace = dir + "/clients.json";  // the same run's Chrome trace
	std::string ss_data = dir + "/speedscope.data";  // another run of it, in speedscope's format
	std::string ss_trace = dir + "/clients.speedscope.json";
	std::string py_data = dir + "/python.data";     // python3.11 with <module>, <lambda>, <dictcomp>, <frozen ...>
};

const Recordings &recordings()
{
	static const Recordings r = [] {
		Recordings r;
		Output t = run({usdtprof(), "trace", "-o", r.cxx_trace, "--profile", r.cxx_data, "--", target("clients"), "8"});
		INFO(t.err);
		REQUIRE(t.status == 0);
		Output s = run({usdtprof(), "trace", "--format", "speedscope", "-o", r.ss_trace, "--profile", r.ss_data, "--",
				target("clients"), "8"});
		INFO(s.err);
		REQUIRE(s.status == 0);
		write_text(r.dir + "/script.py", "squares = {i: i * i for i in range(50)}\n"
						 "inc = lambda x: x + 1\n"
						 "def total(n):\n"
						 "    return sum(map(inc, range(n))) + len(squares)\n"
						 "print(total(200))\n");
		Output p = run({usdtprof(), "record", "-o", r.py_data, "--", "/usr/bin/python3.11", r.dir + "/script.py"});
		INFO(p.err);
		REQUIRE(p.status == 0);
		REQUIRE(p.out == "20150\n");
		return r;
	}();
	return r;
}

// ---------------------------------------------------------------------------------------------
// go tool pprof

// A time pprof shows ("10.07ms", "320.85us", "11ms"): two decimals at most,
// so within 0.005 of its unit of the exact value.
struct Shown {
	double ns, tolerance;
};

Shown pprof_time(const std::string &text)
{
	static const std::regex re(R"(^([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s)?$)");
	std::smatch m;
	INFO("pprof shows " << text);
	REQUIRE(std::regex_match(text, m, re));
	double scale = m[2] == "us" ? 1e3 : m[2] == "ms" ? 1e6 : m[2] == "s" ? 1e9 : 1;
	return {std::stod(m[1]) * scale, 0.005 * scale + 1};
}

void require_shown(const Shown &shown, uint64_t exact)
{
	INFO("pprof " << shown.ns << " report " << exact);
	REQUIRE(std::abs(shown.ns - double(exact)) <= shown.tolerance);
}

Output pprof(const std::vector<std::string> &options, const std::string &file)
{
	std::vector<std::string> argv = {"go", "tool", "pprof"};
	argv.insert(argv.end(), options.begin(), options.end());
	argv.push_back(file);
	Output o = run(argv);
	INFO(argv[3] << ": " << o.err);
	REQUIRE(o.status == 0);
	// Nothing on stderr: no "Main binary filename not available.".
	REQUIRE(o.err.empty());
	return o;
}

// -top, default options: a row per function shown, flat and cum the report's
// self and total; functions whose cum is at most 0.5% of the total are dropped.
void check_top(const std::string &file, const json &report)
{
	Output o = pprof({"-top"}, file);
	static const std::regex row(R"(^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)$)");
	std::set<std::string> shown;
	std::istringstream lines(o.out.substr(o.out.find("flat  flat%")));
	std::string line;
	std::getline(lines, line); // the header
	while (std::getline(lines, line)) {
		std::smatch m;
		INFO(line);
		REQUIRE(std::regex_match(line, m, row));
		json f = function(report, m[3]); // the name intact, or not found
		require_shown(pprof_time(m[1]), f["self_ns"]);
		require_shown(pprof_time(m[2]), f["total_ns"]);
		REQUIRE(shown.insert(m[3]).second); // no two functions merged into one row
	}
	std::set<std::string> expected;
	for (const json &f : report["functions"])
		if (f["total_ns"].get<double>() > 0.005 * report["total_self_ns"].get<double>())
			expected.insert(f["name"].get<std::string>());
	REQUIRE(shown == expected);
}

// -traces: each sample's stack, leaf first, with its value: the report's path and self time.
void check_traces(const std::string &file, const json &report)
{
	Output o = pprof({"-traces"}, file);
	std::set<std::string> shown;
	std::istringstream lines(o.out);
	std::string line, value;
	bool in_traces = false; // past the header
	std::vector<std::string> stack; // leaf first
	auto finish = [&] {
		if (stack.empty())
			return;
		std::vector<std::string> root_first(stack.rbegin(), stack.rend());
		json p = path(report, join(root_first));
		INFO(join(root_first));
		REQUIRE(!p.is_null());
		require_shown(pprof_time(value), p["self_ns"]);
		REQUIRE(shown.insert(join(root_first)).second);
		stack.clear();
	};
	while (std::getline(lines, line)) {
		if (line.starts_with("-----------+")) {
			finish();
			in_traces = true;
			continue;
		}
		if (!in_traces || line.size() < 13 || line[10] == ':')
			continue; // the header, or a label (pid, process)
		if (line.find_first_not_of(' ') < 10) {
			value = line.substr(line.find_first_not_of(' '), 10 - line.find_first_not_of(' '));
			stack = {line.substr(13)};
		} else if (!stack.empty()) {
			stack.push_back(line.substr(13));
		}
	}
	finish();
	std::set<std::string> expected;
	for (const json &p : report["paths"])
		if (p["self_ns"] > 0)
			expected.insert(join(p["stack"].get<std::vector<std::string>>()));
	for (const std::string &s : expected)
		REQUIRE(shown.count(s) == 1);
}

// go tool pprof -raw of a file: each sample's values (calls, self) and
// location ids (leaf first), and each location's function name.
struct RawProfile {
	std::vector<std::pair<std::vector<int64_t>, std::vector<uint64_t>>> samples;
	std::map<uint64_t, std::string> names;

	std::string stack(const std::vector<uint64_t> &leaf_first) const // root first, joined
	{
		std::vector<std::string> stack;
		for (auto id = leaf_first.rbegin(); id != leaf_first.rend(); ++id)
			stack.push_back(names.at(*id));
		return join(stack);
	}
};

RawProfile read_raw(const std::string &file)
{
	Output o = pprof({"-raw"}, file);
	std::istringstream lines(o.out);
	std::string line;
	RawProfile raw;
	static const std::regex sample(R"(^\s+(\d+)\s+(\d+)(?:\s+\d+)*: ([\d ]+?)\s*$)");
	// "ID: 0x0 M=1 NAME FILE:LINE s=START_LINE(SYSTEM_NAME)": a file has no
	// space here, but Python's "<frozen importlib._bootstrap>".
	static const std::regex location(R"(^\s+(\d+): 0x0 M=1 (.*?) (<frozen [^>]*>|\S*):(\d+) s=(\d+)(\(.*\))?$)");
	while (std::getline(lines, line)) {
		std::smatch m;
		if (std::regex_match(line, m, sample)) {
			std::vector<uint64_t> ids;
			std::istringstream in(m[3].str());
			for (uint64_t id; in >> id;)
				ids.push_back(id);
			raw.samples.push_back({{std::stoll(m[1]), std::stoll(m[2])}, ids});
		} else if (std::regex_match(line, m, location)) {
			raw.names[std::stoull(m[1])] = m[2];
		}
	}
	return raw;
}

// -raw: the exact values of every sample, and every function's name.
void check_raw(const std::string &file, const json &report)
{
	RawProfile raw = read_raw(file);
	std::set<std::string> functions, report_functions;
	for (const auto &[id, name] : raw.names)
		functions.insert(name);
	for (const json &f : report["functions"])
		report_functions.insert(f["name"].get<std::string>());
	REQUIRE(functions == report_functions);
	size_t expected = 0;
	for (const json &p : report["paths"])
		expected += p["calls"] > 0 || p["self_ns"] > 0;
	REQUIRE(raw.samples.size() == expected);
	for (const auto &[values, ids] : raw.samples) {
		INFO(raw.stack(ids));
		json p = path(report, raw.stack(ids));
		REQUIRE(!p.is_null());
		REQUIRE(values[0] == p["calls"].get<int64_t>());
		REQUIRE(values[1] == p["self_ns"].get<int64_t>());
	}
}

void check_pprof(const std::string &pb, const json &report)
{
	check_top(pb, report);
	check_traces(pb, report);
	check_raw(pb, report);
}

} // namespace

TEST_CASE("clients: go tool pprof shows a C++ profile with its template names intact and the report's values",
	  "[clients][pprof]")
{
	const Recordings &r = recordings();
	std::string pb = r.dir + "/clients.pb.gz";
	REQUIRE(run({usdtprof(), "export", r.cxx_data, "--format", "pprof", "-o", pb}).status == 0);
	json report = report_json(r.cxx_data);
	// Names pprof's C++ clean-up would rewrite (Worker::operator) or merge (Box::get).
	REQUIRE(function(report, "app::detail::Worker<T, N>::operator()")["calls"] == 8);
	REQUIRE(function(report, "Box<int>::get")["calls"] == 8);
	REQUIRE(function(report, "Box<long>::get")["calls"] == 8);
	check_pprof(pb, report);
	// The profiled program is named, as pprof's header shows it.
	REQUIRE_THAT(pprof({"-top"}, pb).out, Catch::Matchers::StartsWith("File: clients\n"));
}

TEST_CASE("clients: go tool pprof reads a 20,000-path export, written sample by sample, with every path's exact "
	  "values",
	  "[clients][pprof][scale]")
{
	std::string dir = temp_dir(), data = dir + "/large.data", pb = dir + "/large.pb.gz";
	std::string gen = (fs::path(usdtprof()).parent_path() / "tools" / "gen_profile").string();
	Output g = run({gen, "--paths", "20000", "--depth", "40", "-o", data});
	INFO(g.err);
	REQUIRE(g.status == 0);
	REQUIRE(run({usdtprof(), "export", data, "--format", "pprof", "-o", pb}).status == 0);
	json report = report_json(data);
	RawProfile raw = read_raw(pb);
	// Calls and self time per stack: the report merges a process's paths by
	// name, pprof keeps each path a sample.
	std::map<std::string, std::pair<int64_t, int64_t>> shown;
	for (const auto &[values, ids] : raw.samples) {
		auto &[calls, self] = shown[raw.stack(ids)];
		calls += values[0];
		self += values[1];
	}
	size_t expected = 0;
	int64_t total_self = 0;
	for (const json &p : report["paths"]) {
		if (p["calls"] == 0 && p["self_ns"] == 0)
			continue;
		expected++;
		std::string stack = join(p["stack"].get<std::vector<std::string>>());
		INFO(stack);
		REQUIRE(shown.count(stack) == 1);
		REQUIRE(shown[stack].first == p["calls"].get<int64_t>());
		REQUIRE(shown[stack].second == p["self_ns"].get<int64_t>());
		total_self += p["self_ns"].get<int64_t>();
	}
	REQUIRE(expected > 15000);
	REQUIRE(shown.size() == expected); // no stack pprof shows that the report has not
	REQUIRE(total_self == report["total_self_ns"].get<int64_t>());
}

TEST_CASE("clients: go tool pprof keeps Python's <module>, <lambda>, <dictcomp> and <frozen ...> names apart",
	  "[clients][pprof]")
{
	const Recordings &r = recordings();
	std::string pb = r.dir + "/python.pb.gz";
	REQUIRE(run({usdtprof(), "export", r.py_data, "--format", "pprof", "-o", pb}).status == 0);
	json report = report_json(r.py_data);
	REQUIRE(function(report, "script.py:<module>")["calls"] == 1);
	REQUIRE(function(report, "script.py:<lambda>:2")["calls"] == 200);
	REQUIRE(function(report, "script.py:<dictcomp>:1")["calls"] == 1);
	size_t frozen_modules = 0;
	for (const json &f : report["functions"])
		frozen_modules += f["name"].get<std::string>().starts_with("<frozen ") &&
				  f["name"].get<std::string>().ends_with(">:<module>");
	REQUIRE(frozen_modules >= 10);
	check_pprof(pb, report);
}

TEST_CASE("clients: go tool pprof reads the export of an old build's profile with the old build's own times",
	  "[clients][pprof][old-profiles]")
{
	std::string dir = temp_dir();
	size_t files = 0;
	for (const auto &e : fs::directory_iterator(source_file("tests/fixtures/old-profiles"))) {
		if (e.path().extension() != ".data")
			continue;
		std::string data = e.path().string(), pb = dir + "/" + e.path().stem().string() + ".pb.gz";
		INFO(data);
		REQUIRE(run({usdtprof(), "export", data, "--format", "pprof", "-o", pb}).status == 0);
		// The report of today is the old build's (test_old_profiles.cpp); pprof shows it.
		std::ifstream in(e.path().parent_path() / (e.path().stem().string() + ".report.json"));
		json old = json::parse(in), report = report_json(data);
		REQUIRE(report["total_self_ns"] == old["total_self_ns"]);
		check_pprof(pb, report);
		files++;
	}
	REQUIRE(files >= 3);
}

TEST_CASE("clients: the DevTools trace engine loads the trace with no mismatch: names, self times, flows",
	  "[clients][trace]")
{
	const Recordings &r = recordings();
	Output o = run({"node", source_file("tests/clients/trace_engine.mjs"), r.cxx_trace});
	INFO(o.err);
	REQUIRE(o.status == 0);
	json engine = json::parse(o.out);
	INFO(engine.dump());
	// No "Begin/End events mismatch", nor any other complaint.
	REQUIRE(engine["messages"].empty());
	std::set<std::string> threads;
	for (const auto &[key, name] : engine["threads"].items())
		threads.insert(name.get<std::string>());
	REQUIRE(threads == std::set<std::string>{"clients", "clients-worker"});
	// Self time per name, summed over threads: the profile's (its ns are the
	// trace's microseconds with three decimals; each slice's subtraction in
	// doubles may add an ulp).
	json report = measured_report(r.cxx_data);
	REQUIRE(engine["self"].size() == report["functions"].size());
	for (const json &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		REQUIRE(engine["slices"][name] == f["calls"]);
		double self_ns = engine["self"][name].get<double>() * 1000;
		REQUIRE(std::abs(self_ns - f["self_ns"].get<double>()) <= 0.001 * f["calls"].get<double>() + 1);
	}
	// An arrow per task, from its creation on the main thread to its run on the worker.
	REQUIRE(engine["flows"].size() == 8);
	for (const json &flow : engine["flows"]) {
		REQUIRE(flow.size() == 2);
		REQUIRE(flow[0]["name"] == "task created");
		REQUIRE(flow[1]["name"] == "[task]");
		REQUIRE(flow[0]["tid"] != flow[1]["tid"]);
		REQUIRE(flow[0]["ts"] <= flow[1]["ts"]);
	}
}

TEST_CASE("clients: folded stacks lose no time, come depth first, and an empty profile is one error line",
	  "[clients][folded]")
{
	const Recordings &r = recordings();
	std::string folded = r.dir + "/clients.folded";
	REQUIRE(run({usdtprof(), "export", r.cxx_data, "--format", "folded", "-o", folded}).status == 0);
	json report = report_json(r.cxx_data);
	std::ifstream in(folded);
	uint64_t sum = 0;
	std::vector<std::string> stacks;
	for (std::string line; std::getline(in, line);) {
		size_t sp = line.rfind(' ');
		REQUIRE(sp != std::string::npos);
		std::string stack = line.substr(0, sp);
		uint64_t weight = std::stoull(line.substr(sp + 1));
		INFO(line);
		// Nanoseconds: each weight is its path's self time.
		REQUIRE(weight == path(report, stack)["self_ns"].get<uint64_t>());
		sum += weight;
		stacks.push_back(stack);
	}
	REQUIRE(sum == report["total_self_ns"].get<uint64_t>());
	// Depth first: the lines under a frame are contiguous, so no prefix comes back once left.
	std::set<std::string> left;
	for (size_t i = 0; i < stacks.size(); i++) {
		for (size_t cut = 0; cut != std::string::npos; cut = stacks[i].find(';', cut + 1)) {
			std::string prefix = stacks[i].substr(0, cut == 0 ? stacks[i].find(';') : cut);
			INFO(stacks[i] << " comes back to " << prefix);
			REQUIRE(left.count(prefix) == 0);
		}
		if (i + 1 < stacks.size())
			for (size_t cut = 0; cut != std::string::npos; cut = stacks[i].find(';', cut + 1)) {
				std::string prefix = stacks[i].substr(0, cut == 0 ? stacks[i].find(';') : cut);
				if (!(stacks[i + 1] + ";").starts_with(prefix + ";"))
					left.insert(prefix);
			}
	}

	// A profile in which nothing was called: one line, exit status 1, no file.
	Background idle({target("nested"), "--wait", "1"});
	idle.wait_for_line("ready");
	std::string empty = r.dir + "/empty.data";
	REQUIRE(run({usdtprof(), "record", "-p", std::to_string(idle.pid()), "-d", "0.3", "-o", empty}).status == 0);
	kill(idle.pid(), SIGKILL);
	Output o = run({usdtprof(), "export", empty, "--format", "folded", "-o", r.dir + "/empty.folded"});
	REQUIRE(o.status == 1);
	REQUIRE(o.err == "usdtprof: " + empty + ": no call path has any time: no folded stacks to write\n");
	REQUIRE(!fs::exists(r.dir + "/empty.folded"));
}

// ---------------------------------------------------------------------------------------------
// speedscope

// A time speedscope shows: "15.06ms", "830.85µs" (two decimals), or a folded
// weight as is, "23,852,634".
Shown speedscope_value(const std::string &text)
{
	static const std::regex re(R"(^([0-9][0-9,]*(?:\.[0-9]+)?)(ns|µs|ms|s)?$)");
	std::smatch m;
	INFO("speedscope shows " << text);
	REQUIRE(std::regex_match(text, m, re));
	std::string digits = m[1];
	digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
	if (!m[2].matched)
		return {std::stod(digits), 0};
	double scale = m[2] == "µs" ? 1e3 : m[2] == "ms" ? 1e6 : m[2] == "s" ? 1e9 : 1;
	return {std::stod(digits) * scale, 0.005 * scale + 1};
}

TEST_CASE("clients: speedscope in headless Chromium imports folded, pprof, speedscope and Chrome JSON with no warning",
	  "[clients][speedscope]")
{
	const Recordings &r = recordings();
	std::string folded = r.dir + "/clients.folded", pb = r.dir + "/clients.pb.gz";
	REQUIRE(run({usdtprof(), "export", r.cxx_data, "--format", "folded", "-o", folded}).status == 0);
	REQUIRE(run({usdtprof(), "export", r.cxx_data, "--format", "pprof", "-o", pb}).status == 0);
	// The screenshots are kept: .output/test-artifacts/speedscope/NAME.png.
	std::string shots = (fs::path(usdtprof()).parent_path() / "test-artifacts" / "speedscope").string();
	fs::create_directories(shots);
	Output o = run({"node", source_file("tests/clients/speedscope.mjs"), shots, folded, pb, r.cxx_trace, r.ss_trace});
	INFO(o.err);
	REQUIRE(o.status == 0);
	json report = report_json(r.cxx_data), raw_report = measured_report(r.cxx_data), ss_report = measured_report(r.ss_data);
	std::istringstream lines(o.out);
	size_t files = 0;
	for (std::string line; std::getline(lines, line); files++) {
		json shown = json::parse(line);
		std::string file = shown["file"];
		INFO(shown.dump());
		REQUIRE(shown["messages"].empty()); // no "Tried to end ..." nor any other warning
		REQUIRE(fs::file_size(shots + "/" + fs::path(file).filename().string() + ".png") > 0);
		// folded and pprof: one profile of every thread; the traces: the
		// first thread's (main's) track, whose inclusive times leave out the
		// tasks it handed to the worker.
		bool whole = file == folded || file == pb;
		const json &truth = file == r.ss_trace ? ss_report : file == r.cxx_trace ? raw_report : report;
		REQUIRE(shown["rows"].size() == (whole ? truth["functions"].size() : 5));
		for (const json &row : shown["rows"]) {
			json f = function(truth, row["name"]); // the name intact
			Shown self = speedscope_value(row["self"]);
			INFO(row.dump() << " report " << f.dump());
			REQUIRE(std::abs(self.ns - f["self_ns"].get<double>()) <= self.tolerance);
			if (whole) {
				Shown total = speedscope_value(row["total"]);
				REQUIRE(std::abs(total.ns - f["total_ns"].get<double>()) <= total.tolerance);
			}
		}
	}
	REQUIRE(files == 4);
}

// ---------------------------------------------------------------------------------------------
// monitor: an interval's pprof in go tool pprof, the live /metrics in promtool

TEST_CASE("clients: go tool pprof reads a monitor interval as its report; promtool lints the live /metrics clean",
	  "[clients][pprof][monitor]")
{
	std::string dir = temp_dir() + "/intervals";
	Background t({target("clients"), "100000"});
	Background mon({usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.3", "--budget", "1", "-o", dir,
			"--listen", "127.0.0.1:0"});
	std::string listening = mon.wait_for_line("metrics at", true);
	std::smatch port;
	REQUIRE(std::regex_search(listening, port, std::regex(":([0-9]+)/metrics")));
	// Two intervals written: the metrics have every series by then.
	auto pprofs = [&dir] {
		std::vector<std::string> files;
		if (fs::exists(dir))
			for (const auto &e : fs::directory_iterator(dir))
				if (e.path().string().ends_with(".pb.gz"))
					files.push_back(e.path().string());
		std::sort(files.begin(), files.end());
		return files;
	};
	for (int i = 0; i < 300 && pprofs().size() < 2; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	REQUIRE(pprofs().size() >= 2);

	httplib::Client http("127.0.0.1", std::stoi(port[1]));
	auto res = http.Get("/metrics");
	REQUIRE(res);
	REQUIRE(res->status == 200);
	require_promtool_clean(res->body);
	REQUIRE_THAT(res->body, Catch::Matchers::Contains("function=\"app::detail::Worker<T, N>::operator()\""));

	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	kill(t.pid(), SIGKILL);
	t.wait();
	// The first complete interval, with its .data twin.
	std::string pb = pprofs()[1];
	std::string data = pb.substr(0, pb.size() - 6) + ".data";
	REQUIRE(fs::exists(data));
	json report = report_json(data);
	INFO(pb);
	REQUIRE(function(report, "Box<long>::get")["calls"] > 0);
	check_pprof(pb, report);
}

// ---------------------------------------------------------------------------------------------
// Spans on the timelines: python3.11's collections (--span gc__start/gc__done), attached after
// start-up (-p) and stopped before the exit, as the script counts and times them itself through
// gc.callbacks (run just before gc__start and just after gc__done). Two rounds of 8 collections:
// one traced as Chrome JSON, one as speedscope's.

namespace {

const char kGcSpan[] = "python:gc__start/gc__done";

struct GcRound {
	uint64_t count = 0, total_ns = 0; // as the script measured
	json span;                        // the --profile's span, as report JSON gives it
};

GcRound traced_gc_round(Background &py, const std::string &format, const std::string &out, const std::string &data)
{
	size_t from = py.stdout_size();
	Background tracer({usdtprof(), "trace", "-p", std::to_string(py.pid()), "--span", kGcSpan, "--format", format,
			   "-o", out, "--profile", data});
	tracer.wait_for_line("recording", true);
	REQUIRE(kill(py.pid(), SIGUSR1) == 0);
	std::istringstream said(py.wait_for_line_from(from, " "));
	REQUIRE(kill(tracer.pid(), SIGINT) == 0);
	INFO(tracer.rest_of_stderr());
	REQUIRE(tracer.wait() == 0);
	GcRound r;
	REQUIRE(said >> r.count >> r.total_ns);
	json report = report_json(data);
	INFO(report["spans"].dump());
	REQUIRE(report["spans"].size() == 1);
	r.span = report["spans"][0];
	REQUIRE(r.span["name"] == kGcSpan);
	REQUIRE(r.span["count"] == r.count);
	REQUIRE(r.span["open"] == 0);
	return r;
}

} // namespace

TEST_CASE("clients: spans on the timelines: a track of their own in the DevTools trace engine and speedscope, "
	  "left out of folded stacks",
	  "[clients][trace][spans]")
{
	std::string dir = temp_dir();
	Background py({"/usr/bin/python3.11", source_file("tests/runtimes/gcspan.py"), "50000", "2"});
	py.wait_for_line("ready");
	std::string chrome = dir + "/gc.json", chrome_data = dir + "/gc.data";
	std::string ss = dir + "/gc.speedscope.json", ss_data = dir + "/gc-ss.data";
	GcRound first = traced_gc_round(py, "chrome", chrome, chrome_data);
	GcRound second = traced_gc_round(py, "speedscope", ss, ss_data);
	REQUIRE(kill(py.pid(), SIGUSR1) == 0);
	REQUIRE(py.wait() == 0);
	REQUIRE(first.count == 8);
	REQUIRE(second.count == 8);
	const std::string label = std::string("[span ") + kGcSpan + "]";

	// Chrome JSON: the spans on a track of their own (a thread of the process, tid from 2^30),
	// each inside its collection: after the callback before it, before the callback after it.
	json trace = json::parse(std::ifstream(chrome));
	uint64_t span_tid = 0;
	std::string span_thread;
	for (const json &e : trace["traceEvents"])
		if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"].get<std::string>().starts_with(label)) {
			REQUIRE(span_tid == 0);
			span_tid = e["tid"];
			span_thread = e["args"]["name"];
		}
	REQUIRE(span_tid >= (1u << 30));
	REQUIRE_THAT(span_thread, Catch::Matchers::Matches(std::regex_replace(label, std::regex(R"([\[\]])"), R"(\$&)") +
							     R"( python3\.11 \(tid [0-9]+\))"));
	std::vector<std::pair<double, double>> spans, callbacks; // begin, end (us)
	double span_us = 0;
	for (const json &e : trace["traceEvents"]) {
		if (e["ph"] != "X")
			continue;
		double begin = e["ts"], end = begin + e["dur"].get<double>();
		if (e["tid"] == span_tid) {
			REQUIRE(e["name"] == label);
			REQUIRE(e["cat"] == "span");
			REQUIRE(e["args"]["span"] == kGcSpan);
			REQUIRE_FALSE(e["args"].contains("open"));
			spans.push_back({begin, end});
			span_us += e["dur"].get<double>();
		} else {
			REQUIRE(e["name"] != label);
			if (e["name"] == "gcspan.py:timed")
				callbacks.push_back({begin, end});
		}
	}
	REQUIRE(spans.size() == 8);
	REQUIRE(callbacks.size() == 16);
	std::sort(spans.begin(), spans.end());
	std::sort(callbacks.begin(), callbacks.end());
	for (size_t i = 0; i < spans.size(); i++) {
		INFO(i);
		REQUIRE(callbacks[2 * i].second <= spans[i].first);
		REQUIRE(spans[i].second <= callbacks[2 * i + 1].first);
	}
	// The slices add up to the profile's total (the same kernel times), within the script's.
	uint64_t first_total = first.span["total_ns"];
	REQUIRE(std::abs(span_us * 1000 - double(first_total)) <= 8 * 0.01 + 1);
	REQUIRE(first_total <= first.total_ns);
	REQUIRE(trace["otherData"]["span_restarts"] == 0);
	REQUIRE(trace["otherData"]["unmatched_span_ends"] == 0);

	// The DevTools trace engine: no complaint, the track's thread, 8 slices whose self time is the total.
	Output o = run({"node", source_file("tests/clients/trace_engine.mjs"), chrome});
	INFO(o.err);
	REQUIRE(o.status == 0);
	json engine = json::parse(o.out);
	INFO(engine.dump());
	REQUIRE(engine["messages"].empty());
	bool track = false;
	for (const auto &[key, name] : engine["threads"].items())
		track |= key.ends_with("/" + std::to_string(span_tid)) && name == span_thread;
	REQUIRE(track);
	REQUIRE(engine["slices"][label] == 8);
	REQUIRE(std::abs(engine["self"][label].get<double>() * 1000 - double(first_total)) <= 8 * 0.01 + 1);
	REQUIRE(engine["slices"]["gcspan.py:collect"] == 8);

	// speedscope: the span's profile comes after its thread's; opened (as a user picks it top
	// centre: activeProfileIndex), its Sandwich view is one row, the span, its total the profile's.
	json evented = json::parse(std::ifstream(ss));
	std::vector<std::string> profiles;
	for (const json &p : evented["profiles"])
		profiles.push_back(p["name"]);
	REQUIRE(profiles.size() == 2);
	REQUIRE_THAT(profiles[0], Catch::Matchers::Matches(R"(python3\.11 \(tid [0-9]+\))"));
	REQUIRE(profiles[1] == label + " " + profiles[0]);
	std::string ss_span = dir + "/gc-span.speedscope.json";
	evented["activeProfileIndex"] = 1;
	write_text(ss_span, evented.dump());
	std::string shots = (fs::path(usdtprof()).parent_path() / "test-artifacts" / "speedscope").string();
	fs::create_directories(shots);
	Output shown = run({"node", source_file("tests/clients/speedscope.mjs"), shots, ss, ss_span});
	INFO(shown.err);
	REQUIRE(shown.status == 0);
	std::istringstream lines(shown.out);
	std::vector<json> views;
	for (std::string line; std::getline(lines, line);)
		views.push_back(json::parse(line));
	REQUIRE(views.size() == 2);
	for (const json &v : views) {
		INFO(v.dump());
		REQUIRE(v["messages"].empty());
	}
	// The thread's own profile: its calls, no span.
	bool collect_row = false;
	for (const json &row : views[0]["rows"]) {
		REQUIRE_THAT(row["name"].get<std::string>(), !Catch::Matchers::Contains("[span"));
		collect_row |= row["name"] == "gcspan.py:collect";
	}
	REQUIRE(collect_row);
	REQUIRE(views[1]["rows"].size() == 1);
	REQUIRE(views[1]["rows"][0]["name"] == label);
	Shown total = speedscope_value(views[1]["rows"][0]["total"]);
	REQUIRE(std::abs(total.ns - second.span["total_ns"].get<double>()) <= total.tolerance);
	REQUIRE(second.span["total_ns"].get<uint64_t>() <= second.total_ns);

	// Folded stacks leave the span out and say so.
	Output folded = run({usdtprof(), "export", chrome_data, "--format", "folded"});
	REQUIRE(folded.status == 0);
	REQUIRE_THAT(folded.err, Catch::Matchers::Contains(std::string("folded stacks leave out the profile's 1 span (") +
								 kGcSpan + "): their time is on the call tree already"));
	REQUIRE_THAT(folded.out, Catch::Matchers::Contains("gcspan.py:collect"));
	REQUIRE_THAT(folded.out, !Catch::Matchers::Contains("gc__"));
}
