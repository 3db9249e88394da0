// What report and export read: profile files or monitor directories, a time
// window, and --focus/--ignore.
#include <cstdio>
#include <regex>

#include "cli/commands.h"
#include "profile/compensation.h"
#include "profile/path_filter.h"
#include "profile/profile_set.h"
#include "base/result.h"

namespace usdtprof::cli {

namespace {

// An invalid pattern is a usage error, found before anything is read.
const CLI::Validator kRegex(
	[](std::string &pattern) {
		try {
			std::regex re(pattern, std::regex::ECMAScript);
		} catch (const std::regex_error &e) {
			return "not a valid regular expression: " + pattern;
		}
		return std::string();
	},
	"REGEX");

// A malformed --since/--until is a usage error too.
const CLI::Validator kClock(
	[](std::string &text) {
		auto t = parse_clock_time(text, 0, false);
		return t ? std::string() : t.error().message;
	},
	"TIME");

} // namespace

void add_input_options(CLI::App *app, InputArgs &in)
{
	app->add_option("file", in.files, "Profile files or monitor output directories, merged into one (default usdtprof.data)");
	app->add_option("--since", in.since, "Only profiles recorded after this time: HH:MM[:SS] or 'YYYY-MM-DD HH:MM[:SS]' (local time)")
		->check(kClock);
	app->add_option("--until", in.until, "Only profiles recorded before this time (as --since)")->check(kClock);
	app->add_option("--focus", in.focus, "Keep only call paths through a function whose name matches REGEX")->check(kRegex);
	app->add_option("--ignore", in.ignore, "Drop the call paths through a function whose name matches REGEX")->check(kRegex);
	app->add_flag("--per-thread", in.per_thread,
		      "Each thread's call paths under a root of its own, NAME (tid N) (a profile of record --per-thread; "
		      "--focus and --ignore match those roots too)");
}

std::string inputs_name(const InputArgs &in)
{
	std::string out;
	for (const std::string &f : in.files)
		out += (out.empty() ? "" : " ") + f;
	return out.empty() ? "usdtprof.data" : out;
}

std::vector<std::string> input_paths(const InputArgs &in)
{
	return in.files.empty() ? std::vector<std::string>{"usdtprof.data"} : in.files;
}

Profile load_inputs(const InputArgs &in, bool raw)
{
	ProfileInputs inputs{input_paths(in), in.since, in.until, raw, in.per_thread};
	auto loaded = load_profiles(inputs);
	if (!loaded)
		throw UserError(loaded.error().message);
	if (loaded->files > 1)
		fprintf(stderr, "usdtprof: %zu profiles merged, recorded from %s to %s\n", loaded->files,
			local_time(loaded->first_ns).c_str(), local_time(loaded->last_ns).c_str());
	if (in.focus.empty() && in.ignore.empty())
		return std::move(loaded->profile);
	// Compensation needs every child's calls: before the filter drops any.
	auto filtered = filter_paths(raw ? loaded->profile : compensate(loaded->profile), in.focus, in.ignore);
	if (!filtered)
		throw UserError(filtered.error().message);
	return std::move(*filtered);
}

} // namespace usdtprof::cli
