// Target processes: launching a command held until probes are attached,
// describing a process, reading strings from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile.h"
#include "proc_maps.h"
#include "result.h"

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

bool process_exists(int pid);
ProfileProcess describe_process(int pid);
// A pidfd that becomes readable when the process exits, or -1.
int open_pidfd(int pid);

} // namespace usdtprof
