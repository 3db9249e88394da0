// monitor -p A,B and --all: one overhead budget for the host, shared fairly.
// Each process has its own sampling window in every interval, as long as
// fair_duties (interval.h) gives it from its own probe hits: a hot process is
// sampled while a quiet one stays attached all the time. See
// docs/monitoring.md ("One budget, shared fairly").
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "engine/probes.h"
#include "session/interval.h"
#include "session/session.h"

namespace usdtprof {

class ProcessWindows {
public:
	// sites: every process's sites (FoundSite::pid), kept by the monitor.
	ProcessWindows(Session &session, const std::vector<FoundSite> &sites) : session_(session), sites_(sites) {}

	// An interval begins: the windows closed in the last one open again
	// (their sites attached first).
	void begin(uint64_t interval_begin);
	// When the next window closes (time_point::max(): none is sampled).
	Clock::time_point next_close(std::chrono::duration<double> length) const;
	// Closes every window whose share of the interval has passed.
	void close_due(std::chrono::duration<double> length);
	// At an interval's end: the processes sampled in the next one close
	// now, so that this interval holds all they counted.
	void close_sampled();
	// Whether some process is attached all the time (its cost is checked
	// as the interval goes).
	bool any_whole() const;

	// Each profiled process's hits since base (which moves to now), its CPU
	// time (cpu, by pid), the share of [interval_begin, now] its probes were
	// attached (one found in it, not sampled, as attached from its start)
	// and its duty now; its window's cost (window_ns) in the same span:
	// span_share is [interval_begin, now]'s share of an interval.
	std::vector<ProcessLoad> loads(const std::map<int, uint64_t> &cpu, uint64_t interval_begin, uint64_t now,
				       double span_share, std::map<uint32_t, uint64_t> &base) const;
	// usdtprof's CPU to attach one site, measured at the monitor's start:
	// a window's cost until its own detach and attach are measured.
	void set_site_cost(double ns) { site_ns_ = ns; }
	// The share of [interval_begin, end] pid's probes were attached.
	double attached_share(int pid, uint64_t interval_begin, uint64_t end) const;
	// The next duties (fair_duties); sampling starting or ending for a
	// process is said once each time, with hit_ns, the budget and the figures.
	void set_duties(const std::map<int, double> &duties, const std::vector<ProcessLoad> &loads, double hit_ns,
			double budget, const char *from);
	// The smallest attached share of the processes in [begin, end] (1: none sampled).
	double smallest_share(uint64_t interval_begin, uint64_t end) const;
	// A process found in the interval (--all): its probes attached at
	// attached_ns, its window opens there; before, it was not attached.
	void found(int pid, uint64_t attached_ns);
	// A profiled process exec'd at exec_ns: its old program's probes were
	// attached up to there (kept for its share of the interval); its window
	// goes, and opens again if its new program is found with probes.
	void exec(int pid, uint64_t exec_ns);
	// A process that has gone.
	void forget(int pid);

private:
	struct Window {
		double duty = 1;
		bool attached = true;
		uint64_t open = 0;  // in this interval (0: from its start)
		uint64_t close = 0; // 0: still open
		uint64_t earlier = 0; // ns attached in this interval before open (a program before its exec)
		uint64_t found = 0;   // found in this interval (new, or after an exec): when; 0: not
		// usdtprof's CPU for its last attach and detach (0: not yet measured).
		uint64_t attach_cpu = 0, close_cpu = 0;
	};
	// usdtprof's CPU to close pid's window and open it again.
	double window_ns(int pid, const Window *w) const;
	void close(int pid, Window &w);
	// The ns of [interval_begin, end] pid's probes were attached.
	uint64_t attached_ns(int pid, uint64_t interval_begin, uint64_t end) const;

	Session &session_;
	const std::vector<FoundSite> &sites_;
	std::map<int, Window> windows_;
	std::map<int, uint64_t> exec_attached_; // exec'd in this interval, not (yet) found again: ns attached before
	uint64_t begin_ = 0; // the interval's
	double site_ns_ = 0; // set_site_cost
};

} // namespace usdtprof
