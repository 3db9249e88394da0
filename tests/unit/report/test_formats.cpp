#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>

#include "report/formats.h"
#include "report/views.h"

using namespace usdtprof;

TEST_CASE("formats: each row is a profile format or a timeline, named once per command", "[formats]")
{
	std::set<std::pair<std::string, unsigned>> seen;
	for (const Format &f : formats()) {
		// A profile's format, as a copy to change or as it is, or a timeline.
		CHECK(int(f.profile != nullptr) + int(f.as_is != nullptr) + int(f.timeline != nullptr) == 1);
		// report and export hand theirs over to be changed.
		if (f.uses & (kUseReport | kUseExport))
			CHECK(f.profile != nullptr);
		CHECK(((f.uses & kUseTrace) != 0) == (f.timeline != nullptr));
		CHECK(std::string(f.extension).rfind('.', 0) == 0);
		for (unsigned use : {kUseReport, kUseExport, kUseTrace, kUseMonitor})
			if (f.uses & use)
				CHECK(seen.insert({f.name, use}).second);
	}
	// What each command offers, as before the table.
	CHECK(format_names(kUseReport) == std::vector<std::string>{"text", "json", "html"});
	CHECK(format_names(kUseExport) == std::vector<std::string>{"folded", "pprof"});
	CHECK(format_names(kUseTrace) == std::vector<std::string>{"chrome", "speedscope"});
	CHECK(find_format("pprof", kUseMonitor)->extension == std::string(".pb.gz"));
	CHECK(find_format("data", kUseMonitor)->extension == std::string(".data"));
	CHECK(find_format("data", kUseExport) == nullptr);
	CHECK(find_format("folded", kUseReport) == nullptr);
}

TEST_CASE("formats: the data row writes the profile file, which loads back", "[formats][profile]")
{
	Profile p;
	p.functions = {"main"};
	p.nodes.push_back({kNoParent, 0, 7, 1, 0, 100, 100});
	std::string bytes = render_profile(*find_format("data", kUseMonitor), p, ReportOptions{});
	CHECK(bytes == serialize_profile(p));
}

TEST_CASE("views: the table names flat and tree; an unknown view is an error, not a default", "[formats][views]")
{
	CHECK(view_names() == std::vector<std::string>{"flat", "tree"});
	CHECK(find_view("tree").json_key == std::string("tree"));
	CHECK(find_view("flat").per_process_tables);
	CHECK_THROWS_AS(find_view("nope"), std::invalid_argument);
}
