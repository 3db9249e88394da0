// usdtprof monitor: interval profiles that add up exactly, sampling windows
// within the overhead budget, signals, Prometheus metrics.
#include <catch2/catch.hpp>
#include <regex>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include "serve/http.h"
#include <sstream>
#include <thread>

#include "harness.h"
#include "intervals.h"
#include "profile/profile.h"

using namespace e2e;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMs = 1000000;

// Each interval begins where the last one ended.
void require_contiguous(const std::vector<usdtprof::Profile> &profiles)
{
	for (size_t i = 1; i < profiles.size(); i++) {
		INFO("interval " << i);
		REQUIRE(profiles[i].start_unix_ns == profiles[i - 1].stop_unix_ns);
		REQUIRE(profiles[i].stop_unix_ns - profiles[i].start_unix_ns == int64_t(profiles[i].duration_ns));
	}
}

void sleep_s(double s)
{
	std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

} // namespace

TEST_CASE("monitor: interval profiles add up to the exact calls, none lost or counted twice", "[monitor]")
{
	std::string dir = temp_dir() + "/intervals";
	Background t({target("nested"), "--wait", "150"});
	std::string pid = std::to_string(t.pid());
	t.wait_for_line("ready");
	Background mon({e2e::usdtprof(), "monitor", "-p", pid, "-i", "0.1", "--budget", "1", "-o", dir});
	mon.wait_for_line("monitoring", true);
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	REQUIRE(t.wait() == 7);
	// The monitor ends with its target.
	REQUIRE(mon.wait() == 0);
	auto profiles = interval_profiles(dir);
	INFO(profiles.size() << " intervals");
	REQUIRE(profiles.size() >= 10);
	for (const auto &p : profiles) {
		// --budget 1 (the probes may cost as much CPU as the target): never
		// sampled, unless the target is starved so that the monitor's own CPU outweighs it.
		REQUIRE(p.sampled_fraction == 1.0);
		for (const auto &n : p.nodes)
			REQUIRE(n.self_offcpu_ns == 0); // no context-switch hook without --offcpu
		REQUIRE(p.anomalies.at("exit_no_frame") == 0);
		REQUIRE(p.anomalies.at("exit_mismatch") == 0);
	}
	// 150 outer calls of 10 ms each, over 1.5 s: many intervals, exact sums.
	REQUIRE(calls_of(profiles, "outer") == 150);
	REQUIRE(calls_of(profiles, "inner") == 450);
	REQUIRE(calls_of(profiles, "main") == 1);
	// Each has its pprof twin.
	for (const auto &e : fs::directory_iterator(dir))
		if (e.path().extension() == ".data") {
			fs::path pb = e.path();
			REQUIRE(fs::exists(pb.replace_extension(".pb.gz")));
		}
}

TEST_CASE("monitor -d: contiguous intervals, the last one no sliver, together long enough for the time they hold",
	  "[monitor]")
{
	std::string dir = temp_dir() + "/duration";
	Background t({target("nested"), "--wait", "1000"});
	t.wait_for_line("ready");
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.5", "--budget", "1", "-d",
			"0.9", "-o", dir});
	mon.wait_for_line("monitoring", true);
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	REQUIRE(mon.wait() == 0);
	kill(t.pid(), SIGKILL);
	t.wait();
	auto profiles = interval_profiles(dir);
	// 0.4-0.6 s (jittered), then the rest: a last interval under half an
	// interval is folded into the one before, never written as a sliver
	// (the defect wrote one of 525 ns). The rest is at least 0.3 s after the
	// first interval's planned end, less the first interval's own read and
	// write, which under load took 60 ms (a last interval of 240 ms).
	REQUIRE(profiles.size() == 2);
	require_contiguous(profiles);
	REQUIRE(profiles.back().duration_ns >= 100 * kMs);
	// main was entered after the attach and runs to the end: the one thread's
	// self times all lie within the intervals, which cover the whole run.
	uint64_t self = 0, duration = 0;
	for (const auto &p : profiles) {
		duration += p.duration_ns;
		for (const auto &n : p.nodes)
			self += n.self_ns;
	}
	INFO(self << " ns of self time in " << duration << " ns of intervals");
	REQUIRE(calls_of(profiles, "main") == 1);
	REQUIRE(duration >= 900 * kMs);
	REQUIRE(self <= duration);
}

TEST_CASE("monitor: a hot target is sampled in windows within the budget, counts never extrapolated", "[monitor]")
{
	std::string dir = temp_dir() + "/hot";
	Background t({target("hot"), "--wait", "4"});
	t.wait_for_line("ready");
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.5", "--budget", "0.01", "-o",
			dir, "--listen", "127.0.0.1:0"});
	mon.wait_for_line("monitoring", true);
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	REQUIRE(t.wait() == 0); // never harmed
	REQUIRE(mon.wait() == 0);
	// When sampling starts, the log says why, with the figures that decided it.
	std::string log = mon.rest_of_stderr();
	std::smatch why;
	INFO(log);
	REQUIRE(std::regex_search(log, why, std::regex("sampling from now: estimated probe cost ([0-9.]+)% "
							"of the target's CPU \\([0-9]+ hits, [0-9]+ ns trap each, [0-9.]+ s target "
							"CPU\\) is over the budget 1%: probes attached for ([0-9]+)% of each interval")));
	REQUIRE(std::stod(why[1]) > 1);
	REQUIRE(std::stod(why[2]) < 100);
	uint64_t made = 0;
	std::istringstream(t.all_stdout().substr(t.all_stdout().find("calls ") + 6)) >> made;
	auto profiles = interval_profiles(dir);
	REQUIRE(profiles.size() >= 4);
	// The first interval measures the cost in its first moments (the hot
	// loop starts as it begins) and is sampled from there on, as later ones
	// are: it had every probe attached all along, at every start.
	REQUIRE(profiles.front().sampled_fraction < 1);
	double smallest = 1;
	for (const auto &p : profiles)
		smallest = std::min(smallest, p.sampled_fraction);
	INFO("target made " << made << " calls; smallest sampled fraction " << smallest);
	REQUIRE(smallest < 0.5);
	uint64_t counted = calls_of(profiles, "work");
	REQUIRE(counted > 0);
	REQUIRE(counted < made); // what was measured, not scaled up
	// A window charges nothing beyond the time its probes were attached
	// (closing detaches the links for tens of ms after the window's end):
	// the one probed thread's self time fits in the attached share.
	std::ostringstream seen;
	for (const auto &p : profiles) {
		uint64_t self = 0, calls = 0, open = 0;
		for (const auto &n : p.nodes) {
			self += n.self_ns;
			calls += n.calls;
			open += n.open;
		}
		double attached_ns = p.sampled_fraction * double(p.duration_ns);
		seen << "[" << p.start_unix_ns << " +" << p.duration_ns << " ns, sampled " << p.sampled_fraction << ", self "
		     << self << ", calls " << calls << ", open " << open << "] ";
		INFO("intervals so far: " << seen.str());
		REQUIRE(double(self) <= attached_ns + 1000); // + the fraction's rounding
	}
	require_contiguous(profiles);
	// Frames open when a window closed are counted then, not again after:
	// at most one exit without its entry per window (each interval's own count).
	uint64_t window_exits = 0;
	for (const auto &p : profiles)
		window_exits += p.anomalies.at("window_exits");
	REQUIRE(window_exits <= profiles.size());
}

TEST_CASE("monitor: SIGHUP reopens the output directory, SIGTERM stops cleanly; metrics are served", "[monitor]")
{
	std::string dir = temp_dir() + "/signals";
	int port = free_port(); // not a fixed one: two suites on one host would share it
	Background t({target("nested"), "--wait", "1000"});
	t.wait_for_line("ready");
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.2", "--budget", "1", "--offcpu", "-o", dir, "--listen",
			"127.0.0.1:" + std::to_string(port)});
	mon.wait_for_line("monitoring", true);
	sleep_s(0.5);
	// As logrotate would; an interval written meanwhile makes one try fail.
	std::error_code gone;
	for (int i = 0; i < 100 && (fs::remove_all(dir, gone), gone); i++)
		sleep_s(0.01);
	REQUIRE(!gone);
	REQUIRE(kill(mon.pid(), SIGHUP) == 0);
	mon.wait_for_line("reopened", true);
	sleep_s(0.5);
	REQUIRE(fs::exists(dir));
	REQUIRE(!interval_profiles(dir).empty());

	httplib::Client http("127.0.0.1", port);
	auto res = http.Get("/metrics");
	REQUIRE(res);
	REQUIRE(res->status == 200);
	INFO(res->body);
	REQUIRE(res->body.find("usdtprof_function_calls_total{process=\"nested\",function=\"outer\"}") != std::string::npos);
	REQUIRE(res->body.find("usdtprof_duty_cycle 1") != std::string::npos);
	REQUIRE(res->body.find("usdtprof_intervals_total") != std::string::npos);
	// The cost the budget counts, as counters: the target's CPU time while
	// monitored is at most what the kernel says it used (read after the
	// scrape; a tick's rounding allowed), the probes' part of it at most
	// all of it, and usdtprof's own CPU time is counted.
	double profiled = metric(res->body, "usdtprof_profiled_cpu_seconds_total");
	double probes = metric(res->body, "usdtprof_probe_cost_seconds_total");
	double fixed = metric(res->body, "usdtprof_fixed_cost_seconds_total");
	double target_cpu = process_cpu_seconds(t.pid());
	INFO("target CPU " << target_cpu << " s by /proc");
	REQUIRE(profiled > 0);
	REQUIRE(profiled <= target_cpu + 0.02);
	REQUIRE(probes >= 0);
	REQUIRE(probes <= profiled);
	REQUIRE(fixed > 0);

	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	REQUIRE_THAT(mon.rest_of_stderr(), Catch::Matchers::Contains("stopped after"));
	// The target goes on, unharmed.
	REQUIRE(kill(t.pid(), 0) == 0);
	kill(t.pid(), SIGKILL);
}

TEST_CASE("monitor: bad input is one line with exit status 2", "[monitor]")
{
	Output none = run({e2e::usdtprof(), "monitor"});
	REQUIRE(none.status == 2);
	REQUIRE_THAT(none.err, Catch::Matchers::Contains("exactly one of -p PID, --binary PATH or --all"));
	Output bad_listen = run({e2e::usdtprof(), "monitor", "--binary", target("nested"), "--listen", "nonsense", "-o",
				 temp_dir() + "/x"});
	REQUIRE(bad_listen.status != 0);
	REQUIRE(std::count(bad_listen.err.begin(), bad_listen.err.end(), '\n') == 1);
}

TEST_CASE("monitor --binary: the call-path slots of processes gone are used again; none is short of room",
	  "[monitor]")
{
	// Each run of many_paths makes 585 paths. The table's first chunk has
	// 8,192 slots: without the slots of runs gone coming back, the 15th run
	// would find none and go to [other] children. Its leaves spin 200 us, so
	// the probes cost well within the budget: no interval is sampled.
	constexpr int kRuns = 16;
	std::string dir = temp_dir() + "/reuse";
	Background mon({e2e::usdtprof(), "monitor", "--binary", target("many_paths"), "--max-paths", "1200", "-i", "0.2",
			"--budget", "1", "-o", dir});
	mon.wait_for_line("monitoring", true);
	for (int run = 0; run < kRuns; run++) {
		Output o = e2e::run({target("many_paths"), "200"});
		REQUIRE(o.status == 0);
		sleep_s(0.5); // its paths reported and forgotten before the next run's
	}
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	auto profiles = interval_profiles(dir);
	REQUIRE(calls_of(profiles, "main") == kRuns);
	REQUIRE(calls_of(profiles, "n7") == kRuns * (8 + 64 + 512) / 8);
	for (const auto &p : profiles) {
		REQUIRE(p.anomalies.at("agg_full") == 0);
		for (const auto &f : p.functions)
			REQUIRE(f != "[other]");
	}
}

TEST_CASE("monitor --binary: survives its target's restarts, every run counted exactly", "[monitor]")
{
	std::string dir = temp_dir() + "/restarts";
	Background mon({e2e::usdtprof(), "monitor", "--binary", target("nested"), "-i", "0.2", "--budget", "1", "-o", dir});
	mon.wait_for_line("monitoring", true);
	// Three runs one after another, each a new process of the binary.
	for (int run = 0; run < 3; run++) {
		Output o = e2e::run({target("nested"), "20"});
		REQUIRE(o.status == 7);
	}
	sleep_s(0.6); // a full interval after the last run
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	auto profiles = interval_profiles(dir);
	for (const auto &p : profiles) {
		std::string procs;
		for (const auto &proc : p.processes)
			procs += std::to_string(proc.pid) + " ";
		UNSCOPED_INFO("interval: main " << calls_of({p}, "main") << " outer " << calls_of({p}, "outer") << " pids " << procs);
	}
	REQUIRE(calls_of(profiles, "main") == 3);
	REQUIRE(calls_of(profiles, "outer") == 60);
	REQUIRE(calls_of(profiles, "inner") == 180);
	std::set<int32_t> pids;
	for (const auto &p : profiles)
		for (const auto &proc : p.processes)
			pids.insert(proc.pid);
	REQUIRE(pids.size() == 3);
}
