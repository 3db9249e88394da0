#include <memory>

#include "cli/commands.h"
#include "report/formats.h"
#include "session/recorder.h"
#include "base/result.h"

namespace usdtprof::cli {

Command add_trace_command(CLI::App &parent)
{
	struct Args {
		RecordOptions record;
		TraceOptions trace;
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand(
		"trace", "Record every entry and exit as a timeline (Chrome trace / Perfetto, speedscope)");
	app->add_option("-d,--duration", a->record.duration_s, "Stop after SECONDS (default: Ctrl-C or exit)")
		->check(CLI::PositiveNumber);
	app->add_option("-o,--output", a->trace.output, "Timeline file to write")->capture_default_str();
	app->add_option("--format", a->trace.format, describe_formats(kUseTrace))
		->capture_default_str()
		->check(CLI::IsMember(format_names(kUseTrace)));
	app->add_option("--max-events", a->trace.max_events, "Write at most N events")
		->capture_default_str()
		->check(CLI::PositiveNumber);
	app->add_option("--profile", a->record.output, "Call-path profile of the same run")->capture_default_str();
	add_target_options(app, a->record.target);
	add_launch_options(app, a->record.target);
	return {app, [a] {
			require_one_target(a->record.target, "trace");
			a->record.trace = a->trace;
			return record(a->record);
		}};
}

} // namespace usdtprof::cli
