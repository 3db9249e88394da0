#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "compensation.h"
#include "output_file.h"
#include "pprof.h"
#include "profile.h"
#include "report.h"
#include "result.h"

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
	app->add_option("--format", a->format,
			"folded (flamegraph.pl, speedscope; weights in nanoseconds) or pprof (gzipped protobuf for go tool pprof; "
			"binary: use -o or a pipe)")
		->required()
		->check(CLI::IsMember({"folded", "pprof"}));
	app->add_option("-o,--output", a->output, "Write here instead of stdout");
	app->add_flag("--raw", a->raw, "Times as measured, the probes' own cost included (default: compensated)");
	app->add_option("--time", a->time, "Time domain: wall, cpu (on-CPU part) or offcpu. folded: the weights; "
			"pprof: the default sample type (each part is a sample type)")
		->capture_default_str()
		->check(CLI::IsMember({"wall", "cpu", "offcpu"}));
	return {app, [a] {
			bool binary = a->format == "pprof";
			if (binary && a->output.empty() && isatty(STDOUT_FILENO))
				throw UserError("pprof output is binary: not writing it to a terminal (use -o FILE or a pipe)");
			Profile profile = load_inputs(a->in, a->raw);
			if (!a->raw)
				profile = compensate(profile);
			TimeMode time = *parse_time_mode(a->time);
			std::string out = binary ? render_pprof(profile, time)
						 : render_folded(with_self_time(build_call_tree(profile), time));
			// flamegraph.pl and others fail on an empty file ("No stack counts found").
			if (out.empty())
				throw UserError(inputs_name(a->in) + ": no call path has " +
						(time == TimeMode::Wall ? std::string("any time") : std::string(time_mode_name(time)) + " time") +
						": no folded stacks to write");
			if (a->output.empty()) {
				fwrite(out.data(), 1, out.size(), stdout);
				return 0;
			}
			if (auto r = write_output(a->output, out); !r)
				throw UserError(r.error().message);
			return 0;
		}};
}

} // namespace usdtprof::cli
