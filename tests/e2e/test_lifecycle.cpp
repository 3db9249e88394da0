// Missing exits and their repair, thread and process lifecycles, and limits,
// each against a real target.
//
// Busy-spins are wall-clock: a spin preempted by unrelated load ends late, so
// on a busy machine "1 ms" is anything from 1 to several ms. Targets whose
// times are checked therefore sum the time each spin really took per frame
// usdtprof should charge it to, and print it as "measured NAME NS"
// (tests/targets/measure.h); usdtprof's time must be at least that and at most
// 2% (probe overhead) more, plus "measured off_cpu": the time the target was
// preempted outside its spins, which it cannot attribute to a frame.
//
// fork and exec, found by experiment (kernel 6.18, uprobe_multi links made for
// the traced pid):
// - a forked child is not profiled: it inherits the breakpoints and raised
//   semaphores, but the links' pid filter drops its hits; only the parent's
//   calls are recorded;
// - at exec, a sched_process_exec hook ends the old program's frames: they are
//   recorded as open activations that end at the exec;
// - after exec of another probed program nothing of the new image is
//   recorded (the links are on the old binary's inode);
// - after exec of the same binary the new image IS recorded (same inode, same
//   process), as new roots; its names may not resolve (the image was mapped
//   at a new, randomised address, and names are looked up through maps read
//   at attach time), so the test checks structure and counts only.
// Times are checked against the targets' own clocks as measured (report --raw):
// the probes' cost included, as the kernel's bookkeeping recorded it.
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness.h"

using namespace e2e;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;

namespace {

uint64_t n(const json &value)
{
	return value.get<uint64_t>();
}

std::string joined(const json &stack)
{
	std::string s;
	for (const auto &name : stack)
		s += (s.empty() ? "" : ";") + name.get<std::string>();
	return s;
}

struct Recording {
	Output output; // usdtprof's; with record -- CMD it includes the target's stdout
	double seconds; // of usdtprof record
	std::string data;
	json report;
};

Recording record(const std::vector<std::string> &command, int expected_status = 0,
		 const std::vector<std::string> &options = {})
{
	Recording r;
	r.data = temp_dir() + "/profile.data";
	std::vector<std::string> argv = {usdtprof(), "record", "-o", r.data};
	argv.insert(argv.end(), options.begin(), options.end());
	argv.push_back("--");
	argv.insert(argv.end(), command.begin(), command.end());
	auto started = std::chrono::steady_clock::now();
	r.output = run(argv);
	r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
	INFO(r.output.err);
	REQUIRE(r.output.status == expected_status);
	// As measured (--raw): the target's own clock reads frame its spins, the probes' cost included.
	Output raw = run({usdtprof(), "report", "--format", "json", "--raw", r.data});
	REQUIRE(raw.status == 0);
	r.report = e2e::parse_report(raw.out);
	return r;
}

// At least what the target measured inside the frame (less 0.1%: the target's
// clock and the kernel's fast clock may disagree by a few ns per read), at
// most 2% more plus slack_ns of time the target could not attribute (its wall
// time outside its spins: the probes' own cost, on the CPU or off it).
void require_measured(const json &value, double measured_ns, double slack_ns)
{
	INFO("target measured " << measured_ns << " ns, usdtprof has " << value);
	REQUIRE(measured_ns > 0);
	REQUIRE(value.get<double>() >= measured_ns * 0.999);
	REQUIRE(value.get<double>() <= measured_ns * 1.02 + slack_ns);
}

void require_anomalies(const json &report, const std::map<std::string, uint64_t> &expected)
{
	for (const auto &[name, count] : report.at("anomalies").items()) {
		INFO(name);
		if (!host_counter(name))
			REQUIRE(n(count) == (expected.count(name) ? expected.at(name) : 0));
	}
}

// Exactly these paths, with these call counts.
void require_paths(const json &report, const std::map<std::string, uint64_t> &expected)
{
	std::map<std::string, uint64_t> got;
	for (const auto &p : report.at("paths"))
		got[joined(p.at("stack"))] = n(p.at("calls"));
	REQUIRE(got == expected);
}

// Every path's inclusive time is its exclusive time plus its children's
// inclusive times, to the nanosecond: what a repaired or flushed stack must
// still satisfy.
void require_consistent(const json &report)
{
	std::map<std::string, uint64_t> children;
	for (const auto &p : report.at("paths")) {
		json parent = p.at("stack");
		parent.erase(parent.size() - 1);
		if (!parent.empty())
			children[joined(parent)] += n(p.at("total_ns"));
	}
	for (const auto &p : report.at("paths")) {
		INFO(p.dump());
		REQUIRE(n(p.at("total_ns")) == n(p.at("self_ns")) + children[joined(p.at("stack"))]);
	}
}

} // namespace

TEST_CASE("longjmp out of probed frames: one exit_mismatch per repair, popped frames charged to it, later calls exact",
	  "[lifecycle]")
{
	constexpr int kFaults = 10, kClean = 10;
	auto r = record({target("longjmp"), std::to_string(kFaults), std::to_string(kClean)});
	auto m = measured(r.output.out);
	const json &report = r.report;

	// a's EXIT finds c on top: the search goes down past b to a, pops c and b
	// at that time and counts one exit_mismatch for the exit (not one per
	// popped frame); then a pops normally. So one per jump.
	require_anomalies(report, {{"exit_mismatch", kFaults}});
	for (const char *name : {"a", "b", "c"}) {
		auto f = function(report, name);
		REQUIRE(f["calls"] == kFaults);
		REQUIRE(f["open"] == 0);
		require_measured(f["self_ns"], m[name], m["outside"]);
	}
	// Nothing of the faults leaks into the calls that follow: a2 is a child of
	// main again, not of a leftover b or c.
	require_paths(report, {{"main", 1}, {"main;a", kFaults}, {"main;a;b", kFaults}, {"main;a;b;c", kFaults},
			       {"main;a2", kClean}, {"main;a2;b2", kClean}});
	require_measured(path(report, "main;a2")["self_ns"], m["a2"], m["outside"]);
	require_measured(path(report, "main;a2")["total_ns"], m["a2"] + m["b2"], m["outside"]);
	require_measured(path(report, "main;a2;b2")["total_ns"], m["b2"], m["outside"]);
	require_consistent(report);
}

TEST_CASE("longjmp, then the same function entered again before any exit: its entry's stack pointer pops the dead frames",
	  "[lifecycle]")
{
	constexpr int kJumps = 10;
	auto r = record({target("longjmp"), "0", "0", std::to_string(kJumps)});
	auto m = measured(r.output.out);
	const json &report = r.report;

	// Each jump1 entry after a jump is at the dead jump1's site and stack
	// pointer: jump1 and jump2 above it are gone, one repair each (9); the
	// next jump1 is at its true path, not under the dead frames. after() is
	// another site, which proves nothing (see docs/design.md): the last
	// jump's frames stay until main's exit repairs them (the 10th repair).
	require_anomalies(report, {{"exit_mismatch", kJumps}});
	require_paths(report, {{"main", 1},
			       {"main;jump1", kJumps},
			       {"main;jump1;jump2", kJumps},
			       {"main;jump1;jump2;after", kJumps}});
	// A dead frame is charged up to the entry that proves it gone: jump2 holds
	// its spin and the jump back, jump1 only its own spin.
	for (const char *name : {"jump1", "jump2", "after"}) {
		auto f = function(report, name);
		REQUIRE(f["open"] == 0);
		require_measured(f["self_ns"], m[name], m["outside"]);
	}
	require_consistent(report);
}

TEST_CASE("exceptions: through ENTER/EXIT frames repaired like a longjmp, through USDTPROF_FUNC scopes exact",
	  "[lifecycle]")
{
	constexpr int kFaults = 10, kClean = 10;
	SECTION("ENTER/EXIT: the exits the exception skips are repaired by the catching frame's EXIT")
	{
		auto r = record({target("exception"), "manual", std::to_string(kFaults), std::to_string(kClean)});
		auto m = measured(r.output.out);
		require_anomalies(r.report, {{"exit_mismatch", kFaults}});
		require_paths(r.report, {{"main", 1}, {"main;outer", kFaults}, {"main;outer;mid", kFaults},
					 {"main;outer;mid;thrower", kFaults}, {"main;a2", kClean}, {"main;a2;b2", kClean}});
		// thrower holds the unwinding and outer's catch block (measured so).
		for (const char *name : {"outer", "mid", "thrower", "a2", "b2"})
			require_measured(function(r.report, name)["self_ns"], m[name], m["outside"]);
		require_consistent(r.report);
	}
	SECTION("USDTPROF_FUNC: exits fire while unwinding, no anomaly")
	{
		auto r = record({target("exception"), "raii", std::to_string(kFaults), std::to_string(kClean)});
		auto m = measured(r.output.out);
		require_anomalies(r.report, {});
		require_paths(r.report, {{"main", 1}, {"main;outer_raii", kFaults}, {"main;outer_raii;mid_raii", kFaults},
					 {"main;outer_raii;mid_raii;thrower_raii", kFaults}, {"main;a2", kClean},
					 {"main;a2;b2", kClean}});
		// The unwinding is split between the three frames in parts the target
		// cannot see.
		double slack = m["outside"];
		require_measured(function(r.report, "outer_raii")["self_ns"], m["outer"], slack);
		require_measured(function(r.report, "mid_raii")["self_ns"], m["mid"], slack);
		require_measured(function(r.report, "thrower_raii")["self_ns"], m["thrower"], slack);
		require_measured(function(r.report, "a2")["self_ns"], m["a2"], m["outside"]);
		require_measured(function(r.report, "b2")["self_ns"], m["b2"], m["outside"]);
		require_consistent(r.report);
	}
}

TEST_CASE("early return without EXIT: the caller's EXIT repairs, the following calls are attributed exactly",
	  "[lifecycle]")
{
	constexpr int kCalls = 12, kEarly = 4; // every 3rd call of leaf, from the first
	auto r = record({target("early_return"), std::to_string(kCalls)});
	auto m = measured(r.output.out);

	require_anomalies(r.report, {{"exit_mismatch", kEarly}});
	// A leftover leaf frame would make the next leaf its child (step;leaf;leaf).
	require_paths(r.report, {{"main", 1}, {"main;step", kCalls}, {"main;step;leaf", kCalls}});
	auto leaf = function(r.report, "leaf"), step = function(r.report, "step");
	REQUIRE(leaf["open"] == 0);
	// After an early return, the rest of step up to its EXIT is leaf's.
	require_measured(leaf["self_ns"], m["leaf"], m["outside"]);
	require_measured(step["self_ns"], m["step"], m["outside"]);
	require_measured(step["total_ns"], m["step"] + m["leaf"], m["outside"]);
	require_consistent(r.report);
}

TEST_CASE("64 threads at once: exact counts, stacks never mix, a shared path adds up over threads", "[lifecycle]")
{
	constexpr int kThreads = 64, kRounds = 20;
	auto r = record({target("threads"), std::to_string(kThreads), std::to_string(kRounds), "shared"});
	const json &report = r.report;
	require_anomalies(report, {});

	std::map<std::string, uint64_t> expected = {{"shared", kThreads * kRounds}};
	for (int i = 0; i < kThreads; i++) {
		std::string digits = std::to_string(i / 8) + std::to_string(i % 8);
		expected["worker" + digits] = kRounds;
		expected["worker" + digits + ";leaf" + digits] = kRounds;
		REQUIRE(n(function(report, "leaf" + digits)["self_ns"]) >= kRounds * 200000);
	}
	require_paths(report, expected);
	REQUIRE(n(function(report, "shared")["self_ns"]) >= kThreads * kRounds * 50000);
	for (const auto &p : report["paths"]) {
		// Every frame of a path belongs to one thread: same two-digit suffix.
		INFO(p.dump());
		std::string suffix = p["stack"][0].get<std::string>();
		suffix = suffix.substr(suffix.size() - 2);
		for (const auto &name : p["stack"])
			REQUIRE(name.get<std::string>().substr(name.get<std::string>().size() - 2) == suffix);
	}
	require_consistent(report);
}

TEST_CASE("threads exiting inside probed frames are flushed as open up to their exit, 200 in a row", "[lifecycle]")
{
	constexpr int kThreads = 200;
	auto r = record({target("thread_exit"), std::to_string(kThreads)});
	auto m = measured(r.output.out);
	const json &report = r.report;

	// no_storage would show a stack that could not be allocated, e.g. because
	// those of exited threads were never freed.
	require_anomalies(report, {});
	require_paths(report, {{"t_outer", kThreads}, {"t_outer;t_mid", kThreads}, {"t_outer;t_mid;t_inner", kThreads}});
	for (const auto &p : report["paths"])
		REQUIRE(p["open"] == kThreads);

	// The exit hook runs before exit_mm(), which wakes pthread_join(): each
	// thread's frames end within the target's bound. Time outside the spins
	// (probes, pthread_exit, the join) is the slack of each frame.
	double spins = m["t_outer"] + m["t_mid"] + m["t_inner"], slack = m["bound"] - spins;
	auto outer = path(report, "t_outer");
	REQUIRE(n(outer["total_ns"]) >= spins);
	REQUIRE(n(outer["total_ns"]) <= m["bound"]);
	require_measured(outer["self_ns"], m["t_outer"], slack);
	require_measured(path(report, "t_outer;t_mid")["self_ns"], m["t_mid"], slack);
	require_measured(path(report, "t_outer;t_mid;t_inner")["self_ns"], m["t_inner"], slack);
	require_consistent(report);
}

TEST_CASE("tid reuse: short-lived threads one after another past pid_max, every call counted", "[lifecycle]")
{
	int pid_max = 0;
	std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
	REQUIRE(pid_max > 0);
	// Tids are handed out cyclically: beyond pid_max threads, they repeat.
	bool reuses = pid_max <= 65536;
	int threads = reuses ? pid_max + 2000 : 2000;
	auto r = record({target("tid_reuse"), std::to_string(threads)});
	INFO(r.output.out);

	require_anomalies(r.report, {});
	require_paths(r.report, {{"short", threads}});
	REQUIRE(path(r.report, "short")["open"] == 0);
	size_t at = r.output.out.find("reused ");
	REQUIRE(at != std::string::npos);
	int reused = std::stoi(r.output.out.substr(at + 7));
	if (reuses)
		REQUIRE(reused > 0);
	else
		WARN("pid_max is " << pid_max << ": " << threads << " threads reused " << reused << " tids");
}

TEST_CASE("a thread's first probed call is not charged for allocating the thread's stack", "[lifecycle]")
{
	// "short" is an ENTER, a gettid() and an EXIT: about 2.5 us with the
	// probes. Creating the thread's ~8 KB task-storage stack took 20-55 us here.
	constexpr int kThreads = 2000;
	auto r = record({target("tid_reuse"), std::to_string(kThreads)});
	auto f = function(r.report, "short");
	REQUIRE(f["calls"] == kThreads);
	double on_cpu = n(f["self_ns"]) - measured(r.output.out)["off_cpu"];
	REQUIRE(on_cpu / kThreads < 10000);
}

TEST_CASE("record -p: the target exits inside probed frames, profile saved with every frame open", "[lifecycle]")
{
	std::string data = temp_dir() + "/exit.data";
	Background t({target("exit_open"), "--wait"});
	t.wait_for_line("ready");
	Background rec({usdtprof(), "record", "-p", std::to_string(t.pid()), "-o", data});
	rec.wait_for_line("recording", true);
	kill(t.pid(), SIGUSR1);
	REQUIRE(t.wait() == 3);
	std::string lines;
	for (const char *name : {"main", "outer", "inner", "off_cpu", "outside", "entered_at", "exited_at"})
		lines += t.wait_for_line(std::string("measured ") + name) + "\n";
	auto m = measured(lines);
	INFO(rec.rest_of_stderr());
	REQUIRE(rec.wait() == 0);
	REQUIRE_THAT(rec.rest_of_stderr(), Contains("target exited"));

	auto report = report_json(data, true);
	require_anomalies(report, {});
	require_paths(report, {{"main", 1}, {"main;outer", 1}, {"main;outer;inner", 1}});
	for (const auto &p : report["paths"])
		REQUIRE(p["open"] == 1);
	// exit() and the teardown up to the exit hook are inner's too: bounded by
	// when the target's watcher saw it gone.
	double spins = m["main"] + m["outer"] + m["inner"], bound = m["exited_at"] - m["entered_at"];
	require_measured(function(report, "main")["self_ns"], m["main"], m["outside"]);
	require_measured(function(report, "outer")["self_ns"], m["outer"], m["outside"]);
	require_measured(function(report, "inner")["self_ns"], m["inner"], bound - spins);
	REQUIRE(n(function(report, "main")["total_ns"]) >= spins);
	REQUIRE(n(function(report, "main")["total_ns"]) <= bound);
	require_consistent(report);
}

TEST_CASE("fork and exec with --no-follow: only the launched process, and after exec only the same binary "
	  "(see the top of the file)",
	  "[lifecycle]")
{
	SECTION("fork: the child's calls are not recorded, the parent's are exact")
	{
		auto r = record({target("fork_exec"), "fork"}, 0, {"--no-follow"});
		require_anomalies(r.report, {});
		require_paths(r.report, {{"main", 1}, {"main;parent_fn", 1}, {"main;parent_fn;parent_leaf", 1}});
		REQUIRE(r.report["processes"].size() == 1);
		require_consistent(r.report);
	}
	SECTION("exec of another probed program: nothing of it, the frames open at exec end there")
	{
		// before_exec spins 1 ms, then nested (status 7) runs 3 x 10 ms.
		auto r = record({target("fork_exec"), "exec", target("nested"), "3"}, 7, {"--no-follow"});
		require_anomalies(r.report, {});
		require_paths(r.report, {{"main", 1}, {"main;before_exec", 1}});
		auto before = path(r.report, "main;before_exec");
		REQUIRE(before["open"] == 1);
		REQUIRE(n(before["total_ns"]) >= 1000000);
		REQUIRE(n(before["total_ns"]) < 30000000); // not the new program's run
		require_consistent(r.report);
	}
	SECTION("exec of the same binary: the new image is recorded as new roots")
	{
		auto r = record({target("fork_exec"), "exec", target("fork_exec"), "after-exec"}, 0, {"--no-follow"});
		require_anomalies(r.report, {});
		const json &paths = r.report["paths"];
		INFO(paths.dump());
		REQUIRE(paths.size() == 4);
		REQUIRE(path(r.report, "main;before_exec")["open"] == 1);
		REQUIRE(path(r.report, "main;before_exec")["calls"] == 1);
		// The new image's main and after_exec: a root and its child, complete.
		size_t complete_roots = 0, complete_children = 0;
		for (const auto &q : paths) {
			if (q["open"] != 0)
				continue;
			REQUIRE(q["calls"] == 1);
			REQUIRE(n(q["total_ns"]) >= 1000000);
			(q["stack"].size() == 1 ? complete_roots : complete_children)++;
		}
		REQUIRE(complete_roots == 1);
		REQUIRE(complete_children == 1);
		require_consistent(r.report);
	}
}

TEST_CASE("fork and exec followed (the default): the forked child and the exec'd program are recorded, exactly",
	  "[lifecycle][launch]")
{
	SECTION("fork: the child's calls too, in a process of its own")
	{
		auto r = record({target("fork_exec"), "fork"});
		require_anomalies(r.report, {});
		require_paths(r.report, {{"main", 1}, {"main;parent_fn", 1}, {"main;parent_fn;parent_leaf", 1},
					 {"child_fn", 3}});
		REQUIRE(r.report["processes"].size() == 2);
		require_consistent(r.report);
	}
	SECTION("exec of another probed program: its calls too, after the frames open at exec")
	{
		auto r = record({target("fork_exec"), "exec", target("nested"), "3"}, 7);
		require_anomalies(r.report, {});
		// fork_exec's main (left open by the exec) and nested's main merge by name.
		require_paths(r.report, {{"main", 2}, {"main;before_exec", 1}, {"main;outer", 3}, {"main;outer;inner", 9}});
		REQUIRE(path(r.report, "main;before_exec")["open"] == 1);
		REQUIRE(path(r.report, "main")["open"] == 1);
		REQUIRE(path(r.report, "main;outer")["open"] == 0);
		REQUIRE(r.report["processes"].size() == 1);
		require_consistent(r.report);
	}
	SECTION("exec of the same binary: attached once, each call counted once")
	{
		// The links of the first image serve the second (same file, same pid), named by
		// address as the first image's: the second image's names may be unknown.
		auto r = record({target("fork_exec"), "exec", target("fork_exec"), "after-exec"});
		require_anomalies(r.report, {});
		uint64_t calls = 0;
		for (const auto &q : r.report["paths"])
			calls += n(q["calls"]);
		REQUIRE(calls == 4);
		REQUIRE(r.report["paths"].size() == 4);
		REQUIRE(path(r.report, "main;before_exec")["calls"] == 1);
		require_consistent(r.report);
	}
}

TEST_CASE("more call paths than --max-paths: charged to [other] under the nearest kept caller, every call and "
	  "nanosecond kept, the report says so first", "[lifecycle]")
{
	// main -> n<x> -> n<y> -> n<z>, x, y, z in 0..7.
	constexpr uint64_t kPaths = 1 + 8 + 64 + 512;
	SECTION("with room for all")
	{
		auto r = record({target("many_paths")});
		require_anomalies(r.report, {});
		REQUIRE(r.report["paths"].size() == kPaths);
		REQUIRE(path(r.report, "main;n7;n0;n5")["calls"] == 1);
	}
	SECTION("--max-paths 50")
	{
		auto r = record({target("many_paths")}, 0, {"--max-paths", "50"});
		auto m = measured(r.output.out);
		const json &anomalies = r.report["anomalies"];
		REQUIRE(n(anomalies["agg_full"]) > 0);
		REQUIRE(n(anomalies["dropped_ns"]) == 0);
		// 50 paths of their own, and an [other] child under some of them.
		uint64_t own = 0, other = 0, calls = 0, other_calls = 0;
		for (const auto &p : r.report["paths"]) {
			bool is_other = p["stack"].back() == "[other]";
			(is_other ? other : own)++;
			calls += n(p["calls"]);
			other_calls += is_other ? n(p["calls"]) : 0;
			// An [other] frame is a leaf: what ran inside it is in it.
			if (is_other)
				REQUIRE(p["self_ns"] == p["total_ns"]);
		}
		REQUIRE(own <= 50);
		REQUIRE(other > 0);
		// Every call is counted, in its own path or in an [other].
		REQUIRE(calls == kPaths);
		REQUIRE(other_calls >= kPaths - 50);
		REQUIRE(n(anomalies["agg_full"]) <= other_calls);
		require_consistent(r.report);
		// Every nanosecond of main's activation is in the report, and no more:
		// between what the target measured just inside main's probes and just
		// outside them (its probes' cost, or a preemption there, is between).
		auto raw = report_json(r.data, true);
		double kept = double(n(raw["total_self_ns"]));
		INFO("inside " << m["main"] << " outside " << m["main_outer"] << " kept " << kept);
		REQUIRE(kept >= m["main"]);
		REQUIRE(kept <= m["main_outer"]);
		// The text report says it first, with the share.
		Output text = run({usdtprof(), "report", r.data, "--tree"});
		REQUIRE(text.status == 0);
		std::string second = text.out.substr(text.out.find('\n') + 1);
		REQUIRE_THAT(second.substr(0, second.find('\n')), StartsWith("lost paths: ") && Contains("% of the recorded time") &&
			     Contains("--max-paths"));
		REQUIRE(run({usdtprof(), "export", r.data, "--format", "folded", "-o", r.data + ".folded"}).status == 0);
	}
}

namespace {

// A thread's voluntary context switches (its sleeps), -1 if unreadable.
long voluntary_switches(const std::filesystem::path &task)
{
	std::ifstream status(task / "status");
	std::string line;
	while (std::getline(status, line))
		if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
			return std::stol(line.substr(line.find(':') + 1));
	return -1;
}

// Those of pid's thread named comm.
long voluntary_switches(int pid, const std::string &comm)
{
	for (const auto &task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
		std::ifstream name(task.path() / "comm");
		std::string line;
		if (std::getline(name, line) && line == comm)
			return voluntary_switches(task.path());
	}
	return -1;
}

// Those of pid's main thread.
long main_thread_switches(int pid)
{
	return voluntary_switches(std::filesystem::path("/proc") / std::to_string(pid) / "task" / std::to_string(pid));
}

} // namespace

TEST_CASE("the call-path table grows as a burst of new paths comes; its grower sleeps while none come, "
	  "and the main thread wakes once a second",
	  "[lifecycle]")
{
	// main -> pX -> pY -> pZ, X, Y, Z < 32: 33,825 paths, four chunks and more
	// (USDTPROF_PATH_CHUNK), made in well under a second here.
	constexpr uint64_t kPaths = 1 + 32 + 32 * 32 + 32 * 32 * 32;
	Background app({target("fair_paths"), "--wait", "32", "3"});
	std::string pid = app.wait_for_line("ready").substr(6);
	std::string data = temp_dir() + "/burst.data";
	Background rec({usdtprof(), "record", "-p", pid, "-o", data});
	rec.wait_for_line("recording", true);
	// Past the first calibration rounds, at the wait's 50 ms ticks (~0.6 s).
	std::this_thread::sleep_for(std::chrono::seconds(1));
	// Before the change that made the programs wake it, the grower looked 50
	// times a second: 100 switches here. A wake can come from usdtprof's own
	// calibration's paths, a few at most.
	long before = voluntary_switches(rec.pid(), "usdtprof-grow");
	long main_before = main_thread_switches(rec.pid());
	REQUIRE(before >= 0);
	REQUIRE(main_before >= 0);
	std::this_thread::sleep_for(std::chrono::seconds(2));
	long after = voluntary_switches(rec.pid(), "usdtprof-grow");
	long main_after = main_thread_switches(rec.pid());
	CHECK(after - before <= 4);
	// Its tick, a calibration round a second: 2 or 3 wakes. It ticked every
	// 50 ms for the whole recording before: 40 here.
	CHECK(main_after - main_before <= 6);
	REQUIRE(kill(app.pid(), SIGUSR1) == 0);
	REQUIRE(app.wait_for_line("made") == "made " + std::to_string(kPaths));
	REQUIRE(kill(rec.pid(), SIGINT) == 0);
	INFO(rec.rest_of_stderr());
	REQUIRE(rec.wait() == 0);
	Output report = run({usdtprof(), "report", "--format", "json", data});
	REQUIRE(report.status == 0);
	json j = e2e::parse_report(report.out);
	// Every path in a slot of its own: none went to [other] while a chunk
	// was on its way (agg_late), nor for want of room (agg_full).
	require_anomalies(j, {});
	REQUIRE(j["paths"].size() == kPaths);
	uint64_t calls = 0;
	for (const auto &p : j["paths"])
		calls += n(p["calls"]);
	REQUIRE(calls == kPaths);
}

TEST_CASE("thousands of probe sites: every call counted, attach and detach timed", "[lifecycle]")
{
	constexpr int kFunctions = 2000;
	auto r = record({target("many_sites")});
	WARN("record -- many_sites (" << 2 * kFunctions + 2 << " probe sites, " << kFunctions + 1
				       << " calls) took " << r.seconds << " s");
	REQUIRE(r.seconds < 30);
	REQUIRE_THAT(r.output.err, Contains(std::to_string(2 * kFunctions + 2) + " probe sites attached"));

	require_anomalies(r.report, {});
	std::map<std::string, uint64_t> expected = {{"main", 1}};
	for (int i = 0; i < kFunctions; i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%04d", i);
		expected[std::string("main;") + name] = 1;
	}
	require_paths(r.report, expected);
	require_consistent(r.report);
}
