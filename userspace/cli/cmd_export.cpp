#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "commands.h"
#include "output_file.h"
#include "profile.h"
#include "report.h"
#include "result.h"

namespace usdtprof::cli {

Command add_export_command(CLI::App &parent)
{
	struct Args {
		std::string file = "usdtprof.data";
		std::string format;
		std::string output;
		std::string time = "wall";
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand("export", "Convert a profile for other tools");
	app->add_option("file", a->file, "Profile file")->capture_default_str();
	app->add_option("--format", a->format, "folded (flamegraph.pl, speedscope)")
		->required()
		->check(CLI::IsMember({"folded"}));
	app->add_option("-o,--output", a->output, "Write here instead of stdout");
	app->add_option("--time", a->time, "Weight by self time: wall, cpu (on-CPU part) or offcpu")
		->capture_default_str()
		->check(CLI::IsMember({"wall", "cpu", "offcpu"}));
	return {app, [a] {
			auto profile = load_profile(a->file);
			if (!profile)
				throw UserError(profile.error().message);
			std::string out =
				render_folded(with_self_time(build_call_tree(*profile), *parse_time_mode(a->time)));
			if (a->output.empty()) {
				fwrite(out.data(), 1, out.size(), stdout);
				return 0;
			}
			if (auto r = write_file_atomically(a->output, out); !r)
				throw UserError(r.error().message);
			return 0;
		}};
}

} // namespace usdtprof::cli
