// A launched command followed through exec and into the processes it starts
// (`record -- CMD`, `trace -- CMD`), with ptrace: each new program image is
// held at its entry point (its libraries mapped, none of its code run) and
// each forked process before its first instruction, while a callback
// attaches probes. docs/design.md, "Following a launched command", says what
// tracing costs the command and what it changes for it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace usdtprof {

class FollowedCommand {
public:
	struct Callbacks {
		// A process of the tree at the entry point of a new image, stopped.
		std::function<void(int pid)> on_image;
		// A process forked (not vforked) by parent, which has its parent's
		// image, stopped before its first instruction.
		std::function<void(int pid, int parent)> on_fork;
		// A process of the tree stopped to receive sig, which it will
		// get once this returns (Ruby's repair script raises one).
		std::function<void(int pid, int sig)> on_signal;
	};
	// Starts argv in a tracer thread; returns once the command's first image
	// went through on_image, or with why it could not start.
	static Result<std::unique_ptr<FollowedCommand>> launch(const std::vector<std::string> &argv,
							       Callbacks callbacks);
	~FollowedCommand();
	FollowedCommand(const FollowedCommand &) = delete;
	FollowedCommand &operator=(const FollowedCommand &) = delete;

	int pid() const { return pid_; }
	// From now on no callback runs: each process is let go at its next stop.
	void stop_following();
	// Waits for the launched command to exit: its status, or 128 + signal like a shell.
	int wait();

private:
	struct Tracer;
	FollowedCommand() = default;
	// Shared with the tracer thread, which outlives this object when the
	// command is not waited for (usdtprof fails after the launch).
	std::shared_ptr<Tracer> tracer_;
	int pid_ = 0;
};

} // namespace usdtprof
