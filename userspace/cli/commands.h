// One file per subcommand: each registers its options and returns how to run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace usdtprof {
struct RecordOptions;
}

namespace usdtprof::cli {

struct Command {
	CLI::App *app;
	std::function<int()> run; // returns the exit status; throws UserError
};

// The target and probe options record, trace and monitor share: -p, --binary,
// --runtime, --pair and --task.
void add_target_options(CLI::App *app, usdtprof::RecordOptions &o);
// What only record and trace take, to launch a command: the command after --
// and --ruby-call-hook.
void add_launch_options(CLI::App *app, usdtprof::RecordOptions &o);
// Throws the usage error unless exactly one target was given.
void require_one_target(const usdtprof::RecordOptions &o, const char *command);

Command add_record_command(CLI::App &parent);
Command add_report_command(CLI::App &parent);
Command add_export_command(CLI::App &parent);
Command add_trace_command(CLI::App &parent);
Command add_list_command(CLI::App &parent);
Command add_monitor_command(CLI::App &parent);

} // namespace usdtprof::cli
