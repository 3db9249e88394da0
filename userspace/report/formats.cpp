// The table of output formats (formats.h). Each row's function lives in its
// format's own file; those of a profile are declared here, next to their rows,
// the timelines' in trace.h.
#include "report/formats.h"


namespace usdtprof {

void text_report(Profile measured, const ReportOptions &options, Sink &out);   // format_text.cpp
void json_report(Profile measured, const ReportOptions &options, Sink &out);   // format_json.cpp
void folded_stacks(Profile measured, const ReportOptions &options, Sink &out); // format_folded.cpp
void pprof_profile(Profile measured, const ReportOptions &options, Sink &out); // pprof.cpp
void pprof_as_is(const Profile &measured, const ReportOptions &options, Sink &out); // pprof.cpp
void html_report(Profile measured, const ReportOptions &options, Sink &out);   // format_html.cpp

namespace {

const Format kFormats[] = {
	{.name = "text", .extension = ".txt", .writes = "the report as a table or tree", .uses = kUseReport,
	 .profile = text_report},
	{.name = "json", .extension = ".json", .writes = "the report as JSON, docs/report-json.md", .uses = kUseReport,
	 .profile = json_report},
	{.name = "html", .extension = ".html",
	 .writes = "one self-contained page: flame graph, table, sandwich; docs/html.md", .uses = kUseReport,
	 .profile = html_report},
	{.name = "folded", .extension = ".folded",
	 .writes = "flamegraph.pl, speedscope; weights in nanoseconds", .uses = kUseExport, .profile = folded_stacks,
	 .drops_distributions = true},
	{.name = "data", .extension = ".data", .writes = "usdtprof's own profile file, times as measured",
	 .uses = kUseMonitor, .binary = true,
	 .profile = [](Profile measured, const ReportOptions &, Sink &out) { write_profile(measured, out); },
	 .as_is = [](const Profile &measured, const ReportOptions &, Sink &out) { write_profile(measured, out); }},
	{.name = "pprof", .extension = ".pb.gz",
	 .writes = "gzipped protobuf for go tool pprof; binary: use -o or a pipe", .uses = kUseExport | kUseMonitor,
	 .binary = true, .profile = pprof_profile, .as_is = pprof_as_is, .drops_distributions = true},
	{.name = "chrome", .extension = ".json", .writes = "Perfetto, chrome://tracing", .uses = kUseTrace,
	 .timeline = render_chrome_trace},
	{.name = "speedscope", .extension = ".speedscope.json", .writes = "speedscope's evented format",
	 .uses = kUseTrace, .timeline = render_speedscope},
};

} // namespace

std::span<const Format> formats() { return kFormats; }

const Format *find_format(const std::string &name, unsigned use)
{
	for (const Format &f : kFormats)
		if ((f.uses & use) && name == f.name)
			return &f;
	return nullptr;
}

std::vector<std::string> format_names(unsigned use)
{
	std::vector<std::string> names;
	for (const Format &f : kFormats)
		if (f.uses & use)
			names.push_back(f.name);
	return names;
}

void write_format(const Format &format, Profile &measured, const ReportOptions &options, Sink &out)
{
	if (format.as_is)
		format.as_is(measured, options, out);
	else
		format.profile(format.drops_distributions ? copy_without_distributions(measured) : Profile(measured), options,
			       out);
}

std::string render_profile(const Format &format, const Profile &measured, const ReportOptions &options)
{
	StringSink out;
	format.profile(measured, options, out);
	return std::move(out.text);
}

std::string describe_formats(unsigned use)
{
	std::string out;
	for (const Format &f : kFormats)
		if (f.uses & use)
			out += (out.empty() ? "" : ", ") + std::string(f.name) + " (" + f.writes + ")";
	return out;
}

} // namespace usdtprof
