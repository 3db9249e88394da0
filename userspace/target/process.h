// Target processes: launching a command held until probes are attached,
// describing a process, reading strings from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"
#include "target/proc_maps.h"
#include "base/result.h"
#include "base/unique_fd.h"

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

// A forked child that is to exec a command: its pid, and the read end of a
// pipe on which it writes errno if it cannot exec (end of file once it has).
struct ForkedCommand {
	int pid = 0;
	UniqueFd exec_report;
};
// Forks a child that restores the signals usdtprof blocks and execs argv if
// may_exec() (called in the child, before the exec) returns true.
Result<ForkedCommand> fork_command(const std::vector<std::string> &argv, const std::function<bool()> &may_exec);
// Waits for the child's exec: 0 once it has exec'd, else the errno it reported.
int exec_error(const ForkedCommand &child);
// Runs a just-exec'd, ptrace-stopped process up to its entry point, so that
// the dynamic loader has mapped its libraries, by planting a breakpoint there.
Result<void> run_to_entry(int pid);

// Whether pid is a process that has not exited: a zombie (exited, not yet
// reaped by its parent) has.
bool process_exists(int pid);
// Whether a /proc/PID/stat text says its process has exited: a zombie (Z) or
// dead (X) with no other live thread (a leader that exited beside live
// threads is Z too, its process runs on). Unparsable: false.
bool stat_says_exited(std::string_view stat);
ProfileProcess describe_process(int pid);
// A thread's name: as it is now while the thread lives, else as it was when
// it exited (exited: by tid, Engine::read_thread_comms).
std::string thread_name(uint32_t pid, uint32_t tid, const std::map<uint32_t, std::string> &exited);
// A pidfd that becomes readable when the process exits, or -1.
int open_pidfd(int pid);
// A process that exited (a zombie too) maps nothing: that is not a lack of probes.
bool has_exited(int pid);

} // namespace usdtprof
