#include <memory>

#include "cli/commands.h"
#include "session/recorder.h"
#include "session/targets.h"
#include "base/result.h"

namespace usdtprof::cli {

namespace {

// CLI::PositiveNumber would print its range, DBL_MAX spelled out in 300 digits.
const CLI::Validator kPositive(
	[](std::string &text) {
		double value;
		return CLI::detail::lexical_cast(text, value) && value > 0 ? std::string()
			: "expected a positive number, got " + text;
	},
	"POSITIVE");

// -p's values split at commas. Not CLI11's delimiter: given "-p ,", it found
// no value and took the next argument for one ("expected a positive number,
// got -d").
std::vector<std::string> pid_list_parts(const std::string &list)
{
	std::vector<std::string> parts(1);
	for (char c : list)
		if (c == ',')
			parts.emplace_back();
		else
			parts.back().push_back(c);
	return parts;
}

// Every part a pid: digits only (no sign, space or fraction), 1 to INT_MAX.
const CLI::Validator kPidList(
	[](std::string &list) {
		for (const std::string &part : pid_list_parts(list)) {
			int pid = 0;
			if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
			    !CLI::detail::lexical_cast(part, pid) || pid <= 0)
				return "expected a process id (a positive number), got '" + part + "'" +
				       (part == list ? "" : " in '" + list + "'");
		}
		return std::string();
	},
	"PID[,PID...]");

} // namespace

void add_target_options(CLI::App *app, TargetSpec &o)
{
	app->add_option_function<std::vector<std::string>>(
		   "-p,--pid",
		   [&o](const std::vector<std::string> &lists) {
			   for (const std::string &list : lists)
				   for (const std::string &part : pid_list_parts(list))
					   o.pids.push_back(std::stoi(part));
		   },
		   "Process to attach to; several: -p 1,2 or -p again")
		->check(kPidList)
		->allow_extra_args(false);
	app->add_option("--binary", o.binary, "Attach to every process running this file, new ones too");
	app->add_option("--runtime", o.runtime, "Use this preset only (" + preset_names() + "); default: detected");
	// One value per flag, repeated: a vector option would also take the command's own dashed arguments.
	app->add_option("--pair", o.pairs,
			"Also a custom probe pair: PROVIDER:ENTRY/EXIT[:NAME][:match], NAME: argN (points to a static name), "
			"argN:str, argN:int or =CONSTANT; the exit closes its pair's innermost frame, or with :match the "
			"one its own arguments name")
		->allow_extra_args(false);
	app->add_option("--task", o.tasks, "Custom task probes: PROVIDER:CREATE/BEGIN/END[:argN], argN is the task id")
		->allow_extra_args(false);
}

void add_launch_options(CLI::App *app, TargetSpec &o)
{
	app->add_option("--span", o.spans,
			"Time intervals from one probe to another on a thread beside the call tree, not on its stack: "
			"PROVIDER:START/END[/END...] (count, total, distribution in the report)")
		->allow_extra_args(false);
	app->add_option("command", o.command, "Command to launch, after --");
	app->add_flag("--ruby-call-hook", o.ruby_call_hook,
		      "A launched Ruby gets a call/return hook so its Ruby methods fire probes (see README)");
	app->add_flag("!--no-follow", o.follow,
		      "Profile the launched command's first program only: not what it execs, nor its children");
	app->add_flag("--kill-on-stop", o.kill_on_stop,
		      "Kill the launched command when recording stops (default: wait for it; a second Ctrl-C is passed on)");
	app->add_flag("--per-thread", o.per_thread,
		      "Keep each thread's call paths apart in the profile (trace: its --profile), under a root named by "
		      "the thread (report --per-thread); the kernel's path table holds each path once per thread that "
		      "runs it");
}

void require_one_target(const TargetSpec &o, const char *command)
{
	if (!o.pids.empty() + !o.command.empty() + !o.binary.empty() != 1)
		throw UserError(std::string(command) + " needs exactly one of -p PID, --binary PATH or -- CMD", 2);
}

Command add_record_command(CLI::App &parent)
{
	auto o = std::make_shared<RecordOptions>();
	CLI::App *app = parent.add_subcommand(
		"record", "Profile a running process (-p PID), every process of a binary (--binary PATH) or a command "
			  "(-- CMD ARGS...)");
	app->add_option("-d,--duration", o->duration_s, "Stop after SECONDS (default: Ctrl-C or exit)")
		->check(kPositive);
	app->add_option("-o,--output", o->output, "Profile file to write")->capture_default_str();
	app->add_option("--max-paths", o->target.max_paths, "Distinct call paths the kernel map holds")
		->capture_default_str()
		->check(CLI::Range(1u, 1u << 24));
	add_target_options(app, o->target);
	add_launch_options(app, o->target);
	return {app, [o] {
			require_one_target(o->target, "record");
			return record(*o);
		}};
}

} // namespace usdtprof::cli
