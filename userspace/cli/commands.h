// One file per subcommand: each registers its options and returns how to run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace usdtprof::cli {

struct Command {
	CLI::App *app;
	std::function<int()> run; // returns the exit status; throws UserError
};

Command add_record_command(CLI::App &parent);
Command add_report_command(CLI::App &parent);
Command add_export_command(CLI::App &parent);
Command add_trace_command(CLI::App &parent);
Command add_list_command(CLI::App &parent);

} // namespace usdtprof::cli
