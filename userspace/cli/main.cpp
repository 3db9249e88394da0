// usdtprof's command line: a thin layer over the core library.
#include <cstdio>
#include <exception>
#include <vector>

#include "commands.h"
#include "result.h"
#include "text_escape.h"

int main(int argc, char **argv)
{
	using namespace usdtprof;
	CLI::App app{"usdtprof: exact call-path profiles from USDT probes, aggregated in the kernel"};
	app.require_subcommand(1, 1);
	std::vector<cli::Command> commands = {cli::add_record_command(app), cli::add_report_command(app),
					      cli::add_export_command(app), cli::add_trace_command(app),
					      cli::add_list_command(app), cli::add_monitor_command(app)};
	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		log_line("%s (see usdtprof --help)", e.what());
		return 2;
	}
	try {
		for (auto &c : commands)
			if (c.app->parsed())
				return c.run();
	} catch (const UserError &e) {
		log_line("%s", e.what());
		return e.exit_code();
	} catch (const std::exception &e) {
		log_line("internal error: %s", e.what());
		return 1;
	}
	return 2;
}
