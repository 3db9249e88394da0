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
		CHECK((f.profile == nullptr) != (f.timeline == nullptr));
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

// Monitor's pprof file is written from the profile as it is (its compensated
// self times alone computed): the bytes of the row's copy, compensated, in
// every case compensation has (a path's own and its children's caller cost,
// a [task] frame, a frame of no kind, a self time clamped at its on-CPU part,
// off-CPU time, durations), raw or not, in each time domain.
TEST_CASE("formats: the pprof row as it is writes the bytes of its compensated copy", "[formats][pprof][compensation]")
{
	Profile p;
	p.duration_ns = 1000000;
	p.functions = {"root", "[task]", "leaf", "[running at attach]", "tiny"};
	p.nodes = {
		{kNoParent, 0, 1, 1, 0, 10000, 100000, 2000},
		{0, 1, 1, 3, 0, 500, 60000},
		{1, 2, 1, 20, 1, 50000, 55000, 40000},
		{0, 3, 1, 1, 1, 7000, 7000},
		{3, 4, 1, 9, 0, 50, 50},	// clamped: its own cost is over its self time
		{0, 4, 2, 4, 0, 30000, 30000, 29990}, // clamped at its on-CPU part
	};
	p.distributions = true;
	p.dists.resize(p.nodes.size());
	p.dists[2].min_ns = 1000, p.dists[2].max_ns = 4000;
	p.dists[2].buckets.emplace_back(dist_bucket_of(1000), 10);
	p.dists[2].buckets.emplace_back(dist_bucket_of(4000), 9);
	Calibration c;
	c.kinds = {{"native", 100, 40, 5, 2, 24, 0}, {"value", 333.3, 17.7, 1, 1, 24, -1}};
	c.function_kinds = {0, -1, 1, -1, 0};
	p.calibration = c;
	const Format &pprof = *find_format("pprof", kUseMonitor);
	REQUIRE(pprof.as_is);
	Profile before = p;
	for (bool raw : {false, true})
		for (TimeMode time : {TimeMode::Wall, TimeMode::Cpu, TimeMode::Offcpu}) {
			ReportOptions o;
			o.raw = raw;
			o.time = time;
			StringSink as_is;
			write_format(pprof, p, o, as_is);
			CHECK(as_is.text == render_profile(pprof, p, o));
		}
	CHECK(serialize_profile(p) == serialize_profile(before));
	ReportOptions raw;
	raw.raw = true;
	CHECK(render_profile(pprof, p, raw) != render_profile(pprof, p, ReportOptions{})); // compensation took something
	// Without a calibration: the times as measured.
	p.calibration.reset();
	StringSink as_is;
	write_format(pprof, p, ReportOptions{}, as_is);
	CHECK(as_is.text == render_profile(pprof, p, ReportOptions{}));
}
