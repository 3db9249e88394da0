// `usdtprof monitor`: continuous, low-overhead profiling. Every interval the
// kernel's totals are read as deltas and written as one profile; probes are
// attached in windows when their cost would exceed a budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "target/target_spec.h"

namespace usdtprof {

struct MonitorOptions {
	TargetSpec target;             // -p, --binary, --runtime, --pair, --task, --max-paths (no command)
	std::string dir = "usdtprof-monitor"; // one profile per interval
	double interval_s = 10;
	double jitter = 0.2;           // each interval is interval_s * (1 +- jitter), uniformly
	double budget = 0.01;          // estimated probe cost / the target's own CPU time
	double min_duty = 0.01;        // never attach for less than this share of an interval
	size_t keep = 360;             // intervals kept in dir (0: no limit)
	uint64_t max_bytes = 1ull << 30; // bytes kept in dir (0: no limit)
	uint64_t max_interval_bytes = 32ull << 20; // one interval's .data (0: no limit); the heaviest paths are kept
	double max_age_s = 0;          // oldest interval kept (0: no limit)
	std::string listen;            // HOST:PORT for Prometheus' /metrics; "": none
	std::string web_config_file;   // /metrics TLS and basic auth (Prometheus' web config); "": none
	size_t top_n = 50;             // function series in /metrics
	std::string push_url;          // Pyroscope-compatible endpoint, http or https; "": none
	std::string push_ca_file;      // CA certificates for https; "": the system's
	std::string push_basic_auth_file;   // "USER:PASSWORD"; else $USDTPROF_PUSH_BASIC_AUTH
	std::string push_bearer_token_file; // a token; else $USDTPROF_PUSH_BEARER_TOKEN
	std::string service = "usdtprof"; // the pushed profiles' application name
	double duration_s = 0;         // 0: until SIGINT/SIGTERM
	bool offcpu = false;           // split self time into on- and off-CPU: a hook on every context switch
	bool all = false;              // every process of the host with probes of runtimes, new ones too
	size_t max_processes = 64;     // --all: processes profiled at once
	std::vector<std::string> runtimes; // --runtime: one, or for --all several; none: detected
};

// Returns the exit status. Throws UserError for what stops it from starting.
int monitor(const MonitorOptions &options);

} // namespace usdtprof
