// monitor --all's discovery from the kernel (bpf/exec_events.bpf.c): the
// processes that exec a program, and the children forked by watched ones.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"

struct exec_events_bpf;
struct ring_buffer;

namespace usdtprof {

struct ProcessStart {
	int pid = 0;
	int parent = 0; // a fork's parent; 0 for an exec
	uint64_t ns = 0; // when, CLOCK_MONOTONIC
};

// Loaded and attached by load(); detached when destroyed.
class ExecEvents {
public:
	static Result<std::unique_ptr<ExecEvents>> load();
	~ExecEvents();
	ExecEvents(const ExecEvents &) = delete;
	ExecEvents &operator=(const ExecEvents &) = delete;

	// The processes started since the last call, in order, without waiting.
	std::vector<ProcessStart> take();
	// Events the kernel had no room for since the last call (then /proc is rescanned).
	uint64_t take_lost();
	// Forks of pid are sent (it is profiled), or no longer.
	void watch(int pid);
	void unwatch(int pid);

private:
	ExecEvents() = default;
	exec_events_bpf *skel_ = nullptr;
	ring_buffer *ring_ = nullptr;
	std::vector<ProcessStart> pending_;
	uint64_t lost_seen_ = 0;
};

} // namespace usdtprof
