// usdtprof monitor over several processes: -p given several pids, and
// --all (every process of the host with probes, new ones from exec events).
#include <catch2/catch.hpp>
#include <csignal>
#include <set>

#include "harness.h"
#include "intervals.h"
#include "profile/profile.h"

using namespace e2e;

namespace {

// Calls of a function by one process over all intervals.
uint64_t calls_of_pid(const std::vector<usdtprof::Profile> &profiles, int pid, const std::string &name)
{
	uint64_t calls = 0;
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::PathNode &n : p.nodes)
			if (n.pid == pid && p.functions[n.function] == name)
				calls += n.calls;
	return calls;
}

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
	REQUIRE(mon.wait() == 0);
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
