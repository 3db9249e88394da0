// record --per-thread and report --per-thread: each thread's call paths under
// a root named by the thread; without the report flag, merged as before.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "harness.h"

using namespace e2e;

namespace {

// Calls per path (stack joined with ';'), each thread root's tid shown as "(tid)".
std::map<std::string, uint64_t> calls_by_path(const nlohmann::json &report, std::map<std::string, int> *tids = nullptr)
{
	static const std::regex tid(R"(\(tid (\d+)\))");
	std::map<std::string, uint64_t> out;
	for (const auto &p : report.at("paths")) {
		std::string joined;
		for (const auto &n : p.at("stack")) {
			std::string name = n.get<std::string>();
			std::smatch m;
			if (tids && std::regex_search(name, m, tid))
				(*tids)[name.substr(0, size_t(m.position(0)))] = std::stoi(m[1].str());
			joined += (joined.empty() ? "" : ";") + std::regex_replace(name, tid, "(tid)");
		}
		out[joined] += p.at("calls").get<uint64_t>();
	}
	return out;
}

nlohmann::json report(const std::vector<std::string> &args)
{
	std::vector<std::string> argv = {usdtprof(), "report", "--format", "json"};
	argv.insert(argv.end(), args.begin(), args.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	return parse_report(o.out);
}

} // namespace

TEST_CASE("record --per-thread: each thread's calls under a root named by the thread, merged without --per-thread",
	  "[per_thread]")
{
	std::string dir = temp_dir(), per = dir + "/per.data", plain = dir + "/plain.data";
	// worker-0 calls work 20 times, worker-1 40 times; main calls done once.
	Output o = run({usdtprof(), "record", "--per-thread", "-o", per, "--", target("named_threads"), "2", "20",
			"scaled"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	o = run({usdtprof(), "record", "-o", plain, "--", target("named_threads"), "2", "20", "scaled"});
	REQUIRE(o.status == 0);

	std::map<std::string, int> tids;
	auto threads = calls_by_path(report({"--per-thread", per}), &tids);
	REQUIRE(threads == std::map<std::string, uint64_t>{{"worker-0 (tid)", 0}, {"worker-0 (tid);work", 20},
							    {"worker-1 (tid)", 0}, {"worker-1 (tid);work", 40},
							    {"renamed-main (tid)", 0}, {"renamed-main (tid);done", 1}});
	REQUIRE(tids.size() == 3);
	REQUIRE(tids["worker-0 "] != tids["worker-1 "]);

	// Without --per-thread: the numbers of a recording without it.
	auto merged = report({per});
	REQUIRE(calls_by_path(merged) == std::map<std::string, uint64_t>{{"work", 60}, {"done", 1}});
	REQUIRE(calls_by_path(merged) == calls_by_path(report({plain})));
	// Exactly the threads' sums, as measured.
	auto raw_threads = report({"--per-thread", "--raw", per}), raw_merged = report({"--raw", per});
	uint64_t work_self = 0;
	for (const auto &p : raw_threads.at("paths"))
		if (p.at("name") == "work")
			work_self += p.at("self_ns").get<uint64_t>();
	REQUIRE(work_self > 0);
	REQUIRE(path(raw_merged, "work").at("self_ns").get<uint64_t>() == work_self);

	// --ignore matches a thread's root: its calls are gone, the others stay.
	REQUIRE(calls_by_path(report({"--per-thread", "--ignore", "^worker-1", per})) ==
		std::map<std::string, uint64_t>{{"worker-0 (tid)", 0}, {"worker-0 (tid);work", 20},
						{"renamed-main (tid)", 0}, {"renamed-main (tid);done", 1}});

	// The flat view per thread: JSON's "threads", largest first, each with
	// its name, tid and pid and its own function table.
	auto tables = report({"--per-thread", "--raw", per});
	REQUIRE(tables.at("threads").size() == 3);
	std::map<std::string, uint64_t> calls_of, work_of;
	uint64_t previous = UINT64_MAX;
	for (const auto &t : tables.at("threads")) {
		std::string name = t.at("name");
		INFO(name);
		REQUIRE(t.at("tid") == tids[name + " "]);
		REQUIRE(t.at("pid") == tables.at("processes")[0].at("pid"));
		REQUIRE(t.at("total_ns").get<uint64_t>() <= previous);
		previous = t.at("total_ns").get<uint64_t>();
		calls_of[name] = t.at("calls").get<uint64_t>();
		uint64_t self = 0;
		for (const auto &f : t.at("functions")) {
			self += f.at("self_ns").get<uint64_t>();
			if (f.at("name") == "work")
				work_of[name] = f.at("calls").get<uint64_t>();
		}
		// Its time is its functions' self times, and its frame's total among the paths.
		REQUIRE(t.at("total_ns").get<uint64_t>() == self);
		REQUIRE(path(tables, name + " (tid " + std::to_string(tids[name + " "]) + ")").at("total_ns") == self);
	}
	REQUIRE(calls_of == std::map<std::string, uint64_t>{{"worker-0", 20}, {"worker-1", 40}, {"renamed-main", 1}});
	REQUIRE(work_of == std::map<std::string, uint64_t>{{"worker-0", 20}, {"worker-1", 40}});
	// Text: a table per thread under its heading.
	o = run({usdtprof(), "report", "--per-thread", per});
	INFO(o.out);
	REQUIRE(o.status == 0);
	REQUIRE(std::regex_search(o.out, std::regex("(^|\n)thread worker-1 \\(tid " + std::to_string(tids["worker-1 "]) +
						    "\\), process [^\\n]*\\(pid [0-9]+\\): [0-9.]+% of the recorded "
						    "time\nusdtprof report: .* in 40 calls over [^\n]*\n(.*\n){2} +40 [^\n]+ work\n")));

	// Folded stacks: the thread's root is the outermost frame.
	o = run({usdtprof(), "export", "--format", "folded", "--per-thread", per});
	REQUIRE(o.status == 0);
	REQUIRE(std::regex_search(o.out, std::regex("(^|\n)worker-1 \\(tid " + std::to_string(tids["worker-1 "]) +
						    "\\);work [0-9]+\n")));

	// Asked of a profile recorded without it: one line, exit status 1.
	o = run({usdtprof(), "report", "--per-thread", plain});
	REQUIRE(o.status == 1);
	REQUIRE(o.out.empty());
	REQUIRE(o.err == "usdtprof: " + plain + ": not recorded per thread; --per-thread needs a profile of "
				 "`usdtprof record --per-thread`\n");
}

TEST_CASE("trace --per-thread: its profile per thread beside the timeline; monitor refuses --per-thread in one line",
	  "[per_thread][trace]")
{
	std::string dir = temp_dir(), timeline = dir + "/t.json", per = dir + "/t.data";
	Output o = run({usdtprof(), "trace", "--per-thread", "-o", timeline, "--profile", per, "--", target("named_threads"),
			"2", "5", "scaled"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	std::map<std::string, uint64_t> work_of;
	auto tables = report({"--per-thread", per});
	for (const auto &t : tables.at("threads"))
		for (const auto &f : t.at("functions"))
			work_of[t.at("name").get<std::string>() + ";" + f.at("name").get<std::string>()] = f.at("calls");
	REQUIRE(work_of == std::map<std::string, uint64_t>{{"worker-0;work", 5}, {"worker-1;work", 10}, {"renamed-main;done", 1}});
	// The timeline is as without it: a slice per call.
	std::ifstream in(timeline);
	auto trace = nlohmann::json::parse(in);
	size_t slices = 0;
	for (const auto &e : trace.at("traceEvents"))
		slices += e.at("ph") == "X" && (e.at("name") == "work" || e.at("name") == "done");
	REQUIRE(slices == 16);

	o = run({usdtprof(), "monitor", "--per-thread", "-p", "1", "-o", dir + "/mon"});
	REQUIRE(o.status == 2);
	REQUIRE(o.out.empty());
	REQUIRE(o.err == "usdtprof: The following argument was not expected: --per-thread (see usdtprof monitor --help)\n");
	REQUIRE_FALSE(std::filesystem::exists(dir + "/mon"));
}
