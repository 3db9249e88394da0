#include <memory>

#include "commands.h"
#include "recorder.h"
#include "result.h"

namespace usdtprof::cli {

Command add_trace_command(CLI::App &parent)
{
	struct Args {
		RecordOptions record;
		TraceOptions trace;
		std::string format = "chrome";
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand(
		"trace", "Record every entry and exit as a timeline (Chrome trace / Perfetto, speedscope)");
	app->add_option("-p,--pid", a->record.pid, "Process to attach to")->check(CLI::PositiveNumber);
	app->add_option("-d,--duration", a->record.duration_s, "Stop after SECONDS (default: Ctrl-C or exit)")
		->check(CLI::PositiveNumber);
	app->add_option("-o,--output", a->trace.output, "Timeline file to write")->capture_default_str();
	app->add_option("--format", a->format, "chrome (Perfetto, chrome://tracing) or speedscope")
		->capture_default_str()
		->check(CLI::IsMember({"chrome", "speedscope"}));
	app->add_option("--max-events", a->trace.max_events, "Write at most N events")
		->capture_default_str()
		->check(CLI::PositiveNumber);
	app->add_option("--profile", a->record.output, "Call-path profile of the same run")->capture_default_str();
	app->add_option("--pair", a->record.pairs, "Also a custom probe pair: PROVIDER:ENTRY/EXIT[:argN], argN points to the name");
	app->add_option("--task", a->record.tasks, "Custom task probes: PROVIDER:CREATE/BEGIN/END[:argN], argN is the task id");
	app->add_option("command", a->record.command, "Command to launch, after --");
	return {app, [a] {
			if ((a->record.pid != 0) == !a->record.command.empty())
				throw UserError("trace needs exactly one of -p PID or -- CMD", 2);
			a->trace.speedscope = a->format == "speedscope";
			a->record.trace = a->trace;
			return record(a->record);
		}};
}

} // namespace usdtprof::cli
