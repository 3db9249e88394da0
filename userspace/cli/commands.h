// One file per subcommand: each registers its options and returns how to run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "base/output_file.h"

namespace usdtprof {
struct TargetSpec;
struct Profile;
}

namespace usdtprof::cli {

struct Command {
	CLI::App *app;
	std::function<int()> run; // returns the exit status; throws UserError
};

// The target and probe options record, trace and monitor share: -p, --binary,
// --runtime, --pair and --task.
void add_target_options(CLI::App *app, usdtprof::TargetSpec &o);
// What only record and trace take: the command after -- and how it is
// launched (--ruby-call-hook, --no-follow, --kill-on-stop), --span and
// --per-thread (monitor has none: docs/monitoring.md says why).
void add_launch_options(CLI::App *app, usdtprof::TargetSpec &o);
// Throws the usage error unless exactly one target was given.
void require_one_target(const usdtprof::TargetSpec &o, const char *command);

// What report and export read (inputs.cpp): files or monitor directories,
// --since/--until and --focus/--ignore.
struct InputArgs {
	std::vector<std::string> files;
	std::string since, until, focus, ignore;
	bool per_thread = false;
};
void add_input_options(CLI::App *app, InputArgs &in);
// Loaded, merged and filtered; throws UserError. Says on stderr how many
// profiles were merged.
usdtprof::Profile load_inputs(const InputArgs &in, bool raw);
// The files and directories read: in.files, or the default usdtprof.data.
std::vector<std::string> input_paths(const InputArgs &in);
// The inputs as error messages name them: "usdtprof.data", "a.data b.data".
std::string inputs_name(const InputArgs &in);

// Whether -o means stdout: no -o, or "-" (as perf, pprof and gzip read it;
// a file named "-" is ./-).
inline bool output_is_stdout(const std::string &output) { return output.empty() || output == "-"; }
// Writes what produce makes to -o's file (write_output: replaced atomically,
// never through a link; a device or FIFO written through) or to stdout
// (output_is_stdout). Throws UserError.
void write_result(const std::string &output, const OutputProducer &produce);
// Throws a usage error when -o names a regular file the command reads (an input
// profile, or a profile in an input monitor directory, through any link):
// write_result would replace it. Called before anything is loaded.
void refuse_output_over_inputs(const std::string &output, const std::vector<std::string> &inputs);

Command add_record_command(CLI::App &parent);
Command add_report_command(CLI::App &parent);
Command add_export_command(CLI::App &parent);
Command add_trace_command(CLI::App &parent);
Command add_list_command(CLI::App &parent);
Command add_monitor_command(CLI::App &parent);
Command add_diff_command(CLI::App &parent);

} // namespace usdtprof::cli
