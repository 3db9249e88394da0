#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/session.h"

using namespace usdtprof;

namespace {

// This thread's voluntary context switches: one for each sleep in poll().
long voluntary_switches()
{
	rusage u{};
	getrusage(RUSAGE_THREAD, &u);
	return u.ru_nvcsw;
}

// A child that exits after ms milliseconds.
pid_t exiting_child(int ms)
{
	pid_t child = fork();
	if (child == 0) {
		usleep(useconds_t(ms) * 1000);
		_exit(0);
	}
	return child;
}

} // namespace

TEST_CASE("wait: with no tick and a pidfd for each process, one sleep until the exit, a zombie's too")
{
	sigset_t before;
	sigprocmask(SIG_SETMASK, nullptr, &before);
	{
		StopSignals signals(false);
		pid_t child = exiting_child(1000);
		REQUIRE(child > 0);
		ExitWatch exits({child});
		REQUIRE(exits.pidfds().size() == 1);
		CHECK(!exits.polls());

		long switches = voluntary_switches();
		WaitPlan plan; // no deadline, no tick: 200 ms steps were 5 sleeps here
		CHECK(wait_until(signals, exits, plan) == Wake::TargetExited);
		CHECK(voluntary_switches() - switches <= 2);
		// Not reaped until now: a zombie has exited.
		int status = -1;
		CHECK(waitpid(child, &status, 0) == child);
	}
	sigprocmask(SIG_SETMASK, &before, nullptr);
}

TEST_CASE("wait: a tick first runs after the period, then again as soon as it asks, until the deadline")
{
	sigset_t before;
	sigprocmask(SIG_SETMASK, nullptr, &before);
	{
		StopSignals signals(false);
		ExitWatch none;
		int ticks = 0;
		WaitPlan plan{Clock::now() + std::chrono::milliseconds(500), std::chrono::milliseconds(100),
			      [&] {
				      ticks++;
				      return std::chrono::milliseconds(20);
			      }};
		CHECK(wait_until(signals, none, plan) == Wake::Deadline);
		// At 100 ms, then every 20 ms: 21 ticks, fewer when polls return
		// late under load. Every period would be 5; one sleep to the
		// deadline, 1.
		CHECK(ticks >= 8);
		CHECK(ticks <= 22);
	}
	sigprocmask(SIG_SETMASK, &before, nullptr);
}
