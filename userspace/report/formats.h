// The output formats: one table that `report`, `export`, `trace` and `monitor`
// read. Each format is one file (format_*.cpp, pprof.cpp, trace_*.cpp) and one
// row of kFormats in formats.cpp; a new format is a new file, a row and a test.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "report/report.h"
#include "base/sink.h"
#include "report/trace.h"

namespace usdtprof {

// Which commands offer a format (a bit set).
enum FormatUse : unsigned {
	kUseReport = 1,   // `report --format`
	kUseExport = 2,   // `export --format`
	kUseTrace = 4,    // `trace --format`: a timeline of events
	kUseMonitor = 8,  // written by `monitor` for every interval
};

struct Format {
	const char *name = "";      // as --format takes it
	const char *extension = ""; // of the files monitor writes, and what a user would name one
	const char *writes = "";    // what it writes, for --help
	unsigned uses = 0;          // FormatUse bits
	bool binary = false;        // not written to a terminal
	// Formats of a profile get it as recorded (measured times), theirs to
	// change (they compensate it in place unless options.raw: no copy of a
	// million paths), and write into out as they go, never holding a large
	// output whole; timelines get the events.
	void (*profile)(Profile measured, const ReportOptions &options, Sink &out) = nullptr;
	// Or also, for formats that can write it without changing it: given it
	// as it is, no copy (write_format, monitor's files; report and export
	// call profile, which every format they offer has).
	void (*as_is)(const Profile &measured, const ReportOptions &options, Sink &out) = nullptr;
	bool drops_distributions = false; // never shows durations: its copy made without them
	std::string (*timeline)(const TraceInput &input) = nullptr;
};

std::span<const Format> formats();
// nullptr when no format of that name is offered for `use`.
const Format *find_format(const std::string &name, unsigned use);
std::vector<std::string> format_names(unsigned use);
// "name (writes), name (writes)" for --help.
std::string describe_formats(unsigned use);
// A format of a profile into out as it is made: from measured itself where the
// format only reads it, else from a copy (without the durations where it drops
// them: a million paths' 40 MB not copied to be freed); measured is left as it
// was. Monitor's interval files, streamed (docs/design.md, "Continuous monitoring").
void write_format(const Format &format, Profile &measured, const ReportOptions &options, Sink &out);
// A format of a profile's output as one string (tests).
std::string render_profile(const Format &format, const Profile &measured, const ReportOptions &options);

} // namespace usdtprof
