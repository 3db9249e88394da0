// usdtprof's command line: a thin layer over the core library.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "cli/commands.h"
#include "profile/profile.h"
#include "base/result.h"
#include "base/text_escape.h"

namespace {

constexpr const char *kVersion = "0.1.0";

size_t edit_distance(const std::string &a, const std::string &b)
{
	std::vector<size_t> row(b.size() + 1);
	for (size_t j = 0; j <= b.size(); j++)
		row[j] = j;
	for (size_t i = 1; i <= a.size(); i++) {
		size_t diagonal = row[0];
		row[0] = i;
		for (size_t j = 1; j <= b.size(); j++) {
			size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
			diagonal = row[j];
			row[j] = next;
		}
	}
	return row[b.size()];
}

// The candidate nearest to word, if near enough to be a typo (as git does: at
// most 2 edits, a swap of two letters counting 2), else "".
std::string closest(const std::string &word, const std::vector<std::string> &candidates)
{
	std::string best;
	size_t best_distance = 3;
	for (const std::string &c : candidates)
		if (size_t d = edit_distance(word, c); d < best_distance && d < c.size())
			best = c, best_distance = d;
	return best;
}

std::vector<std::string> subcommand_names(CLI::App &app)
{
	std::vector<std::string> names;
	for (const CLI::App *sub : app.get_subcommands({}))
		names.push_back(sub->get_name());
	return names;
}

std::vector<std::string> option_names(const CLI::App &app)
{
	std::vector<std::string> names;
	for (const CLI::Option *o : app.get_options()) {
		for (const std::string &l : o->get_lnames())
			names.push_back("--" + l);
		for (const std::string &s : o->get_snames())
			names.push_back("-" + s);
	}
	return names;
}

// "record " when record was parsed, else "".
std::string parsed_subcommand(CLI::App &app)
{
	for (CLI::App *sub : app.get_subcommands({}))
		if (sub->parsed())
			return sub->get_name() + " ";
	return "";
}

// "unknown option '--outptu'; did you mean '--output'?" for the first mistyped
// option or subcommand left over by the parse, or "".
std::string did_you_mean(CLI::App &app)
{
	std::vector<std::string> unknown = app.remaining();
	const CLI::App *where = &app;
	for (CLI::App *sub : app.get_subcommands({}))
		if (sub->parsed()) {
			where = sub;
			unknown = sub->remaining();
		}
	for (const std::string &word : unknown) {
		if (word == "--") // the command's separator, left over when the parse stopped before it
			continue;
		bool option = word.size() > 1 && word[0] == '-';
		std::string name = option ? word.substr(0, word.find('=')) : word;
		std::string match = option ? closest(name, option_names(*where))
			: where == &app ? closest(name, subcommand_names(app)) : "";
		if (!match.empty())
			return std::string("unknown ") + (option ? "option" : "command") + " '" + name +
				"'; did you mean '" + match + "'?";
	}
	return "";
}

// A first word that is no subcommand or no top-level option: CLI11 would only
// say "a subcommand is required".
std::string unknown_first_word(CLI::App &app, const std::string &word)
{
	bool option = word[0] == '-';
	std::vector<std::string> known = option ? option_names(app) : subcommand_names(app);
	if (word.empty() || std::find(known.begin(), known.end(), word) != known.end())
		return "";
	std::string match = closest(word, known);
	return std::string("unknown ") + (option ? "option" : "command") + " '" + word + "'" +
		(match.empty() ? "" : "; did you mean '" + match + "'?");
}

} // namespace

int main(int argc, char **argv)
{
	using namespace usdtprof;
	// Named here, not after argv[0]: usage lines say "usdtprof", not a build path.
	CLI::App app{"usdtprof: exact call-path profiles from USDT probes, aggregated in the kernel", "usdtprof"};
	app.set_version_flag("--version", std::string("usdtprof ") + kVersion + "\nprofile format: " + profile_format_versions());
	app.require_subcommand(1, 1);
	std::vector<cli::Command> commands = {cli::add_record_command(app), cli::add_report_command(app),
					      cli::add_export_command(app), cli::add_trace_command(app),
					      cli::add_list_command(app), cli::add_monitor_command(app),
					      cli::add_diff_command(app)};
	if (std::string unknown = argc > 1 ? unknown_first_word(app, argv[1]) : ""; !unknown.empty()) {
		log_line("%s (see usdtprof --help)", unknown.c_str());
		return 2;
	}
	try {
		app.parse(argc, argv);
	} catch (const CLI::Success &e) { // --help, --help-all, --version
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		// Only words CLI11 did not know get a guess; a rejected value keeps its own message.
		bool extras = dynamic_cast<const CLI::ExtrasError *>(&e) != nullptr;
		std::string hint = extras ? did_you_mean(app) : "";
		log_line("%s (see usdtprof %s--help)", hint.empty() ? e.what() : hint.c_str(),
			 parsed_subcommand(app).c_str());
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
