// usdtprof monitor over several processes: -p given several pids, and
// --all (every process of the host with probes, new ones from exec events).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "harness.h"
#include "intervals.h"
#include "profile/profile.h"
#include "serve/http.h"

using namespace e2e;

namespace {

// Whether an interval's processes name pid, with the command name comm.
bool labelled(const std::vector<usdtprof::Profile> &profiles, int pid, const std::string &comm)
{
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::ProfileProcess &proc : p.processes)
			if (proc.pid == pid && proc.comm == comm)
				return true;
	return false;
}

} // namespace

TEST_CASE("monitor -p A,B: each process counted apart under its pid; one exiting leaves the other monitored",
	  "[monitor][hosts]")
{
	std::string dir = temp_dir() + "/pids";
	Background a({target("nested"), "--wait", "20"});
	Background b({target("recursion"), "--wait"});
	a.wait_for_line("ready");
	b.wait_for_line("ready");
	const int pa = a.pid(), pb = b.pid(); // wait() forgets them
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(a.pid()) + "," + std::to_string(b.pid()),
			"-i", "0.2", "--budget", "1", "-o", dir});
	std::string line = mon.wait_for_line("monitoring", true);
	REQUIRE_THAT(line, Catch::Matchers::Contains("pid " + std::to_string(a.pid())));
	REQUIRE_THAT(line, Catch::Matchers::Contains("pid " + std::to_string(b.pid())));
	// A runs and exits first: the monitor goes on with B.
	REQUIRE(kill(a.pid(), SIGUSR1) == 0);
	REQUIRE(a.wait() == 7);
	REQUIRE(kill(mon.pid(), 0) == 0);
	REQUIRE(kill(b.pid(), SIGUSR1) == 0);
	b.wait();
	// The monitor ends when the last of them has gone.
	require_exit(mon, 0);
	auto profiles = interval_profiles(dir);
	REQUIRE(calls_of_pid(profiles, pa, "outer") == 20);
	REQUIRE(calls_of_pid(profiles, pa, "inner") == 60);
	REQUIRE(calls_of_pid(profiles, pa, "main") == 1);
	REQUIRE(calls_of_pid(profiles, pb, "rec") == 20); // rec(5) 4 times
	REQUIRE(calls_of_pid(profiles, pb, "ping") == 6);
	REQUIRE(calls_of_pid(profiles, pb, "outer") == 0);
	REQUIRE(labelled(profiles, pa, "nested"));
	REQUIRE(labelled(profiles, pb, "recursion"));
}

namespace {

// A PHP with probes on (USE_ZEND_DTRACE=1) that calls f() 50 times once go exists.
std::vector<std::string> php_calls(const std::string &go)
{
	return {"env", "USE_ZEND_DTRACE=1", "php", "-r",
		"function f() {} echo \"ready\\n\"; while (!file_exists('" + go +
			"')) usleep(10000); for ($i = 0; $i < 50; $i++) f();"};
}

bool profiled(const std::vector<usdtprof::Profile> &profiles, int pid)
{
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::ProfileProcess &proc : p.processes)
			if (proc.pid == pid)
				return true;
	return false;
}

// `monitor --all` of this test's own processes only (USDTPROF_TEST_ALL_UNDER: the machine is
// shared), native probes, budget 1, -d 60, an interval every interval_s written to out; then extra.
std::vector<std::string> monitor_all(const std::string &interval_s, const std::string &out,
				     const std::vector<std::string> &extra = {})
{
	std::vector<std::string> argv = {"env", "USDTPROF_TEST_ALL_UNDER=" + std::to_string(getpid()), e2e::usdtprof(),
					 "monitor", "--all", "--runtime", "native", "-i", interval_s, "--budget", "1",
					 "-d", "60", "-o", out};
	argv.insert(argv.end(), extra.begin(), extra.end());
	return argv;
}

// pid (fork_exec quiet-exec: no call ever) exec'd a program without probes:
// the intervals describe it attached all along (share 1), then once with the
// exec (0 < share < 1: up to it), then never.
void require_described_up_to_exec(const std::vector<usdtprof::Profile> &profiles, int pid)
{
	size_t whole = 0, part = 0, after = 0;
	for (const usdtprof::Profile &prof : profiles) {
		auto it = std::find_if(prof.processes.begin(), prof.processes.end(),
				       [&](const usdtprof::ProfileProcess &q) { return q.pid == pid; });
		for (const usdtprof::PathNode &n : prof.nodes)
			REQUIRE(n.pid != pid); // it never made a call
		if (it == prof.processes.end()) {
			after += part > 0;
			continue;
		}
		INFO("share " << it->sampled_fraction);
		REQUIRE(part == 0); // described up to its exec's interval, never after
		REQUIRE(it->comm == "fork_exec");
		REQUIRE(it->sampled_fraction > 0);
		(it->sampled_fraction < 1 ? part : whole)++;
	}
	INFO(whole << " intervals attached all along, " << part << " with the exec, " << after << " after");
	REQUIRE(whole >= 1);
	REQUIRE(part == 1);
	REQUIRE(after >= 1);
}

} // namespace

TEST_CASE("monitor --all: native and PHP processes started before and after it, each apart under its pid with "
	  "exact calls; one without probes ignored, usdtprof never profiled",
	  "[monitor][hosts]")
{
	std::string dir = temp_dir(), out = dir + "/all";
	// Before the monitor: found by its scan of /proc.
	Background nested({target("nested"), "--wait", "20"});
	Background php1(php_calls(dir + "/go1"));
	Background sleeper({"sleep", "30"}); // no probes
	nested.wait_for_line("ready");
	php1.wait_for_line("ready");
	const int p_nested = nested.pid(), p_php1 = php1.pid(), p_sleep = sleeper.pid();
	// Only this test's processes (USDTPROF_TEST_ALL_UNDER): the machine is shared.
	Background mon({"env", "USDTPROF_TEST_ALL_UNDER=" + std::to_string(getpid()), e2e::usdtprof(), "monitor",
			"--all", "--runtime", "native", "--runtime", "php", "-i", "0.5", "--budget", "1", "-d", "60",
			"-o", out});
	const int p_mon = mon.pid();
	mon.wait_for_line("monitoring", true);
	// After it: found from their exec events.
	Background recursion({target("recursion"), "--wait"});
	Background php2(php_calls(dir + "/go2"));
	const int p_rec = recursion.pid(), p_php2 = php2.pid();
	recursion.wait_for_line("ready");
	php2.wait_for_line("ready");
	for (int pid : {p_rec, p_php2})
		mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " ", true); // attached
	REQUIRE(kill(p_nested, SIGUSR1) == 0);
	REQUIRE(kill(p_rec, SIGUSR1) == 0);
	std::ofstream(dir + "/go1").put('\n');
	std::ofstream(dir + "/go2").put('\n');
	REQUIRE(nested.wait() == 7);
	recursion.wait();
	REQUIRE(php1.wait() == 0);
	REQUIRE(php2.wait() == 0);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	auto profiles = interval_profiles(out);
	REQUIRE(calls_of_pid(profiles, p_nested, "outer") == 20);
	REQUIRE(calls_of_pid(profiles, p_nested, "inner") == 60);
	REQUIRE(calls_of_pid(profiles, p_rec, "rec") == 20);
	REQUIRE(calls_of_pid(profiles, p_rec, "ping") == 6);
	REQUIRE(calls_of_pid(profiles, p_php1, "f") == 50);
	REQUIRE(calls_of_pid(profiles, p_php2, "f") == 50);
	REQUIRE(labelled(profiles, p_nested, "nested"));
	REQUIRE(labelled(profiles, p_rec, "recursion"));
	REQUIRE(profiled(profiles, p_php1));
	REQUIRE(profiled(profiles, p_php2));
	// Never sampled: counts are exact because every window was whole (from
	// its attach on, for those found later).
	for (int pid : {p_nested, p_php1, p_rec, p_php2})
		require_never_sampled(profiles, pid);
	for (int pid : {p_nested, p_php1}) // found at the start
		for (const auto &p : profiles)
			for (const auto &proc : p.processes)
				if (proc.pid == pid)
					REQUIRE(proc.sampled_fraction == 1.0);
	REQUIRE(err.find("sampling pid") == std::string::npos);
	REQUIRE(!profiled(profiles, p_sleep));
	REQUIRE(!profiled(profiles, p_mon));
	REQUIRE(err.find("pid " + std::to_string(p_sleep) + " ") == std::string::npos);
}

TEST_CASE("monitor --all with no process with probes yet runs its -d in intervals, every one written",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/none";
	// A tree with no probes: only sleep's (USDTPROF_TEST_ALL_UNDER).
	Background sleeper({"sleep", "30"});
	auto t0 = std::chrono::steady_clock::now();
	Output o = run({"env", "USDTPROF_TEST_ALL_UNDER=" + std::to_string(sleeper.pid()), e2e::usdtprof(), "monitor",
			"--all", "-i", "0.5", "-d", "1.5", "-o", out});
	double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	INFO(o.err);
	REQUIRE(o.status == 0);
	REQUIRE_THAT(o.err, Catch::Matchers::Contains("(0 now, at most 64)"));
	// Its intervals cover -d (the first begins once the programs are loaded).
	auto profiles = interval_profiles(out);
	uint64_t covered = 0;
	for (const auto &p : profiles)
		covered += p.duration_ns;
	REQUIRE(profiles.size() >= 2);
	REQUIRE(covered >= 1500000000ull);
	REQUIRE(took >= 1.5);
}

TEST_CASE("monitor --all: --max-processes reached is one line and a count at the stop; a PHP whose probes are off "
	  "is skipped with one line",
	  "[monitor][hosts]")
{
	std::string dir = temp_dir(), out = dir + "/cap";
	Background a({target("nested"), "--wait"}), b({target("nested"), "--wait"}), c({target("nested"), "--wait"});
	Background php({"env", "-u", "USE_ZEND_DTRACE", "php", "-r", "echo \"ready\\n\"; sleep(30);"});
	for (Background *t : {&a, &b, &c, &php})
		t->wait_for_line("ready");
	Output o = run({"env", "USDTPROF_TEST_ALL_UNDER=" + std::to_string(getpid()), e2e::usdtprof(), "monitor", "--all",
			"--runtime", "native,php", "--max-processes", "1", "-i", "0.5", "-d", "0.6", "-o", out});
	INFO(o.err);
	REQUIRE(o.status == 0);
	auto count = [&](const std::string &text) {
		size_t n = 0;
		for (size_t at = o.err.find(text); at != std::string::npos; at = o.err.find(text, at + 1))
			n++;
		return n;
	};
	REQUIRE(count("--all: profiling pid ") == 1);
	REQUIRE(count("--max-processes 1 reached") == 1);
	REQUIRE(count("2 processes with probes were not profiled: --max-processes 1 was reached") == 1);
	REQUIRE(count("pid " + std::to_string(php.pid()) + " (php) skipped") == 1);
	REQUIRE(count("skipped") == 1);
	REQUIRE_THAT(o.err, Catch::Matchers::Contains("USE_ZEND_DTRACE=1"));
}

TEST_CASE("monitor refusals: one line, the documented exit status, no output directory made", "[monitor][hosts]")
{
	std::string dir = temp_dir();
	Background nested({target("nested"), "--wait"});
	nested.wait_for_line("ready");
	const std::string pid = std::to_string(nested.pid());
	struct Refusal {
		std::vector<std::string> args;
		int status;
		std::string line; // what the one line starts with
	};
	const std::vector<Refusal> refusals = {
		{{"--all", "--runtime", "bad"}, 2, "usdtprof: unknown runtime 'bad'"},
		{{"--all", "--runtime", "native", "--runtime", "bad"}, 2, "usdtprof: unknown runtime 'bad'"},
		{{"-p", pid, "--runtime", "bad"}, 2, "usdtprof: unknown runtime 'bad'"},
		{{"--binary", "/bin/true", "--runtime", "bad"}, 2, "usdtprof: unknown runtime 'bad'"},
		{{"--all", "--pair", "bad"}, 2, "usdtprof: invalid probe spec 'bad'"},
		{{"--all", "--push", "ftp://x"}, 1, "usdtprof: invalid push URL 'ftp://x'"},
		{{"--binary", "/bin/true"}, 1, "usdtprof: /bin/true: no probes of any preset"},
		{{"-p", pid, "--runtime", "php"}, 1, "usdtprof: "},
	};
	for (size_t i = 0; i < refusals.size(); i++) {
		const Refusal &r = refusals[i];
		std::string out = dir + "/out" + std::to_string(i);
		std::vector<std::string> argv = {e2e::usdtprof(), "monitor"};
		argv.insert(argv.end(), r.args.begin(), r.args.end());
		for (const char *a : {"-i", "0.2", "-d", "1", "-o"})
			argv.push_back(a);
		argv.push_back(out);
		Output o = run(argv);
		INFO(o.err);
		CHECK(o.status == r.status);
		CHECK(o.err.rfind(r.line, 0) == 0);
		CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
		CHECK(!std::filesystem::exists(out));
	}
	// An output directory that cannot be made is refused before anything is attached.
	Output o = run({e2e::usdtprof(), "monitor", "-p", pid, "-i", "0.2", "-d", "1", "-o", dir + "/no/such"});
	INFO(o.err);
	CHECK(o.status == 1);
	CHECK(o.err == "usdtprof: cannot create " + dir + "/no/such: No such file or directory\n");
	// The target was never harmed.
	REQUIRE(kill(nested.pid(), SIGUSR1) == 0);
	REQUIRE(nested.wait() == 7);
}

namespace {

// The sampled fractions of pid's process in the intervals it is in.
std::vector<double> shares_of(const std::vector<usdtprof::Profile> &profiles, int pid)
{
	std::vector<double> shares;
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::ProfileProcess &proc : p.processes)
			if (proc.pid == pid)
				shares.push_back(proc.sampled_fraction);
	return shares;
}

// hot (whose probes cost most of its CPU once signalled) and nested beside it
// under one `monitor -p HOT,OTHER -i 0.3 --budget 0.05 -o dir` (and more
// arguments): built once the monitor samples hot, over its share
// (sampling: that line).
struct HotBeside {
	Background hot, other;
	const int p_hot, p_other;
	Background mon;
	std::string sampling;

	HotBeside(const std::string &hot_wait, const std::string &other_wait, const std::string &dir,
		  const std::vector<std::string> &more = {})
		: hot({target("hot"), "--wait", hot_wait}), other({target("nested"), "--wait", other_wait}),
		  p_hot(ready_pid(hot)), p_other(ready_pid(other)), mon(monitor_argv(dir, more))
	{
		mon.wait_for_line("monitoring", true);
		REQUIRE(kill(p_hot, SIGUSR1) == 0);
		sampling = mon.wait_for_line("sampling pid " + std::to_string(p_hot) + " ", true);
	}

private:
	static int ready_pid(Background &b)
	{
		b.wait_for_line("ready");
		return b.pid();
	}
	std::vector<std::string> monitor_argv(const std::string &dir, const std::vector<std::string> &more) const
	{
		std::vector<std::string> argv = {e2e::usdtprof(), "monitor", "-p",
						 std::to_string(p_hot) + "," + std::to_string(p_other),
						 "-i", "0.3", "--budget", "0.05", "-o", dir};
		argv.insert(argv.end(), more.begin(), more.end());
		return argv;
	}
};

} // namespace

TEST_CASE("monitor -p A,B: one budget shared fairly: the hot process is sampled, the quiet one keeps every call; "
	  "/metrics has each one's sampled fraction (promtool lints it clean)",
	  "[monitor][hosts]")
{
	std::string dir = temp_dir() + "/fair";
	// quiet's calls last 3 s (300 outer calls of 10 ms, wall clock): about ten
	// intervals, in which hot's windows (1% of 0.3 s, a few ms) catch some of
	// its calls. On a loaded machine one window in four can pass with hot off
	// its CPU: hot has no call in that interval, its file no hot.
	// nested's probes cost ~0.4% of its CPU (8 hits per 10 ms spun); hot's, most of its CPU.
	HotBeside two("20", "300", dir, {"--listen", "127.0.0.1:0"});
	Background &mon = two.mon, &hot = two.hot, &quiet = two.other;
	const int p_hot = two.p_hot, p_quiet = two.p_other;
	const int port = metrics_port(mon);
	// The hot one alone is sampled (its window cut as soon as its cost is seen) ...
	INFO(two.sampling);
	REQUIRE_THAT(two.sampling, Catch::Matchers::Contains("over its fair share of the budget"));
	// ... and /metrics says so of it alone, once an interval it was sampled in
	// is published: quiet (labelled from its first interval, calls or not)
	// stays at 1, and usdtprof_duty_cycle is the smallest share.
	httplib::Client http("127.0.0.1", port);
	const std::string hot_share = "usdtprof_process_sampled_fraction{process=\"hot\",pid=\"" +
				      std::to_string(p_hot) + "\"}";
	const std::string quiet_share = "usdtprof_process_sampled_fraction{process=\"nested\",pid=\"" +
					std::to_string(p_quiet) + "\"}";
	const std::string other_share = "usdtprof_process_sampled_fraction{process=\"[other]\",pid=\"other\"}";
	std::string body;
	double hot_seen = -1;
	for (int i = 0; i < 400 && !(hot_seen >= 0 && hot_seen < 1); i++) {
		auto res = http.Get("/metrics");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		body = res->body;
		hot_seen = metric(body, hot_share);
		if (!(hot_seen >= 0 && hot_seen < 1))
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	INFO(body);
	REQUIRE(hot_seen > 0);
	REQUIRE(hot_seen < 1);
	double quiet_seen = metric(body, quiet_share), other_seen = metric(body, other_share);
	REQUIRE(quiet_seen == 1.0);
	REQUIRE(other_seen == -1); // every process has its own label
	REQUIRE(metric(body, "usdtprof_duty_cycle") == hot_seen);
	require_promtool_clean(body);
	// ... while the quiet one, attached all the time, counts all its calls.
	REQUIRE(kill(p_quiet, SIGUSR1) == 0);
	REQUIRE(quiet.wait() == 7);
	REQUIRE(kill(p_hot, SIGTERM) == 0);
	REQUIRE(hot.wait() == 0); // never harmed
	require_exit(mon, 0);
	std::string log = mon.rest_of_stderr();
	INFO(log);
	REQUIRE(log.find("sampling pid " + std::to_string(p_quiet) + " ") == std::string::npos);
	auto profiles = interval_profiles(dir);
	REQUIRE(calls_of_pid(profiles, p_quiet, "outer") == 300);
	REQUIRE(calls_of_pid(profiles, p_quiet, "inner") == 900);
	for (double share : shares_of(profiles, p_quiet))
		REQUIRE(share == 1.0);
	auto hot_shares = shares_of(profiles, p_hot);
	REQUIRE(!hot_shares.empty());
	// Sampled (how much depends on when the check saw its load: the interval files say).
	REQUIRE(*std::min_element(hot_shares.begin(), hot_shares.end()) < 1.0);
	// The gauge scraped was an interval's share as its file gives it.
	REQUIRE(std::find(hot_shares.begin(), hot_shares.end(), hot_seen) != hot_shares.end());
	uint64_t made = 0;
	std::istringstream(hot.all_stdout().substr(hot.all_stdout().find("calls ") + 6)) >> made;
	uint64_t counted = calls_of_pid(profiles, p_hot, "work");
	INFO("hot made " << made << " calls, " << counted << " counted");
	REQUIRE(counted > 0);
	REQUIRE(counted < made); // sampled: what was measured, never scaled up
	// go tool pprof loads an interval in which hot was sampled beside quiet's
	// calls, and shows hot's own fraction.
	std::vector<std::string> datas;
	for (const auto &e : std::filesystem::directory_iterator(dir))
		if (e.path().extension() == ".data")
			datas.push_back(e.path());
	std::sort(datas.begin(), datas.end());
	// hot stays sampled while quiet makes its calls: some interval has the
	// calls of both (of the ~10 quiet's calls span, one in which hot's
	// window caught calls).
	std::string pb;
	for (const std::string &f : datas) {
		auto profile = usdtprof::load_profile(f);
		REQUIRE(profile);
		std::set<int> called;
		for (const usdtprof::PathNode &n : profile->nodes)
			called.insert(n.pid);
		for (const usdtprof::ProfileProcess &proc : profile->processes)
			if (proc.pid == p_hot && proc.sampled_fraction < 1 && called.size() == 2 && pb.empty())
				pb = f.substr(0, f.size() - 5) + ".pb.gz";
	}
	REQUIRE(!pb.empty());
	Output comments = run({"go", "tool", "pprof", "-comments", pb});
	INFO(pb << ": " << comments.out << comments.err);
	REQUIRE(comments.status == 0);
	REQUIRE_THAT(comments.out, Catch::Matchers::Contains("sampled: probes attached for"));
	REQUIRE_THAT(comments.out, Catch::Matchers::Contains("sampled: pid " + std::to_string(p_hot) +
							     " (hot) probes attached for"));
}

TEST_CASE("monitor -p A,B: every interval file has each process monitored in it with its share, calls or not: "
	  "a sampled one whose windows caught no call, an idle one attached all the time",
	  "[monitor][hosts]")
{
	std::string dir = temp_dir() + "/idle";
	// hot: sampled (its probes cost most of its CPU), then paused between
	// two calls: sampled and idle. nested: never signalled, idle all along.
	HotBeside two("60", "20", dir);
	Background &mon = two.mon, &hot = two.hot, &idle = two.other;
	const int p_hot = two.p_hot, p_idle = two.p_other;
	REQUIRE(kill(p_hot, SIGUSR2) == 0);
	std::string paused = hot.wait_for_line("paused at call ");
	// A window that saw no hit doubles: hot's windows grow to the whole
	// interval, each interval on the way sampled with no call of hot's.
	std::string ends = mon.wait_for_line("sampling of pid " + std::to_string(p_hot) + " ", true, 60);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string log = mon.rest_of_stderr();
	INFO(paused << ends << log);
	REQUIRE(kill(p_hot, SIGTERM) == 0);
	REQUIRE(hot.wait() == 0);
	REQUIRE(kill(p_idle, SIGUSR1) == 0);
	REQUIRE(idle.wait() == 7); // never harmed
	REQUIRE(log.find("sampling pid " + std::to_string(p_idle) + " ") == std::string::npos);
	uint64_t made = std::stoull(paused.substr(paused.find("paused at call ") + 15));
	auto profiles = interval_profiles(dir);
	REQUIRE(profiles.size() >= 3);
	size_t hot_with_calls = 0, hot_sampled_idle = 0;
	double smallest_idle_share = 1;
	for (const usdtprof::Profile &p : profiles) {
		std::map<int, double> share;
		for (const usdtprof::ProfileProcess &proc : p.processes)
			share[proc.pid] = proc.sampled_fraction;
		std::set<int> called;
		for (const usdtprof::PathNode &n : p.nodes)
			called.insert(n.pid);
		INFO("interval of " << p.duration_ns << " ns, sampled_fraction " << p.sampled_fraction << ": hot "
				    << (called.count(p_hot) ? "called" : "idle") << ", share "
				    << (share.count(p_hot) ? share[p_hot] : -1));
		// Both monitored all the time: both in every file, calls or not.
		REQUIRE(p.processes.size() == 2);
		REQUIRE(share.count(p_hot) == 1);
		REQUIRE(share.count(p_idle) == 1);
		// The idle one: attached all the time, no call.
		REQUIRE(share[p_idle] == 1.0);
		REQUIRE(!called.count(p_idle));
		// The file's own share is the smallest: hot's.
		REQUIRE(p.sampled_fraction == share[p_hot]);
		REQUIRE(share[p_hot] > 0);
		if (called.count(p_hot)) {
			hot_with_calls++;
		} else if (share[p_hot] < 1) {
			hot_sampled_idle++;
			smallest_idle_share = std::min(smallest_idle_share, share[p_hot]);
		}
	}
	INFO(hot_with_calls << " intervals with hot's calls, " << hot_sampled_idle
			    << " sampled without, the smallest share of those " << smallest_idle_share);
	REQUIRE(hot_with_calls >= 1);
	REQUIRE(hot_sampled_idle >= 1);
	uint64_t counted = calls_of_pid(profiles, p_hot, "work");
	REQUIRE(counted > 0);
	// What was measured, never scaled up (all of it when hot paused before its window closed).
	REQUIRE(counted <= made);
	// A reader sees the sampled, idle process: go tool pprof's comments of
	// such an interval name hot's share.
	std::vector<std::string> datas;
	for (const auto &e : std::filesystem::directory_iterator(dir))
		if (e.path().extension() == ".data")
			datas.push_back(e.path());
	std::sort(datas.begin(), datas.end());
	std::string data, pb;
	for (const std::string &f : datas) {
		auto profile = usdtprof::load_profile(f);
		REQUIRE(profile);
		bool called = std::any_of(profile->nodes.begin(), profile->nodes.end(),
					  [&](const usdtprof::PathNode &n) { return n.pid == p_hot; });
		if (!called && profile->sampled_fraction < 1) {
			data = f;
			pb = f.substr(0, f.size() - 5) + ".pb.gz";
		}
	}
	REQUIRE(!pb.empty());
	// report's JSON lists both, hot with its share, no call.
	auto json = report_json(data);
	REQUIRE(json["processes"].size() == 2);
	for (const auto &proc : json["processes"])
		if (proc["pid"] == p_hot)
			REQUIRE(proc["sampled_fraction"].get<double>() == json["sampled_fraction"].get<double>());
		else
			REQUIRE(!proc.contains("sampled_fraction"));
	REQUIRE(json["paths"].empty());
	Output comments = run({"go", "tool", "pprof", "-comments", pb});
	INFO(pb << ": " << comments.out << comments.err);
	REQUIRE(comments.status == 0);
	REQUIRE_THAT(comments.out, Catch::Matchers::Contains("sampled: pid " + std::to_string(p_hot) +
							     " (hot) probes attached for"));
}

TEST_CASE("monitor --all: a profiled process that execs is planned again: its new program's calls are counted",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/exec";
	// fork_exec calls main and before_exec, then execs nested, which waits for its own signal.
	Background p({target("fork_exec"), "--wait", "exec", target("nested"), "--wait", "20"});
	p.wait_for_line("ready");
	const int pid = p.pid();
	Background mon(monitor_all("0.3", out));
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (fork_exec)", true);
	REQUIRE(kill(pid, SIGUSR1) == 0);
	// Its new program is found from the exec event and attached: said as a new process is.
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (nested)", true);
	REQUIRE(kill(pid, SIGUSR1) == 0);
	REQUIRE(p.wait() == 7);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	auto profiles = interval_profiles(out);
	REQUIRE(calls_of_pid(profiles, pid, "before_exec") == 1); // open at the exec
	REQUIRE(calls_of_pid(profiles, pid, "outer") == 20);
	REQUIRE(calls_of_pid(profiles, pid, "inner") == 60);
	REQUIRE(calls_of_pid(profiles, pid, "main") == 2); // each program's
	REQUIRE(labelled(profiles, pid, "nested"));
}

// Before, a process that exec'd a program without probes was forgotten at once: the file of
// the interval it exec'd in did not describe it unless it had made calls in it.
TEST_CASE("monitor --all: a profiled process that execs a program without probes is described in the interval "
	  "of its exec, with its share up to it, and in none after",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/exec-none";
	// fork_exec quiet-exec: held, then execs sleep (no probes) before any probe of its own fires.
	Background p({target("fork_exec"), "--wait", "quiet-exec", "/bin/sleep", "30"});
	p.wait_for_line("ready");
	const int pid = p.pid();
	Background mon(monitor_all("0.3", out));
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (fork_exec)", true);
	auto files = [&] { return interval_file_count(out); };
	// Exec'd in the second interval or later (one file written): monitored before it.
	for (int i = 0; i < 600 && files() < 1; i++)
		usleep(100000);
	REQUIRE(kill(pid, SIGUSR1) == 0);
	mon.wait_for_line("exec'd a program without probes of the presets: no longer profiled", true);
	// Two interval files more: the exec's and one after it.
	const size_t seen = files();
	for (int i = 0; i < 600 && files() < seen + 2; i++)
		usleep(100000);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	REQUIRE(kill(pid, SIGKILL) == 0);
	p.wait();
	std::string err = mon.rest_of_stderr();
	INFO(err);
	auto profiles = interval_profiles(out);
	REQUIRE(profiles.size() >= 3);
	require_described_up_to_exec(profiles, pid);
}

TEST_CASE("monitor --all: an exec after the interval's last look for processes, before its end, still ends the "
	  "process's share of that interval at the exec",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/exec-late";
	Background p({target("fork_exec"), "--wait", "quiet-exec", "/bin/sleep", "30"});
	p.wait_for_line("ready");
	const int pid = p.pid();
	// The monitor waits 1.5 s between each interval's last look for
	// processes and its end, saying so: the exec is put there.
	std::vector<std::string> argv = monitor_all("0.3", out);
	argv.insert(argv.begin() + 1, "USDTPROF_TEST_END_PAUSE_MS=1500");
	Background mon(argv);
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (fork_exec)", true);
	// Not the interval it was found in: one file written first.
	for (int i = 0; i < 600 && interval_file_count(out) == 0; i++)
		usleep(100000);
	// The next pause to begin, not one said before (drained first).
	mon.drain();
	mon.wait_for_line_from(mon.stderr_size(), "test: the interval ends in 1500 ms", 30, true);
	REQUIRE(kill(pid, SIGUSR1) == 0);
	mon.wait_for_line("exec'd a program without probes of the presets: no longer profiled", true);
	// The exec's interval, and the one after it.
	for (int pauses = 0; pauses < 2; pauses++) {
		mon.drain();
		mon.wait_for_line_from(mon.stderr_size(), "test: the interval ends in", 30, true);
	}
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	REQUIRE(kill(pid, SIGKILL) == 0);
	p.wait();
	std::string err = mon.rest_of_stderr();
	INFO(err);
	// Before, the exec was seen only in the next interval, and this one said 1.
	require_described_up_to_exec(interval_profiles(out), pid);
}

TEST_CASE("monitor --all: a profiled process that execs a program with probes mid-interval has its own share of "
	  "that interval: its old program's part and its new program's from its attach, not the gap between",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/exec-share";
	// fork_exec (profiled, found by the scan at the start) calls main and
	// before_exec, then execs nested, which makes 300 outer calls (10 ms of
	// spins each, by its own clock) at once: those before its new program
	// is attached (found from the exec event) are not counted.
	Background p({target("fork_exec"), "--wait", "exec", target("nested"), "300"});
	p.wait_for_line("ready");
	const int pid = p.pid();
	Background mon({"env", "USDTPROF_TEST_ALL_UNDER=" + std::to_string(getpid()), e2e::usdtprof(), "monitor", "--all",
			"--runtime", "native", "-i", "2", "--budget", "1", "-d", "60", "-o", out, "--listen",
			"127.0.0.1:0"});
	std::string listening = mon.wait_for_line("metrics at", true);
	std::smatch port;
	REQUIRE(std::regex_search(listening, port, std::regex(":([0-9]+)/metrics")));
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (fork_exec)", true);
	// The exec just after an interval began (-i 2: 1.6 s at least), so that
	// its new program is found in the same interval.
	httplib::Client http("127.0.0.1", std::stoi(port[1]));
	auto intervals = [&] {
		auto res = http.Get("/metrics");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		return metric(res->body, "usdtprof_intervals_total");
	};
	const double before = intervals();
	double now = before;
	for (int i = 0; i < 400 && now == before; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		now = intervals();
	}
	REQUIRE(now > before);
	REQUIRE(kill(pid, SIGUSR1) == 0);
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (nested)", true);
	REQUIRE(p.wait() == 7);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	REQUIRE(err.find("sampling pid") == std::string::npos); // --budget 1: never sampled
	auto profiles = interval_profiles(out);
	const uint64_t counted = calls_of_pid(profiles, pid, "outer");
	REQUIRE(counted > 0);
	REQUIRE(counted <= 300);
	REQUIRE(calls_of_pid(profiles, pid, "before_exec") == 1); // open at the exec
	// Listed in every interval (monitored all the time); attached all of each
	// but the exec's, which has its own share.
	// nested exits before the monitor's stop: an interval that begins after
	// its exit (at most the last: the test stops the monitor then) no longer
	// lists it, as a process gone.
	size_t exec_intervals = 0;
	for (const usdtprof::Profile &pr : profiles) {
		auto shares = shares_of({pr}, pid);
		REQUIRE(shares.size() <= 1);
		if (shares.empty()) {
			REQUIRE(&pr == &profiles.back());
			continue;
		}
		const double share = shares[0];
		if (share == 1.0)
			continue;
		exec_intervals++;
		uint64_t outer = 0, old_main_ns = 0;
		for (const usdtprof::PathNode &n : pr.nodes)
			if (n.pid == pid) {
				if (pr.functions[n.function] == "outer")
					outer += n.calls - n.open;
				if (pr.functions[n.function] == "main" && n.open) // fork_exec's, open at the exec
					old_main_ns = std::max(old_main_ns, n.total_ns);
			}
		const double attached_ns = share * double(pr.duration_ns);
		// Not counted: the new program's outer calls before its attach, in
		// this interval's gap; each spun 10 ms.
		const double missed = double(300 - counted);
		INFO("exec interval of " << pr.duration_ns << " ns: share " << share << " (" << attached_ns
					 << " ns attached), " << outer << " outer calls counted in it, " << missed
					 << " not counted; fork_exec's main " << old_main_ns << " ns up to its exec");
		REQUIRE(share > 0);
		// At least the old program's main up to the exec and the new
		// program's calls counted in it (the first one's entry may
		// precede the moment of the attach taken, by the attach's few ms) ...
		REQUIRE(attached_ns >= double(old_main_ns) + double(outer > 0 ? outer - 1 : 0) * 10e6);
		// ... and not the time between the exec and the attach.
		REQUIRE(double(pr.duration_ns) - attached_ns >= (missed > 1 ? missed - 1 : 0) * 10e6);
	}
	REQUIRE(exec_intervals == 1);
}

TEST_CASE("monitor --all: a function running when a process's new program (after an exec) is attached is charged "
	  "from that attach: none of the old program's time, no frame's self time beyond the new program's life",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/exec-fresh";
	// fork_exec waits for its signal with its thread's stack empty, calls
	// main and before_exec, then execs held: main -> held, which waits in
	// its frame for a second signal (sent once its program is attached).
	Background p({target("fork_exec"), "--wait", "exec", target("held")});
	p.wait_for_line("ready");
	const int pid = p.pid();
	Background mon({"env", "USDTPROF_TEST_ALL_UNDER=" + std::to_string(getpid()), e2e::usdtprof(), "monitor", "--all",
			"--runtime", "native", "-i", "0.5", "--budget", "1", "-d", "60", "--offcpu", "-o", out});
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (fork_exec)", true);
	// The old program idles a while first, longer than the new one lives:
	// that time is nobody's in the new program.
	std::this_thread::sleep_for(std::chrono::milliseconds(1500));
	REQUIRE(kill(pid, SIGUSR1) == 0);
	p.wait_for_line("held");
	mon.wait_for_line("--all: profiling pid " + std::to_string(pid) + " (held)", true);
	REQUIRE(kill(pid, SIGUSR1) == 0);
	std::string lived_line = p.wait_for_line("lived");
	REQUIRE(p.wait() == 0);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	// From held's main's start to after its exit, by its own clock.
	const uint64_t lived = std::stoull(lived_line.substr(lived_line.find(' ') + 1));
	auto profiles = interval_profiles(out);
	REQUIRE(calls_of_pid(profiles, pid, "before_exec") == 1); // open at the exec
	REQUIRE(calls_of_pid(profiles, pid, "held") == 1);
	uint64_t held_self = 0;
	for (const usdtprof::Profile &pr : profiles)
		for (const usdtprof::PathNode &n : pr.nodes) {
			if (n.pid != pid)
				continue;
			const std::string &name = pr.functions[n.function];
			INFO(name << ": self " << n.self_ns << " ns (" << n.self_offcpu_ns << " off-CPU), total " << n.total_ns
				  << " ns; held lived " << lived << " ns");
			// The old program's frames (open at its exec) and the new one's:
			// none holds more than the new program lived.
			REQUIRE(n.self_ns <= lived);
			REQUIRE(n.self_offcpu_ns <= n.self_ns);
			if (name == "held")
				held_self += n.self_ns;
		}
	// held spun 1 ms after its signal, recorded (from the attach, if it was running then).
	REQUIRE(held_self >= 1000000);
}

TEST_CASE("monitor --all: a process's forked children are found from their fork events, each counted exactly "
	  "under its own pid in the intervals and on /metrics (promtool lints it clean); their pid labels go once "
	  "they exit, as zombies not yet reaped",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/fork";
	// fork_exec forks two children, which wait for their own signals to call
	// and exit; it reaps them only at its own second signal.
	Background p({target("fork_exec"), "--wait", "zombies", "2"});
	p.wait_for_line("ready");
	const int parent = p.pid();
	Background mon(monitor_all("1", out, {"--listen", "127.0.0.1:0"}));
	const int port = metrics_port(mon);
	mon.wait_for_line("--all: profiling pid " + std::to_string(parent) + " (fork_exec)", true);
	REQUIRE(kill(parent, SIGUSR1) == 0);
	std::vector<int> kids;
	for (size_t from = 0; kids.size() < 2;) {
		std::string line = p.wait_for_line_from(from, "child ");
		from = p.all_stdout().find(line, from) + line.size();
		kids.push_back(std::stoi(line.substr(line.find("child ") + 6)));
	}
	REQUIRE(kids[0] != kids[1]);
	// Found from their fork events and attached before they call anything.
	for (int kid : kids)
		mon.wait_for_line("--all: profiling pid " + std::to_string(kid) + " (fork_exec)", true);
	for (int kid : kids)
		REQUIRE(kill(kid, SIGUSR1) == 0);
	// The children make their calls and exit (an idle thread's calls reach
	// the map at its exit), as zombies: their parent waits for its signal.
	// /metrics: each child's calls under its own pid, in the interval that
	// reads them; the series of a process that has gone are dropped at the
	// next interval (-i 1: a second to see them).
	httplib::Client http("127.0.0.1", port);
	auto series = [](int pid) {
		return "usdtprof_function_calls_total{process=\"fork_exec\",pid=\"" + std::to_string(pid) +
		       "\",function=\"child_fn\"}";
	};
	std::set<int> seen;
	std::string body, with_kids;
	for (int i = 0; i < 400 && seen.size() < kids.size(); i++) {
		auto res = http.Get("/metrics");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		body = res->body;
		for (int kid : kids)
			if (metric(body, series(kid)) == 3) {
				seen.insert(kid);
				with_kids = body;
			}
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	INFO(body);
	REQUIRE(seen.size() == kids.size());
	require_promtool_clean(with_kids);
	// Scrapes until no pid label of pids is left (20 s at most: the test fails if one stays).
	auto until_unlabelled = [&](const std::vector<int> &pids) {
		auto labelled_any = [&pids](const std::string &text) {
			for (int pid : pids)
				if (text.find("pid=\"" + std::to_string(pid) + "\"") != std::string::npos)
					return true;
			return false;
		};
		for (int i = 0; i < 200 && labelled_any(body); i++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			auto res = http.Get("/metrics");
			REQUIRE(res);
			body = res->body;
		}
		REQUIRE(!labelled_any(body));
	};
	// Exited, not reaped: the children's labels go all the same (kill(pid, 0)
	// still reaches a zombie; /proc/PID/stat says Z).
	until_unlabelled(kids);
	for (int kid : kids) {
		std::ifstream in("/proc/" + std::to_string(kid) + "/stat");
		std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		INFO(stat);
		REQUIRE(stat.find(") Z ") != std::string::npos);
	}
	// The parent reaps them and exits.
	REQUIRE(kill(parent, SIGUSR1) == 0);
	REQUIRE(p.wait() == 0);
	// All gone: no pid label of theirs stays.
	until_unlabelled({parent, kids[0], kids[1]});
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	auto profiles = interval_profiles(out);
	for (int kid : kids) {
		REQUIRE(calls_of_pid(profiles, kid, "child_fn") == 3);
		REQUIRE(calls_of_pid(profiles, kid, "parent_leaf") == 0);
		REQUIRE(labelled(profiles, kid, "fork_exec"));
	}
	REQUIRE(calls_of_pid(profiles, parent, "child_fn") == 0);
	REQUIRE(calls_of_pid(profiles, parent, "parent_leaf") == 1);
	REQUIRE(calls_of_pid(profiles, parent, "parent_fn") == 1);
	REQUIRE(calls_of_pid(profiles, parent, "main") == 1);
}

TEST_CASE("monitor --all: a process found mid-interval has the share of it its probes were attached; a monitored "
	  "process without calls is on /metrics under its own pid with calls 0 (promtool lints it clean)",
	  "[monitor][hosts]")
{
	std::string out = temp_dir() + "/midway";
	// Found by the scan at the start, idle until its signal.
	Background idle({target("nested"), "--wait", "20"});
	idle.wait_for_line("ready");
	const int p_idle = idle.pid();
	Background mon(monitor_all("2", out, {"--listen", "127.0.0.1:0"}));
	const int port = metrics_port(mon);
	mon.wait_for_line("--all: profiling pid " + std::to_string(p_idle) + " (nested)", true);
	httplib::Client http("127.0.0.1", port);
	auto scrape = [&] {
		auto res = http.Get("/metrics");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		return res->body;
	};
	auto labels = [](const std::string &family, int pid) {
		return family + "{process=\"nested\",pid=\"" + std::to_string(pid) + "\"}";
	};
	// The idle one, no call yet: its own pid label, calls 0, attached all the time.
	std::string body;
	for (int i = 0; i < 400 && metric(body, labels("usdtprof_process_calls_total", p_idle)) != 0; i++) {
		if (i)
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		body = scrape();
	}
	{
		INFO(body);
		REQUIRE(metric(body, labels("usdtprof_process_calls_total", p_idle)) == 0);
		REQUIRE(metric(body, labels("usdtprof_process_sampled_fraction", p_idle)) == 1);
		REQUIRE(body.find("pid=\"other\"}") == std::string::npos); // no sample of the unlabelled
		require_promtool_clean(body);
	}
	// Started after the monitor, calling from its start (300 outer calls,
	// 10 ms of spins each), just after an interval began (-i 2: 1.6 s at
	// least): found from its exec event within the interval, its calls
	// before that not counted. (Found as an interval ends, it would have no
	// call counted in it, and its first interval with calls would be whole.)
	const double intervals = metric(body, "usdtprof_intervals_total");
	for (int i = 0; i < 400 && metric(body, "usdtprof_intervals_total") == intervals; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		body = scrape();
	}
	REQUIRE(metric(body, "usdtprof_intervals_total") > intervals);
	Background late({target("nested"), "300"});
	const int p_late = late.pid();
	mon.wait_for_line("--all: profiling pid " + std::to_string(p_late) + " (nested)", true);
	std::set<double> late_seen; // its sampled fractions on /metrics, until it has exited
	for (int i = 0; i < 2000; i++) {
		double share = metric(body = scrape(), labels("usdtprof_process_sampled_fraction", p_late));
		if (share >= 0)
			late_seen.insert(share);
		std::string stat;
		std::getline(std::ifstream("/proc/" + std::to_string(p_late) + "/stat"), stat);
		if (stat.empty() || stat.find(") Z ") != std::string::npos)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	REQUIRE(late.wait() == 7);
	// The idle one makes its calls and exits: counted under its own pid.
	REQUIRE(kill(p_idle, SIGUSR1) == 0);
	REQUIRE(idle.wait() == 7);
	for (int i = 0; i < 400 && metric(body, labels("usdtprof_process_calls_total", p_idle)) != 81; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		body = scrape();
	}
	{
		INFO(body);
		REQUIRE(metric(body, labels("usdtprof_process_calls_total", p_idle)) == 81); // main, 20 outer, 60 inner
		require_promtool_clean(body);
	}
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	require_exit(mon, 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	// Found in an interval, attached since: its window whole, never sampled (--budget 1).
	REQUIRE(err.find("sampling pid") == std::string::npos);
	auto profiles = interval_profiles(out);
	REQUIRE(calls_of_pid(profiles, p_idle, "outer") == 20);
	for (double share : shares_of(profiles, p_idle))
		REQUIRE(share == 1.0);
	// The late one: in the interval it was found in, attached from then on:
	// less than all of it, but at least the time of the calls counted in it
	// (10 ms each by its own clock; the first one's entry may precede the
	// moment taken, by the attach's few ms); in every later one, all of it
	// (--budget 1: never sampled). That interval is its first in the files
	// unless it was found as the interval ended, too late for any call
	// counted in it: then /metrics gave its share (a scrape every 50 ms
	// while it runs, for seconds).
	double first_share = 2;
	uint64_t counted = 0;
	for (const usdtprof::Profile &p : profiles) {
		uint64_t outer = 0;
		bool in = false;
		for (const usdtprof::PathNode &n : p.nodes)
			if (n.pid == p_late) {
				in = true;
				if (p.functions[n.function] == "outer")
					outer += n.calls - n.open;
			}
		if (!in)
			continue;
		counted += outer;
		double share = shares_of({p}, p_late).at(0);
		INFO("interval of " << p.duration_ns << " ns: share " << share << ", " << outer << " outer calls");
		REQUIRE(share > 0);
		if (first_share > 1) {
			first_share = share;
			REQUIRE(share * double(p.duration_ns) >= double(outer > 0 ? outer - 1 : 0) * 10e6);
		} else {
			REQUIRE(share == 1.0);
		}
	}
	REQUIRE(first_share <= 1);
	REQUIRE(counted > 0);
	REQUIRE(counted <= 300);
	// /metrics: one interval's share below 1 at most, the found one's.
	std::vector<double> below;
	for (double share : late_seen)
		if (share < 1)
			below.push_back(share);
	INFO("late: first share in the files " << first_share << ", " << below.size() << " below 1 on /metrics");
	REQUIRE(below.size() <= 1);
	REQUIRE((first_share < 1 || !below.empty()));
	if (first_share < 1 && !below.empty())
		REQUIRE(below[0] == first_share);
}
