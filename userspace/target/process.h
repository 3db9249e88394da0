// Target processes: launching a command held until probes are attached,
// describing a process, reading strings from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "target/proc_maps.h"
#include "base/result.h"

namespace usdtprof {

// A launched command, stopped at its ELF entry point (its shared libraries
// mapped, none of its code run) until release().
class HeldChild {
public:
	static Result<HeldChild> launch(const std::vector<std::string> &argv);
	HeldChild(HeldChild &&other) noexcept : pid_(other.pid_), held_(other.held_) { other.pid_ = 0; }
	HeldChild &operator=(HeldChild &&) = delete;
	// A child never released never ran: it is killed.
	~HeldChild();

	int pid() const { return pid_; }
	Result<void> release();
	// Waits for the exit; returns its exit status, or 128 + signal like a shell.
	int wait();

private:
	explicit HeldChild(int pid) : pid_(pid) {}
	int pid_;
	bool held_ = true;
};

// argv as execvp takes it (pointing into argv): made before a fork, since a
// child of a multithreaded process may not allocate.
std::vector<char *> exec_args(const std::vector<std::string> &argv);
// The child side of a launch: restores the signals usdtprof blocks and, if
// may_exec, execs args; on failure writes errno to report_fd and exits 127.
[[noreturn]] void exec_in_child(char *const *args, int report_fd, bool may_exec);
// Runs a just-exec'd, ptrace-stopped process up to its entry point, so that
// the dynamic loader has mapped its libraries, by planting a breakpoint there.
Result<void> run_to_entry(int pid);

bool process_exists(int pid);
ProfileProcess describe_process(int pid);
// A pidfd that becomes readable when the process exits, or -1.
int open_pidfd(int pid);
// A process that exited (a zombie too) maps nothing: that is not a lack of probes.
bool has_exited(int pid);

} // namespace usdtprof
