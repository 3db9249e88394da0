#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "report/diff.h"
#include "base/output_file.h"
#include "profile/profile_set.h"
#include "base/result.h"

namespace usdtprof::cli {

namespace {

Profile load_one(const std::string &path)
{
	auto loaded = load_profiles({{path}, "", "", false});
	if (!loaded)
		throw UserError(loaded.error().message);
	return std::move(loaded->profile);
}

} // namespace

Command add_diff_command(CLI::App &parent)
{
	struct Args {
		std::string base, now, format = "text", time = "wall", output;
		DiffOptions options;
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand("diff", "Compare two profiles per function and per path");
	app->add_option("base", a->base, "The profile to compare with (a file or a monitor directory, merged)")->required();
	app->add_option("new", a->now, "The profile compared (a file or a monitor directory, merged)")->required();
	app->add_flag("--normalize", a->options.normalize, "Scale NEW's times so that its total equals BASE's (shares compared)");
	app->add_flag("--raw", a->options.raw, "Times as measured, the probes' own cost included (default: compensated)");
	app->add_option("--limit", a->options.limit, "Show at most N functions and N paths (0: all)");
	app->add_option("--time", a->time, "Self time compared: wall, cpu (on-CPU part) or offcpu")
		->capture_default_str()
		->check(CLI::IsMember({"wall", "cpu", "offcpu"}));
	app->add_option("--format", a->format, "text, json or html (one self-contained page: a differential flame graph and the table)")
		->capture_default_str()
		->check(CLI::IsMember({"text", "json", "html"}));
	app->add_option("-o,--output", a->output, "Write here instead of stdout ('-': stdout; --format html: a file such as diff.html)");
	return {app, [a] {
			a->options.time = *parse_time_mode(a->time);
			refuse_output_over_inputs(a->output, {a->base, a->now});
			Diff d = diff_profiles(load_one(a->base), load_one(a->now), a->options);
			std::string out = a->format == "json"	? render_diff_json(d, a->options)
					  : a->format == "html" ? render_diff_html(d, a->options, "usdtprof diff " + a->base + " " + a->now)
								: render_diff_text(d, a->options);
			write_result(a->output, [&](Sink &sink) { sink.write(out); });
			return 0;
		}};
}

} // namespace usdtprof::cli
