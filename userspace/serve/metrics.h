// Prometheus metrics of `usdtprof monitor`: per-function counters accumulated
// from each interval's profile, and the monitor's health. See docs/monitoring.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "profile/profile.h"

namespace usdtprof {

// A process of a monitor of several processes, and the share of the last
// interval during which its probes were attached (each has its own window).
struct ProcessShare {
	int32_t pid = 0;
	std::string process;      // comm
	std::string container_id; // "": none
	double sampled_fraction = 1;
};

// Cumulative since the monitor started (the counters) or current (the gauges).
struct MonitorHealth {
	uint64_t probe_hits = 0;
	uint64_t anomalies = 0;
	uint64_t dropped_paths = 0;
	uint64_t intervals = 0;
	// The cost the budget counts, summed over the intervals: the profiled
	// processes' CPU time (probes included), the probes' estimated part of
	// it, and the costs sampling cannot cut (usdtprof's own CPU time, its
	// context-switch hook).
	uint64_t profiled_cpu_ns = 0;
	uint64_t probe_cost_ns = 0;
	uint64_t fixed_cost_ns = 0;
	double duty_cycle = 0;               // share of the time probes were attached, 0..1
	// The last interval's (probe + fixed cost) / (profiled CPU - probe cost):
	// as the budget counts it; large when the processes barely ran.
	double estimated_overhead_ratio = 0;
	// A monitor of several processes (-p A,B, --all): each process profiled
	// in the last interval and its share of it (rendered with pid labels).
	std::vector<ProcessShare> process_shares;
};

// Thread-safe: the monitor thread adds intervals and sets the health, the
// HTTP thread renders.
class MetricsRegistry {
public:
	static constexpr size_t kDefaultTopN = 50;
	// The function name of the per-process series that collects the pairs
	// first seen after top_n series exist.
	static constexpr const char *kOtherFunction = "[other]";
	// At most this many processes get an "[other]" series of their own; the
	// pairs of the processes after them go to one ("[other]", "[other]")
	// series: process names are the targets' to choose, as many as they like.
	static constexpr size_t kDefaultOtherProcesses = 50;
	static constexpr const char *kOtherProcess = "[other]";

	// With pid_labels (a monitor of several processes: -p A,B, --all) each
	// series also has a `pid` label: the process's pid for at most
	// pid_labels processes at once, "other" for the rest (kOtherPid). A
	// process keeps its pid label while it lives; once it has gone, its
	// series are dropped at the next interval without calls of it (calls
	// read after it exited are still added to them) and its label freed. New
	// processes take the free labels heaviest first (their self time in the
	// interval they first appear in), then the monitored processes without
	// calls take those left (usdtprof_process_calls_total 0, their sampled
	// fraction). A label that has never counted a call is given up to a
	// process with calls when none is free. 0: no pid label.
	static constexpr size_t kDefaultPidLabels = 20;
	static constexpr const char *kOtherPid = "other";

	explicit MetricsRegistry(size_t top_n = kDefaultTopN, size_t other_processes = kDefaultOtherProcesses,
				 size_t pid_labels = 0);

	// Adds one interval's deltas: per (process comm, container, function
	// name), the sum over the function's nodes of self_ns and calls. A process
	// below is a comm in one container (or on the host). Series are sticky: once
	// a (process, function) pair has a series it keeps it; a pair first seen
	// when top_n series exist is added to its process's "[other]" series
	// (those do not count towards top_n; past other_processes of them, to
	// the one ("[other]", "[other]") series). Within one interval new pairs get
	// the free series in order of decreasing self time. alive (nullptr: all
	// are) tells whether a pid-labelled process still runs; monitored: the
	// processes the monitor profiled in the interval, calls or not (with pid
	// labels: each takes a free one).
	void add_interval(const Profile &delta, bool (*alive)(int pid) = nullptr,
			  const std::vector<ProcessShare> &monitored = {});

	// Replaces the health values. Counters never go down: a smaller counter
	// value than the last one is ignored.
	void set_health(const MonitorHealth &health);

	// Prometheus text exposition format 0.0.4.
	std::string render() const;

	// Function series, "[other]" ones included.
	size_t series_count() const;
	// Whether some process had to share the ("[other]", "[other]") series.
	bool other_processes_full() const;
	// The processes that have a pid label now.
	size_t pid_labelled() const;

private:
	struct Series {
		uint64_t self_ns = 0;
		uint64_t self_offcpu_ns = 0; // the part of self_ns spent switched out
		uint64_t calls = 0;
	};
	struct Key {
		std::string process;   // comm
		std::string container; // the first 12 hex digits of its container id; "": none
		std::string pid;       // its pid, kOtherPid; "": no pid labels
		std::string function;
		auto operator<=>(const Key &) const = default;
	};

	size_t top_n_;
	size_t other_processes_;
	size_t named_series_ = 0; // series other than "[other]"
	size_t other_series_ = 0; // per-process "[other]" series
	size_t pid_labels_;
	// A pid's label: usdtprof_process_calls_total's labels and value.
	struct Label {
		bool gone = false;
		std::string process, container; // as when it was given
		uint64_t calls = 0;
		bool counted = false; // some series has it (else a process with calls may take it)
	};
	std::map<int32_t, Label> labelled_;
	uint64_t other_calls_ = 0; // of the processes without a label
	bool other_counted_ = false;

	std::string pid_label(int32_t pid) const;
	void label_new_pids(const std::map<int32_t, uint64_t> &self_ns,
			    const std::map<int32_t, const ProfileProcess *> &process_of,
			    const std::vector<ProcessShare> &monitored);
	void drop_gone_pids(const std::map<int32_t, uint64_t> &active);
	Key catch_all() const;
	void render_process_shares(std::string &out) const;
	void render_process_calls(std::string &out) const;
	mutable std::mutex mutex_;
	std::map<Key, Series> series_;
	MonitorHealth health_;
};

// Escapes a label value for the text format: backslash, double quote and
// newline; invalid UTF-8 bytes become U+FFFD (Prometheus rejects them).
std::string prometheus_label_escape(const std::string &value);

} // namespace usdtprof
