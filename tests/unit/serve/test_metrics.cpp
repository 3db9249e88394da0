#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/http.h"

#include "serve/metrics.h"
#include "serve/metrics_server.h"

using namespace usdtprof;

namespace {

// One interval: functions[], processes[] and, per (pid, function, self_ns, calls), a node.
struct NodeSpec {
	int32_t pid;
	uint32_t function;
	uint64_t self_ns;
	uint64_t calls;
};

Profile interval(std::vector<std::string> functions, std::vector<ProfileProcess> processes,
		 const std::vector<NodeSpec> &nodes)
{
	Profile p;
	p.functions = std::move(functions);
	p.processes = std::move(processes);
	for (const NodeSpec &n : nodes) {
		PathNode node;
		node.parent = kNoParent;
		node.function = n.function;
		node.pid = n.pid;
		node.calls = n.calls;
		node.self_ns = n.self_ns;
		node.total_ns = n.self_ns;
		p.nodes.push_back(node);
	}
	return p;
}

std::vector<std::string> lines_of(const std::string &text)
{
	std::vector<std::string> lines;
	std::istringstream in(text);
	for (std::string line; std::getline(in, line);)
		lines.push_back(line);
	return lines;
}

bool has_line(const std::string &text, const std::string &line)
{
	for (const std::string &l : lines_of(text))
		if (l == line)
			return true;
	return false;
}

std::string self_line(const std::string &process, const std::string &function, const std::string &value)
{
	return "usdtprof_function_self_seconds_total{process=\"" + process + "\",function=\"" + function +
	       "\"} " + value;
}

std::string calls_line(const std::string &process, const std::string &function, const std::string &value)
{
	return "usdtprof_function_calls_total{process=\"" + process + "\",function=\"" + function + "\"} " +
	       value;
}

// Every line is a comment (# HELP / # TYPE) or a sample of the text format 0.0.4,
// and every sample's family was declared before it with HELP and TYPE.
void check_exposition_format(const std::string &text)
{
	REQUIRE(!text.empty());
	REQUIRE(text.back() == '\n');
	static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
	static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge))");
	static const std::regex sample(
		R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\\\|\\"|\\n)*",?)*\})? ([-+]?[0-9.eE+-]+|NaN|[+-]Inf))");
	std::string helped, typed;
	for (const std::string &line : lines_of(text)) {
		std::smatch m;
		INFO(line);
		if (std::regex_match(line, m, help)) {
			helped = m[1];
		} else if (std::regex_match(line, m, type)) {
			typed = m[1];
			CHECK(typed == helped);
		} else {
			REQUIRE(std::regex_match(line, m, sample));
			CHECK(m[1] == typed);
		}
	}
}

} // namespace

TEST_CASE("metrics: HELP and TYPE for every metric, in the text format")
{
	MetricsRegistry registry;
	registry.add_interval(interval({"main", "work"}, {{100, "app", {}}},
				       {{100, 0, 1500000000, 1}, {100, 1, 2000, 10}}));
	std::string text = registry.render();
	check_exposition_format(text);
	const std::vector<std::pair<std::string, std::string>> families = {
		{"usdtprof_function_self_seconds_total", "counter"},
		{"usdtprof_function_self_offcpu_seconds_total", "counter"},
		{"usdtprof_function_calls_total", "counter"},
		{"usdtprof_probe_hits_total", "counter"},
		{"usdtprof_anomalies_total", "counter"},
		{"usdtprof_dropped_paths_total", "counter"},
		{"usdtprof_intervals_total", "counter"},
		{"usdtprof_profiled_cpu_seconds_total", "counter"},
		{"usdtprof_probe_cost_seconds_total", "counter"},
		{"usdtprof_fixed_cost_seconds_total", "counter"},
		{"usdtprof_duty_cycle", "gauge"},
		{"usdtprof_estimated_overhead_ratio", "gauge"},
	};
	for (const auto &[name, type] : families) {
		INFO(name);
		CHECK(text.find("# HELP " + name + " ") != std::string::npos);
		CHECK(has_line(text, "# TYPE " + name + " " + type));
	}
	CHECK(has_line(text, self_line("app", "main", "1.5")));
	CHECK(has_line(text, self_line("app", "work", "0.000002")));
	CHECK(has_line(text, calls_line("app", "main", "1")));
	CHECK(has_line(text, calls_line("app", "work", "10")));
	CHECK(has_line(text, "usdtprof_probe_hits_total 0"));
	CHECK(has_line(text, "usdtprof_duty_cycle 0"));
}

TEST_CASE("metrics: a process in a container has its container_id label, its namesake on the host none")
{
	MetricsRegistry registry;
	ProfileProcess host{.pid = 100, .comm = "srv"};
	ProfileProcess boxed{.pid = 200, .comm = "srv"};
	boxed.container_runtime = "docker";
	boxed.container_id = std::string(12, 'a') + std::string(52, 'b');
	registry.add_interval(interval({"work"}, {host, boxed}, {{100, 0, 1000000000, 3}, {200, 0, 2000000000, 5}}));
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, self_line("srv", "work", "1")));
	CHECK(has_line(text, "usdtprof_function_self_seconds_total{process=\"srv\",container_id=\"aaaaaaaaaaaa\","
			     "function=\"work\"} 2"));
	CHECK(has_line(text, "usdtprof_function_calls_total{process=\"srv\",container_id=\"aaaaaaaaaaaa\","
			     "function=\"work\"} 5"));
	CHECK(registry.series_count() == 2);
}

TEST_CASE("metrics: an empty registry still renders valid families")
{
	MetricsRegistry registry;
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(text.find("usdtprof_function_calls_total{") == std::string::npos);
	CHECK(has_line(text, "# TYPE usdtprof_function_calls_total counter"));
	CHECK(registry.series_count() == 0);
}

TEST_CASE("metrics: label values are escaped")
{
	MetricsRegistry registry;
	registry.add_interval(interval({"say \"hi\"\\n\nnext", "ok"}, {{7, "we\"ird\\comm", {}}},
				       {{7, 0, 1000000000, 2}, {7, 1, 1, 1}}));
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, self_line("we\\\"ird\\\\comm", "say \\\"hi\\\"\\\\n\\nnext", "1")));
	CHECK(has_line(text, calls_line("we\\\"ird\\\\comm", "say \\\"hi\\\"\\\\n\\nnext", "2")));

	CHECK(prometheus_label_escape("plain") == "plain");
	CHECK(prometheus_label_escape("a\\b") == "a\\\\b");
	CHECK(prometheus_label_escape("\"") == "\\\"");
	CHECK(prometheus_label_escape("\n") == "\\n");
	// Valid UTF-8 is kept, invalid bytes become U+FFFD.
	CHECK(prometheus_label_escape("caf\xc3\xa9") == "caf\xc3\xa9");
	CHECK(prometheus_label_escape("bad\xff") == "bad\xef\xbf\xbd");
	CHECK(prometheus_label_escape("\xc3") == "\xef\xbf\xbd");
	CHECK(prometheus_label_escape("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); // surrogate
}

TEST_CASE("metrics: counters accumulate across intervals and over call paths")
{
	MetricsRegistry registry;
	// Two call paths of f in one interval, and two pids of the same comm.
	registry.add_interval(interval({"f", "g"}, {{1, "srv", {}}, {2, "srv", {}}},
				       {{1, 0, 100, 1}, {1, 0, 200, 2}, {2, 0, 300, 3}, {1, 1, 5, 1}}));
	std::string text = registry.render();
	CHECK(has_line(text, self_line("srv", "f", "0.0000006")));
	CHECK(has_line(text, calls_line("srv", "f", "6")));

	registry.add_interval(interval({"g", "f"}, {{1, "srv", {}}}, {{1, 1, 999999400, 4}, {1, 0, 0, 0}}));
	text = registry.render();
	CHECK(has_line(text, self_line("srv", "f", "1")));
	CHECK(has_line(text, calls_line("srv", "f", "10")));
	CHECK(has_line(text, self_line("srv", "g", "0.000000005")));
	CHECK(has_line(text, calls_line("srv", "g", "1")));
	CHECK(registry.series_count() == 2);

	// A pid missing from processes[] is reported as [unknown]; bad function indexes are skipped.
	registry.add_interval(interval({"f"}, {}, {{9, 0, 1000, 1}, {9, 5, 1000, 1}}));
	text = registry.render();
	CHECK(has_line(text, calls_line("[unknown]", "f", "1")));
	CHECK(registry.series_count() == 3);
	check_exposition_format(text);
}

TEST_CASE("metrics: top-N series are sticky, later pairs go to the process's [other]")
{
	MetricsRegistry registry(2);
	// Within an interval the heaviest new pairs take the free series.
	registry.add_interval(interval({"light", "heavy", "medium"}, {{1, "app", {}}},
				       {{1, 0, 100, 1}, {1, 1, 300, 1}, {1, 2, 200, 1}}));
	std::string text = registry.render();
	CHECK(has_line(text, self_line("app", "heavy", "0.0000003")));
	CHECK(has_line(text, self_line("app", "medium", "0.0000002")));
	CHECK(has_line(text, self_line("app", "[other]", "0.0000001")));
	CHECK(text.find("function=\"light\"") == std::string::npos);
	CHECK(registry.series_count() == 3);

	// Later: "light" stays in [other] even when it is now the heaviest, the
	// named series keep accumulating (even when idle they do not vanish),
	// and another process's new pair gets that process's own [other].
	registry.add_interval(interval({"light", "medium", "new"}, {{1, "app", {}}, {2, "db", {}}},
				       {{1, 0, 10000, 5}, {1, 1, 1000, 1}, {2, 2, 50, 1}}));
	text = registry.render();
	CHECK(has_line(text, self_line("app", "heavy", "0.0000003")));
	CHECK(has_line(text, self_line("app", "medium", "0.0000012")));
	CHECK(has_line(text, self_line("app", "[other]", "0.0000101")));
	CHECK(has_line(text, calls_line("app", "[other]", "6")));
	CHECK(has_line(text, self_line("db", "[other]", "0.00000005")));
	CHECK(text.find("function=\"light\"") == std::string::npos);
	CHECK(text.find("function=\"new\"") == std::string::npos);
	CHECK(registry.series_count() == 4);
	check_exposition_format(text);
}

TEST_CASE("metrics: distinct process names past the cap share one [other] series")
{
	MetricsRegistry registry(1, 3);
	registry.add_interval(interval({"main"}, {{1, "app", {}}}, {{1, 0, 100, 1}}));
	// A target renaming itself for every interval: 1000 process names.
	for (int i = 0; i < 1000; i++) {
		CHECK(registry.other_processes_full() == (i > 3));
		registry.add_interval(interval({"f"}, {{2, "name" + std::to_string(i), {}}}, {{2, 0, 10, 1}}));
	}
	std::string text = registry.render();
	CHECK(registry.series_count() == 1 + 3 + 1);
	CHECK(has_line(text, calls_line("name0", "[other]", "1")));
	CHECK(has_line(text, calls_line("name2", "[other]", "1")));
	CHECK(text.find("process=\"name3\"") == std::string::npos);
	CHECK(has_line(text, calls_line("[other]", "[other]", "997")));
	// A process that has its [other] series keeps it.
	registry.add_interval(interval({"g"}, {{2, "name1", {}}}, {{2, 0, 10, 4}}));
	CHECK(has_line(registry.render(), calls_line("name1", "[other]", "5")));
	check_exposition_format(text);
}

namespace {

std::string pid_calls_line(const std::string &process, const std::string &pid, const std::string &function,
			   const std::string &value)
{
	return "usdtprof_function_calls_total{process=\"" + process + "\",pid=\"" + pid + "\",function=\"" +
	       function + "\"} " + value;
}

std::set<int> gone_pids;
bool alive_unless_gone(int pid) { return !gone_pids.count(pid); }

} // namespace

TEST_CASE("metrics: pid labels for the heaviest processes while they live, \"other\" for the rest")
{
	gone_pids.clear();
	MetricsRegistry registry(MetricsRegistry::kDefaultTopN, MetricsRegistry::kDefaultOtherProcesses, 2);
	// Three workers of one name: the two heaviest of the interval take the labels.
	registry.add_interval(interval({"f"}, {{1, "srv", {}}, {2, "srv", {}}, {3, "srv", {}}},
				       {{1, 0, 100, 1}, {2, 0, 300, 2}, {3, 0, 200, 3}}),
			      alive_unless_gone);
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, pid_calls_line("srv", "2", "f", "2")));
	CHECK(has_line(text, pid_calls_line("srv", "3", "f", "3")));
	CHECK(has_line(text, pid_calls_line("srv", "other", "f", "1")));
	CHECK(registry.pid_labelled() == 2);

	// Pid 2 exits: its last counts stay for this interval's scrapes ...
	gone_pids = {2};
	registry.add_interval(interval({"f"}, {{2, "srv", {}}, {1, "srv", {}}}, {{2, 0, 10, 5}, {1, 0, 10, 1}}),
			      alive_unless_gone);
	text = registry.render();
	CHECK(has_line(text, pid_calls_line("srv", "2", "f", "7")));
	CHECK(has_line(text, pid_calls_line("srv", "other", "f", "2")));
	// ... then its series go and pid 1, seen next, takes its label (what it
	// counted before stays under "other").
	registry.add_interval(interval({"f"}, {{1, "srv", {}}}, {{1, 0, 10, 4}}), alive_unless_gone);
	text = registry.render();
	check_exposition_format(text);
	CHECK(text.find("pid=\"2\"") == std::string::npos);
	CHECK(has_line(text, pid_calls_line("srv", "1", "f", "4")));
	CHECK(has_line(text, pid_calls_line("srv", "other", "f", "2")));
	CHECK(has_line(text, pid_calls_line("srv", "3", "f", "3")));
	CHECK(registry.pid_labelled() == 2);
}

TEST_CASE("metrics: a churn of short-lived processes keeps the pid labels and the series bounded")
{
	gone_pids.clear();
	MetricsRegistry registry(8, 4, 3);
	// 200 intervals of 5 new processes each (two functions each, the first
	// heaviest), all gone by the interval's end.
	for (int i = 0; i < 200; i++) {
		std::vector<ProfileProcess> procs;
		std::vector<NodeSpec> nodes;
		for (int k = 0; k < 5; k++) {
			int pid = 100 + 5 * i + k;
			procs.push_back({pid, "cgi", {}});
			nodes.push_back({pid, 0, uint64_t(50 - k), 1});
			nodes.push_back({pid, 1, uint64_t(5), 1});
			gone_pids.insert(pid);
		}
		registry.add_interval(interval({"f", "g"}, procs, nodes), alive_unless_gone);
		CHECK(registry.pid_labelled() <= 3);
		CHECK(registry.series_count() <= 8 + 4 + 1);
	}
	std::string text = registry.render();
	check_exposition_format(text);
	// The three heaviest of the last interval keep their series; the two
	// lightest of every interval were counted under "other"; the rest went
	// with their processes.
	CHECK(has_line(text, pid_calls_line("cgi", "1095", "f", "1")));
	CHECK(has_line(text, pid_calls_line("cgi", "1097", "g", "1")));
	CHECK(text.find("pid=\"1098\"") == std::string::npos);
	CHECK(text.find("pid=\"1090\"") == std::string::npos);
	CHECK(has_line(text, pid_calls_line("cgi", "other", "f", "400")));
	CHECK(has_line(text, pid_calls_line("cgi", "other", "g", "400")));
	CHECK(registry.series_count() == 3 * 2 + 2);
}

TEST_CASE("metrics: a gone process's calls read late still add to its series; a process named [other] "
	  "going frees exactly its own places")
{
	gone_pids.clear();
	// top_n 1: the second function of each process goes to its "[other]".
	MetricsRegistry registry(1, 1, 4);
	registry.add_interval(interval({"f", "g"}, {{1, "srv", {}}, {2, "[other]", {}}},
				       {{1, 0, 100, 1}, {2, 1, 50, 2}}),
			      alive_unless_gone);
	std::string text = registry.render();
	CHECK(has_line(text, pid_calls_line("srv", "1", "f", "1")));
	CHECK(has_line(text, pid_calls_line("[other]", "2", "[other]", "2")));
	CHECK(registry.series_count() == 2);

	// Both exit; pid 1's last calls arrive in the interval after: added, not a reset.
	gone_pids = {1, 2};
	registry.add_interval(interval({"f", "g"}, {}, {}), alive_unless_gone);
	registry.add_interval(interval({"f"}, {{1, "srv", {}}}, {{1, 0, 10, 4}}), alive_unless_gone);
	text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, pid_calls_line("srv", "1", "f", "5")));
	CHECK(text.find("pid=\"2\"") == std::string::npos);
	registry.add_interval(interval({"f"}, {}, {}), alive_unless_gone);
	CHECK(registry.series_count() == 0);
	CHECK(registry.pid_labelled() == 0);

	// The places freed are exactly those taken: one named series, one
	// per-process "[other]", then the catch-all.
	registry.add_interval(interval({"f", "g"}, {{3, "a", {}}, {4, "b", {}}, {5, "c", {}}},
				       {{3, 0, 300, 1}, {4, 1, 200, 1}, {5, 1, 100, 1}}),
			      alive_unless_gone);
	text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, pid_calls_line("a", "3", "f", "1")));
	CHECK(has_line(text, pid_calls_line("b", "4", "[other]", "1")));
	CHECK(has_line(text, pid_calls_line("[other]", "other", "[other]", "1")));
	CHECK(registry.series_count() == 3);
}

TEST_CASE("metrics: each pid-labelled process's sampled fraction; the unlabelled ones share pid=\"other\", "
	  "the smallest of theirs")
{
	gone_pids.clear();
	MetricsRegistry registry(MetricsRegistry::kDefaultTopN, MetricsRegistry::kDefaultOtherProcesses, 2);
	// Pids 1 and 2 take the labels (3 is the lightest), 4 and 5 have no calls yet.
	ProfileProcess boxed{.pid = 2, .comm = "srv", .container_id = std::string(64, 'a')};
	registry.add_interval(interval({"f"}, {{1, "srv", {}}, boxed, {3, "srv", {}}},
				       {{1, 0, 300, 1}, {2, 0, 200, 1}, {3, 0, 100, 1}}),
			      alive_unless_gone);
	MonitorHealth h;
	h.process_shares = {{1, "srv", "", 0.125}, {2, "srv", std::string(64, 'a'), 1},
			    {3, "srv", "", 0.5}, {4, "idle", "", 0.25}, {5, "idle", "", 1}};
	registry.set_health(h);
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, "# TYPE usdtprof_process_sampled_fraction gauge"));
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"srv\",pid=\"1\"} 0.125"));
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"srv\",container_id=\"aaaaaaaaaaaa\","
			     "pid=\"2\"} 1"));
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"[other]\",pid=\"other\"} 0.25"));
	size_t samples = 0;
	for (const std::string &line : lines_of(text))
		samples += line.rfind("usdtprof_process_sampled_fraction{", 0) == 0;
	CHECK(samples == 3);

	// Every process labelled: no "other" sample; a gauge follows the last interval.
	h.process_shares = {{1, "srv", "", 1}};
	registry.set_health(h);
	text = registry.render();
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"srv\",pid=\"1\"} 1"));
	CHECK(text.find("usdtprof_process_sampled_fraction{process=\"[other]\"") == std::string::npos);
	// (Pid 3's call, without a label, stays counted under "other".)
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"[other]\",pid=\"other\"} 1"));

	// One process (no pid labels): usdtprof_duty_cycle is its share, no such family.
	MetricsRegistry single;
	single.set_health(h);
	CHECK(single.render().find("usdtprof_process_sampled_fraction") == std::string::npos);
}

TEST_CASE("metrics: monitored processes without calls take the free pid labels, with calls 0 and their sampled "
	  "fraction; one with calls takes the label of one that never counted when none is free")
{
	gone_pids.clear();
	MetricsRegistry registry(MetricsRegistry::kDefaultTopN, MetricsRegistry::kDefaultOtherProcesses, 2);
	// Pid 1 has calls; 2 and 3 are monitored, idle: 2 takes the label left, 3 stays "other".
	std::vector<ProcessShare> monitored = {
		{1, "srv", "", 1}, {2, "idle", std::string(64, 'b'), 0.5}, {3, "idle", "", 0.25}};
	registry.add_interval(interval({"f"}, {{1, "srv", {}}}, {{1, 0, 300, 4}}), alive_unless_gone, monitored);
	MonitorHealth h;
	h.process_shares = monitored;
	registry.set_health(h);
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(registry.pid_labelled() == 2);
	CHECK(has_line(text, "# TYPE usdtprof_process_calls_total counter"));
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"srv\",pid=\"1\"} 4"));
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"idle\",container_id=\"bbbbbbbbbbbb\",pid=\"2\"} 0"));
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"idle\",container_id=\"bbbbbbbbbbbb\","
			     "pid=\"2\"} 0.5"));
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"[other]\",pid=\"other\"} 0.25"));
	// No unlabelled process has counted a call: no "other" calls sample.
	CHECK(text.find("usdtprof_process_calls_total{process=\"[other]\"") == std::string::npos);
	CHECK(text.find("pid=\"3\"") == std::string::npos);

	// Pid 4 starts calling: idle pid 2 gives its label up (it never counted);
	// pid 5's calls, with no idle label left, go to "other".
	monitored.push_back({4, "new", "", 1});
	monitored.push_back({5, "new", "", 1});
	registry.add_interval(interval({"f"}, {{1, "srv", {}}, {4, "new", {}}, {5, "new", {}}},
				       {{1, 0, 10, 1}, {4, 0, 200, 2}, {5, 0, 100, 3}}),
			      alive_unless_gone, monitored);
	h.process_shares = monitored;
	registry.set_health(h);
	text = registry.render();
	check_exposition_format(text);
	CHECK(registry.pid_labelled() == 2);
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"srv\",pid=\"1\"} 5"));
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"new\",pid=\"4\"} 2"));
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"[other]\",pid=\"other\"} 3"));
	CHECK(has_line(text, pid_calls_line("new", "other", "f", "3")));
	CHECK(text.find("pid=\"2\"") == std::string::npos);
	CHECK(has_line(text, "usdtprof_process_sampled_fraction{process=\"[other]\",pid=\"other\"} 0.25"));

	// Pid 4 exits: its label goes at the next interval without its calls;
	// idle pid 2 takes it back, with calls 0 again.
	gone_pids = {4};
	monitored.erase(monitored.begin() + 3);
	registry.add_interval(interval({"f"}, {}, {}), alive_unless_gone, monitored);
	registry.add_interval(interval({"f"}, {}, {}), alive_unless_gone, monitored);
	text = registry.render();
	check_exposition_format(text);
	CHECK(text.find("pid=\"4\"") == std::string::npos);
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"idle\",container_id=\"bbbbbbbbbbbb\",pid=\"2\"} 0"));
	// The "other" counter never goes down.
	CHECK(has_line(text, "usdtprof_process_calls_total{process=\"[other]\",pid=\"other\"} 3"));

	// A churn of idle processes never takes more than the labels.
	for (int pid = 100; pid < 300; pid++)
		monitored.push_back({pid, "idle", "", 1});
	registry.add_interval(interval({"f"}, {}, {}), alive_unless_gone, monitored);
	CHECK(registry.pid_labelled() == 2);
	size_t samples = 0;
	for (const std::string &line : lines_of(registry.render()))
		samples += line.rfind("usdtprof_process_calls_total{", 0) == 0;
	CHECK(samples == 3);
}

TEST_CASE("metrics: zero-activity nodes take no series")
{
	MetricsRegistry registry(1);
	registry.add_interval(interval({"idle", "busy"}, {{1, "app", {}}}, {{1, 0, 0, 0}, {1, 1, 10, 1}}));
	CHECK(has_line(registry.render(), calls_line("app", "busy", "1")));
	CHECK(registry.series_count() == 1);
}

TEST_CASE("metrics: health counters and gauges")
{
	MetricsRegistry registry;
	MonitorHealth h;
	h.probe_hits = 123456789012ULL;
	h.anomalies = 3;
	h.dropped_paths = 4;
	h.intervals = 5;
	h.duty_cycle = 0.25;
	h.estimated_overhead_ratio = 0.0125;
	h.profiled_cpu_ns = 2500000000;
	h.probe_cost_ns = 25000000;
	h.fixed_cost_ns = 1000;
	registry.set_health(h);
	std::string text = registry.render();
	check_exposition_format(text);
	CHECK(has_line(text, "usdtprof_probe_hits_total 123456789012"));
	CHECK(has_line(text, "usdtprof_anomalies_total 3"));
	CHECK(has_line(text, "usdtprof_dropped_paths_total 4"));
	CHECK(has_line(text, "usdtprof_intervals_total 5"));
	CHECK(has_line(text, "usdtprof_duty_cycle 0.25"));
	CHECK(has_line(text, "usdtprof_estimated_overhead_ratio 0.0125"));
	CHECK(has_line(text, "usdtprof_profiled_cpu_seconds_total 2.5"));
	CHECK(has_line(text, "usdtprof_probe_cost_seconds_total 0.025"));
	CHECK(has_line(text, "usdtprof_fixed_cost_seconds_total 0.000001"));

	// Counters never go down; gauges follow the last value.
	h.probe_hits = 10;
	h.profiled_cpu_ns = 1;
	h.intervals = 6;
	h.duty_cycle = 1;
	registry.set_health(h);
	text = registry.render();
	CHECK(has_line(text, "usdtprof_probe_hits_total 123456789012"));
	CHECK(has_line(text, "usdtprof_intervals_total 6"));
	CHECK(has_line(text, "usdtprof_duty_cycle 1"));
	CHECK(has_line(text, "usdtprof_profiled_cpu_seconds_total 2.5"));
}

TEST_CASE("metrics server: GET /metrics, 404 elsewhere")
{
	MetricsRegistry registry;
	registry.add_interval(interval({"f"}, {{1, "app", {}}}, {{1, 0, 42, 7}}));
	auto server = MetricsServer::start("127.0.0.1:0", registry);
	REQUIRE(server.ok());
	int port = server.value()->port();
	REQUIRE(port > 0);
	CHECK(server.value()->host() == "127.0.0.1");

	httplib::Client client("127.0.0.1", port);
	client.set_connection_timeout(2, 0);
	auto res = client.Get("/metrics");
	REQUIRE(res);
	CHECK(res->status == 200);
	CHECK(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
	CHECK(res->body == registry.render());
	CHECK(has_line(res->body, calls_line("app", "f", "7")));

	// Served live: a new interval shows at the next scrape.
	registry.add_interval(interval({"f"}, {{1, "app", {}}}, {{1, 0, 42, 3}}));
	res = client.Get("/metrics");
	REQUIRE(res);
	CHECK(has_line(res->body, calls_line("app", "f", "10")));

	res = client.Get("/");
	REQUIRE(res);
	CHECK(res->status == 404);
	res = client.Get("/metrics/x");
	REQUIRE(res);
	CHECK(res->status == 404);
	res = client.Post("/metrics", "x", "text/plain");
	REQUIRE(res);
	CHECK(res->status == 405);
	CHECK(res->get_header_value("Allow") == "GET");
	res = client.Head("/metrics");
	REQUIRE(res);
	CHECK(res->status == 405);
	res = client.Get("/metrics?x=1");
	REQUIRE(res);
	CHECK(res->status == 200);
}

TEST_CASE("metrics server: scrapes while the monitor adds intervals")
{
	MetricsRegistry registry(8);
	auto server = MetricsServer::start("127.0.0.1:0", registry);
	REQUIRE(server.ok());
	std::thread adder([&] {
		for (int i = 0; i < 200; i++)
			registry.add_interval(interval({"f" + std::to_string(i % 16)}, {{1, "app", {}}}, {{1, 0, 1, 1}}));
	});
	httplib::Client client("127.0.0.1", server.value()->port());
	for (int i = 0; i < 5; i++) {
		auto res = client.Get("/metrics");
		REQUIRE(res);
		CHECK(res->status == 200);
	}
	adder.join();
	auto res = client.Get("/metrics");
	REQUIRE(res);
	check_exposition_format(res->body);
	CHECK(has_line(res->body, calls_line("app", "[other]", "96")));
}

TEST_CASE("metrics server: a port in use and bad addresses fail with one line")
{
	MetricsRegistry registry;
	auto first = MetricsServer::start("127.0.0.1:0", registry);
	REQUIRE(first.ok());
	std::string taken = "127.0.0.1:" + std::to_string(first.value()->port());
	auto second = MetricsServer::start(taken, registry);
	REQUIRE(!second.ok());
	CHECK(second.error().message == "cannot listen on " + taken + ": Address already in use");

	for (const char *bad : {"9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536",
				"::1:9464", "[::1", "[::1]9464", "[]:9464"}) {
		INFO(bad);
		auto r = MetricsServer::start(bad, registry);
		REQUIRE(!r.ok());
		CHECK(r.error().message.rfind(std::string("invalid listen address '") + bad + "'", 0) == 0);
		CHECK(r.error().message.find('\n') == std::string::npos);
	}
}

TEST_CASE("metrics server: listen address parsing")
{
	auto a = parse_listen_address(":9464");
	REQUIRE(a.ok());
	CHECK(a.value().host == "0.0.0.0");
	CHECK(a.value().port == 9464);
	a = parse_listen_address("[::1]:0");
	REQUIRE(a.ok());
	CHECK(a.value().host == "::1");
	CHECK(a.value().port == 0);
	a = parse_listen_address("localhost:65535");
	REQUIRE(a.ok());
	CHECK(a.value().host == "localhost");
	CHECK(a.value().port == 65535);
}

TEST_CASE("metrics server: the destructor stops promptly")
{
	MetricsRegistry registry;
	auto server = MetricsServer::start("127.0.0.1:0", registry);
	REQUIRE(server.ok());
	int port = server.value()->port();
	{
		httplib::Client client("127.0.0.1", port);
		REQUIRE(client.Get("/metrics"));
	}
	auto t0 = std::chrono::steady_clock::now();
	server.value().reset();
	// httplib's keep-alive wait is 5 s: 3 s tells "prompt" from "waited" on a loaded machine.
	CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
	// The port is free again.
	auto again = MetricsServer::start("127.0.0.1:" + std::to_string(port), registry);
	CHECK(again.ok());
}

namespace {

int connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(fd >= 0);
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons(uint16_t(port));
	REQUIRE(connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0);
	timeval tv{3, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

// Sends up to bytes of filler after prefix, stopping when the server stops reading.
size_t send_flood(int fd, const std::string &prefix, size_t bytes, const std::string &filler)
{
	size_t sent = 0;
	std::string out = prefix;
	while (sent < bytes) {
		ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
		if (n <= 0)
			break;
		sent += size_t(n);
		out = out.substr(size_t(n));
		if (out.empty())
			out = filler;
	}
	return sent;
}

// Reads until the server closes (or 3 s pass).
std::string read_all(int fd)
{
	std::string in;
	char buf[4096];
	for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
		in.append(buf, size_t(n));
	return in;
}

// The connection was closed by the server: recv gives end of file (or a reset).
bool closed_by_server(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

} // namespace

TEST_CASE("metrics server: endless headers are cut at the request limit with 431")
{
	MetricsRegistry registry;
	auto server = MetricsServer::start("127.0.0.1:0", registry);
	REQUIRE(server.ok());
	int fd = connect_to(server.value()->port());
	std::string header = "X-Filler: " + std::string(100, 'h') + "\r\n";
	// 64 MiB offered: the server reads 8 KiB of it, answers and stops reading.
	size_t sent = send_flood(fd, "GET /metrics HTTP/1.1\r\n", 64u << 20, header);
	CHECK(sent < 64u << 20);
	std::string answer = read_all(fd);
	CHECK(answer.rfind("HTTP/1.1 431 ", 0) == 0);
	close(fd);
}

TEST_CASE("metrics server: a POST body is not read: 405, and closed")
{
	MetricsRegistry registry;
	auto server = MetricsServer::start("127.0.0.1:0", registry);
	REQUIRE(server.ok());
	int fd = connect_to(server.value()->port());
	size_t sent = send_flood(fd, "POST /metrics HTTP/1.1\r\nContent-Length: 100000000000\r\n\r\n", 64u << 20,
				 std::string(65536, 'b'));
	CHECK(sent < 64u << 20);
	std::string answer = read_all(fd);
	CHECK(answer.rfind("HTTP/1.1 405 ", 0) == 0);
	close(fd);
}

TEST_CASE("metrics server: slow clients are closed at the deadline and do not delay a scrape")
{
	MetricsRegistry registry;
	registry.add_interval(interval({"f"}, {{1, "app", {}}}, {{1, 0, 42, 7}}));
	MetricsServerLimits limits;
	limits.deadline = std::chrono::milliseconds(300);
	auto server = MetricsServer::start("127.0.0.1:0", registry, limits);
	REQUIRE(server.ok());
	int port = server.value()->port();
	std::vector<int> slow;
	for (int i = 0; i < 8; i++) {
		slow.push_back(connect_to(port));
		REQUIRE(send(slow.back(), "GET /met", 8, MSG_NOSIGNAL) == 8);
	}
	httplib::Client client("127.0.0.1", port);
	client.set_read_timeout(1, 0);
	auto res = client.Get("/metrics");
	REQUIRE(res);
	CHECK(res->status == 200);
	CHECK(has_line(res->body, calls_line("app", "f", "7")));
	// Each slow one is closed at its deadline, never answered.
	for (int fd : slow) {
		CHECK(closed_by_server(fd));
		close(fd);
	}
	CHECK(server.value()->connections_cut() == 8);
}

TEST_CASE("metrics server: more idle connections than the cap: the oldest are closed, scrapes go on")
{
	MetricsRegistry registry;
	registry.add_interval(interval({"f"}, {{1, "app", {}}}, {{1, 0, 42, 7}}));
	MetricsServerLimits limits;
	limits.max_connections = 16;
	limits.deadline = std::chrono::milliseconds(60000); // only the cap closes them
	auto server = MetricsServer::start("127.0.0.1:0", registry, limits);
	REQUIRE(server.ok());
	int port = server.value()->port();
	std::vector<int> idle;
	for (int i = 0; i < 200; i++)
		idle.push_back(connect_to(port));
	httplib::Client client("127.0.0.1", port);
	client.set_read_timeout(2, 0);
	for (int i = 0; i < 3; i++) {
		auto res = client.Get("/metrics");
		REQUIRE(res);
		CHECK(res->status == 200);
	}
	// The first ones were pushed out by newer ones, long before their deadline.
	for (int i = 0; i < 100; i++)
		CHECK(closed_by_server(idle[size_t(i)]));
	CHECK(server.value()->connections_cut() >= 184);
	for (int fd : idle)
		close(fd);
}
