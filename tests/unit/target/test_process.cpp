#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <pthread.h>
#include <sstream>
#include <string>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "target/process.h"

using namespace usdtprof;

namespace {

// A /proc/PID/stat line with the given command, state and num_threads (field 20).
std::string stat_line(const std::string &comm, const std::string &state, const std::string &threads)
{
	return "4242 (" + comm + ") " + state + " 1 4242 4242 0 -1 4194560 80 0 0 0 0 0 0 0 20 0 " + threads +
	       " 0 12345 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
}

std::string stat_of(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

// Waits (at most 10 s) until pid's state in /proc/PID/stat is state.
bool wait_for_state(int pid, char state)
{
	for (int i = 0; i < 1000; i++) {
		std::string stat = stat_of(pid);
		size_t paren = stat.rfind(')');
		if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == state)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return false;
}

int release_fd = -1;

void *wait_for_release(void *)
{
	char c;
	(void)!read(release_fd, &c, 1);
	return nullptr;
}

} // namespace

TEST_CASE("process: /proc/PID/stat says exited for a zombie or dead process with no other thread")
{
	CHECK(!stat_says_exited(stat_line("srv", "S", "1")));
	CHECK(!stat_says_exited(stat_line("srv", "R", "4")));
	CHECK(!stat_says_exited(stat_line("srv", "D", "1")));
	CHECK(stat_says_exited(stat_line("srv", "Z", "1")));
	CHECK(stat_says_exited(stat_line("srv", "X", "1")));
	// A reaped leader's count may already be down to 0.
	CHECK(stat_says_exited(stat_line("srv", "Z", "0")));
	// A leader that exited beside live threads ("Zl"): the process runs on.
	CHECK(!stat_says_exited(stat_line("srv", "Z", "2")));
	// The command is the target's to choose: the state follows the last ')'.
	CHECK(stat_says_exited(stat_line("a) S 1 (b", "Z", "1")));
	CHECK(!stat_says_exited(stat_line("a) Z 1 (b", "S", "1")));
	CHECK(!stat_says_exited(stat_line(") Z ) Z", "S", "1")));
	// Unparsable: not said to have exited.
	CHECK(!stat_says_exited(""));
	CHECK(!stat_says_exited("4242 (srv"));
	CHECK(!stat_says_exited("4242 (srv) Z 1 4242"));
	CHECK(!stat_says_exited(stat_line("srv", "Zl", "1")));
	CHECK(!stat_says_exited(stat_line("srv", "Z", "x")));
	CHECK(!stat_says_exited(stat_line("srv", "Z", "1x")));
}

TEST_CASE("process: a zombie does not exist, a process whose leader exited beside a live thread does")
{
	CHECK(process_exists(getpid()));
	CHECK(!process_exists(0));
	CHECK(!process_exists(-1));

	// A child that exits, not reaped yet: a zombie.
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0)
		_exit(0);
	REQUIRE(wait_for_state(child, 'Z'));
	CHECK(kill(child, 0) == 0); // what process_exists used to go by
	CHECK(stat_says_exited(stat_of(child)));
	CHECK(!process_exists(child));
	REQUIRE(waitpid(child, nullptr, 0) == child);
	CHECK(!process_exists(child));

	// A child whose main thread exits while another waits: Z, yet running.
	int release[2];
	REQUIRE(pipe(release) == 0);
	child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		close(release[1]);
		release_fd = release[0];
		pthread_t t;
		if (pthread_create(&t, nullptr, wait_for_release, nullptr) != 0)
			_exit(1);
		// The main thread alone ends (pthread_exit would unwind into Catch).
		syscall(SYS_exit, 0);
	}
	close(release[0]);
	REQUIRE(wait_for_state(child, 'Z'));
	INFO(stat_of(child));
	CHECK(process_exists(child));
	// Its last thread exits: now a zombie.
	close(release[1]);
	for (int i = 0; i < 1000 && process_exists(child); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	CHECK(!process_exists(child));
	int status = -1;
	REQUIRE(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status));
	CHECK(WEXITSTATUS(status) == 0);
}
