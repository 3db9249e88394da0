// End-to-end test helpers: run usdtprof and the test targets as real processes.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

namespace e2e {

struct Output {
	int status = -1; // exit status, or 128 + signal
	std::string out, err;
};

// Runs argv to completion, capturing stdout and stderr.
Output run(const std::vector<std::string> &argv);

// A process running in the background; its stdout and stderr are read line by line.
class Background {
public:
	explicit Background(const std::vector<std::string> &argv);
	~Background(); // kills the process if still running
	Background(const Background &) = delete;
	Background &operator=(const Background &) = delete;

	int pid() const { return pid_; }
	// Waits up to timeout_s for a line of stdout (or stderr) containing text.
	std::string wait_for_line(const std::string &text, bool from_stderr = false, double timeout_s = 30);
	// ... of stdout (or stderr), starting at byte from of what it printed there
	// (stdout_size(), stderr_size()).
	std::string wait_for_line_from(size_t from, const std::string &text, double timeout_s = 30,
				       bool from_stderr = false);
	size_t stdout_size() const { return out_buf_.size(); }
	size_t stderr_size() const { return err_buf_.size(); }
	// Reads all it has printed so far (then stdout_size(), stderr_size() are now's).
	void drain();
	int wait(); // exit status, or 128 + signal
	std::string rest_of_stderr();
	std::string all_stdout() const { return out_buf_; }

private:
	int pid_ = -1, out_fd_ = -1, err_fd_ = -1;
	std::string out_buf_, err_buf_;
};

std::string usdtprof();                 // path of the usdtprof binary
std::string target(const std::string &name); // path of a test target
std::string temp_dir();                 // a fresh directory, per call
// Text written to dir/name (a script for a test to run; fails the test if not
// all written): the file's path.
std::string write_file(const std::string &dir, const std::string &name, const std::string &text);
// A /metrics text as Prometheus' own linter reads it: it prints each problem
// it finds, so a clean text makes it say nothing (REQUIREs it).
void require_promtool_clean(const std::string &text);
// Waits for p and requires its exit status, showing its stderr when it differs
// (a monitor that fails says why only there).
void require_exit(Background &p, int status);
// A file of the source tree (tests/clients/...), whatever the working directory.
std::string source_file(const std::string &relative);

// A target's "measured slack NS" line (tests/targets/spin.h): how much longer
// than its spins asked for the run took on this machine; 0 if absent.
double slack_ns(const std::string &target_stdout);
// A time usdtprof measured for spins of a known total: within 2% of it, plus
// the run's slack (load stretches spins; usdtprof must never undercount).
void require_time(const nlohmann::json &value, double known_ns, double slack_ns);

// A JSON report parsed, each path given the "stack" a consumer rebuilds from
// its parents (docs/report-json.md, version 2: each path has its id, its
// parent's id and its own name); fails the test if the report is not version
// 2 or a path has a stack of its own or a parent that is not an earlier path.
nlohmann::json parse_report(const std::string &text);
// `usdtprof report --format json FILE` through parse_report; raw: times as measured
// (--raw), for checks of the kernel's bookkeeping against a target's own clock.
nlohmann::json report_json(const std::string &profile, bool raw = false);
// Fails the test on any anomaly counter of report that is not 0 (but the
// host's, host_counter), or, for one named in at_most (which the report must
// have), above its bound there.
void require_no_anomalies(const nlohmann::json &report, const std::map<std::string, uint64_t> &at_most = {});
// A counter of the machine, not of the profile: host_steal_ns (the
// hypervisor's steal while recording), which no test controls.
bool host_counter(const std::string &anomaly);

// What recording a launched command left: usdtprof's output (with the
// command's stdout), the profile, the run's slack and the profile's report.
struct Recorded {
	Output output;
	std::string data;      // the profile: DIR/profile.data in a fresh directory
	double slack = 0;      // slack_ns of the command's stdout
	nlohmann::json report; // report_json(data, raw); null from record_profile
};
struct RecordArgs {
	// (Defaults on every member: designated initializers may leave any out.)
	std::vector<std::string> env = {};     // a prefix that runs usdtprof: {"env", "-u", "RUBYOPT"}
	std::vector<std::string> options = {}; // record's, before "--"
	int status = 0;                        // the exit status record must have (the command's)
	bool raw = false;                      // the report's times as measured (report_json)
};
// `ENV usdtprof record -o DIR/profile.data OPTIONS -- COMMAND`, which must
// exit args.status; for tests that read the profile otherwise or not at all.
Recorded record_profile(const std::vector<std::string> &command, const RecordArgs &args = {});
// The prelude of most recording tests: record_profile, then the profile's
// JSON report (report_json).
Recorded record_report(const std::vector<std::string> &command, const RecordArgs &args = {});

// The functions[] entry named name (fails the test if absent).
nlohmann::json function(const nlohmann::json &report, const std::string &name);
// The paths[] entry whose stack joined with ';' is stack, or null.
nlohmann::json path(const nlohmann::json &report, const std::string &stack);

// The target's "measured NAME NS" lines: what it timed itself.
std::map<std::string, double> measured(const std::string &out);
// A loopback TCP port nobody listens on right now (the kernel's choice).
int free_port();
// The port of `monitor --listen 127.0.0.1:0`'s /metrics, from its "metrics at"
// line on stderr (waited for).
int metrics_port(Background &monitor);

} // namespace e2e
