#include <cstdio>
#include <limits>
#include <memory>

#include "cli/commands.h"
#include "session/targets.h"
#include "target/probe_list.h"
#include "target/process.h"
#include "target/target_file.h"
#include "base/result.h"
#include "base/text_escape.h"

namespace usdtprof::cli {

Command add_list_command(CLI::App &parent)
{
	struct Args {
		int pid = 0;
		std::string binary;
		std::string format = "text";
	};
	auto a = std::make_shared<Args>();
	CLI::App *app = parent.add_subcommand("list", "List the USDT probes of a process (-p PID) or a binary");
	app->add_option("-p,--pid", a->pid, "Process: its binary and every shared library it maps")
		->check(CLI::Range(1, std::numeric_limits<int>::max()));
	app->add_option("binary", a->binary, "ELF file");
	app->add_option("--format", a->format, "text or json")
		->capture_default_str()
		->check(CLI::IsMember({"text", "json"}));
	return {app, [a] {
			if ((a->pid != 0) == !a->binary.empty())
				throw UserError("list needs exactly one of -p PID or BINARY", 2);
			Result<std::vector<ListedProbe>> probes = std::vector<ListedProbe>{};
			if (a->pid) {
				// The files record and monitor would search (target_files):
				// each opened once, checked against its maps line; one that
				// is not ELF is skipped with a note.
				TargetSpec target;
				target.pids = {a->pid};
				TargetFiles opened;
				std::optional<BinaryProcesses> no_binary;
				probes = list_probes(target_files(target, a->pid, no_binary, opened)[a->pid]);
			} else {
				probes = list_probes(std::vector<std::string>{a->binary});
			}
			if (!probes)
				throw UserError(probes.error().message);
			// Nothing to list is an answer, not an error.
			if (probes->empty() && a->format == "text") {
				if (a->pid)
					printf("pid %d (%s): no USDT probes in its binary or shared libraries\n", a->pid,
					       escape_text(describe_process(a->pid).comm).c_str());
				else
					printf("no USDT probes in %s\n", escape_text(a->binary).c_str());
				return 0;
			}
			std::string out = render_probe_list(*probes, a->format == "json");
			fwrite(out.data(), 1, out.size(), stdout);
			return 0;
		}};
}

} // namespace usdtprof::cli
