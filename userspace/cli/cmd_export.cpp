#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>

#include "cli/commands.h"
#include "report/formats.h"
#include "base/output_file.h"
#include "profile/profile.h"
#include "report/report.h"
#include "base/result.h"
#include "base/text_escape.h"

namespace usdtprof::cli {

Command add_export_command(CLI::App &parent)
{
	struct Args {
		InputArgs in;
		std::string format;
		std::string output;
		std::string time = "wall";
		bool raw = false;
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand("export", "Convert a profile for other tools");
	add_input_options(app, a->in);
	app->add_option("--format", a->format, describe_formats(kUseExport))
		->required()
		->check(CLI::IsMember(format_names(kUseExport)));
	app->add_option("-o,--output", a->output, "Write here instead of stdout ('-': stdout)");
	app->add_flag("--raw", a->raw, "Times as measured, the probes' own cost included (default: compensated)");
	app->add_option("--time", a->time, "Time domain: wall, cpu (on-CPU part) or offcpu. folded: the weights; "
			"pprof: the default sample type (each part is a sample type)")
		->capture_default_str()
		->check(CLI::IsMember({"wall", "cpu", "offcpu"}));
	return {app, [a] {
			const Format &format = *find_format(a->format, kUseExport);
			if (format.binary && output_is_stdout(a->output) && isatty(STDOUT_FILENO))
				throw UserError(a->format + " output is binary: not writing it to a terminal (use -o FILE or a pipe)");
			refuse_output_over_inputs(a->output, input_paths(a->in));
			Profile profile = load_inputs(a->in, a->raw);
			// Folded weights add up to the call tree's time; a span's time lies
			// on that tree already (the calls it covers), so a line for it would
			// count it twice: left out, and said (docs/report-json.md).
			if (a->format == "folded" && !profile.spans.empty()) {
				std::set<std::string> names;
				for (const ProfileSpan &s : profile.spans)
					names.insert(s.name);
				std::string listed;
				for (const std::string &name : names)
					listed += (listed.empty() ? "" : ", ") + name;
				fprintf(stderr,
					"usdtprof: folded stacks leave out the profile's %zu span%s (%s): their time is on the "
					"call tree already; report shows them, pprof carries them as comments\n",
					names.size(), names.size() == 1 ? "" : "s", escape_text(listed).c_str());
			}
			ReportOptions options;
			options.raw = a->raw;
			options.time = *parse_time_mode(a->time);
			TimeMode time = options.time;
			auto produce = [&](Sink &sink) {
				CountingSink out(sink);
				format.profile(std::move(profile), options, out);
				// flamegraph.pl and others fail on an empty file ("No stack counts
				// found"). Nothing was written: -o leaves no file, stdout nothing.
				if (out.bytes == 0)
					throw UserError(inputs_name(a->in) + ": no call path has " +
							(time == TimeMode::Wall ? std::string("any time")
										: std::string(time_mode_name(time)) + " time") +
							": no " + a->format + " stacks to write");
			};
			write_result(a->output, produce);
			return 0;
		}};
}

} // namespace usdtprof::cli
