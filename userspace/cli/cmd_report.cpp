#include <cstdio>
#include <memory>

#include "report/callers.h"
#include "cli/commands.h"
#include "report/formats.h"
#include "base/output_file.h"
#include "profile/profile.h"
#include "report/report.h"
#include "base/result.h"
#include "report/views.h"

namespace usdtprof::cli {

Command add_report_command(CLI::App &parent)
{
	struct Args {
		InputArgs in;
		std::string sort = "self";
		std::string format = "text";
		std::string time = "wall";
		bool tree = false;
		ReportOptions options;
		std::string callers, callees;
		std::string output;
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand("report", "Print a recorded profile");
	add_input_options(app, a->in);
	auto *view = app->add_option("--view", a->options.view, "What to show: " + describe_views())
		->capture_default_str()
		->check(CLI::IsMember(view_names()));
	app->add_flag("--tree", a->tree, "Show the call tree (--view tree)")->excludes(view);
	app->add_flag("--per-process", a->options.per_process,
		      "Keep processes apart: one table per process (--tree, json: one root per process)");
	app->add_flag("--raw", a->options.raw, "Times as measured, the probes' own cost included (default: compensated)");
	app->add_option("--sort", a->sort, "self, total, calls, avg or name")->capture_default_str();
	app->add_option("--limit", a->options.limit, "Show at most N functions (0: all)");
	app->add_option("--min-percent", a->options.min_percent,
			"--tree: hide nodes under this share of the total time")
		->capture_default_str()
		->check(CLI::Range(0.0, 100.0));
	app->add_option("--time", a->time, "Self time shown: wall, cpu (on-CPU part) or offcpu")
		->capture_default_str()
		->check(CLI::IsMember({"wall", "cpu", "offcpu"}));
	app->add_option("--callers", a->callers, "Who calls function NAME: calls and time per caller (recursion counted once)");
	app->add_option("--callees", a->callees, "What function NAME calls: calls and time per callee (recursion counted once)");
	app->add_option("--format", a->format, describe_formats(kUseReport))
		->capture_default_str()
		->check(CLI::IsMember(format_names(kUseReport)));
	app->add_option("-o,--output", a->output, "Write here instead of stdout ('-': stdout; --format html: a file such as report.html)");
	return {app, [a] {
			auto sort = parse_sort_key(a->sort);
			if (!sort)
				throw UserError(sort.error().message, 2);
			a->options.sort = *sort;
			a->options.time = *parse_time_mode(a->time);
			a->options.per_thread = a->in.per_thread;
			if (a->tree)
				a->options.view = "tree";
			refuse_output_over_inputs(a->output, input_paths(a->in));
			Profile profile = load_inputs(a->in, a->options.raw);
			if (!a->callers.empty() || !a->callees.empty()) {
				auto out = render_neighbours(a->options.per_process ? split_by_process(profile) : profile,
							     a->options, a->format == "json", a->callers, a->callees);
				if (!out)
					throw UserError(inputs_name(a->in) + ": " + out.error().message);
				write_result(a->output, [&](Sink &sink) { sink.write(*out); });
				return 0;
			}
			const Format &format = *find_format(a->format, kUseReport);
			write_result(a->output, [&](Sink &sink) { format.profile(std::move(profile), a->options, sink); });
			return 0;
		}};
}

} // namespace usdtprof::cli
