#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>
#include <zlib.h>

#include "report/pprof.h"
#include "profile/profile.h"
#include "proto/profile.pb.h"
#include "../task_profile.h"
#include "base/text_escape.h"

using namespace usdtprof;
namespace pp = perftools::profiles;

namespace {

Profile sample_profile()
{
	Profile p;
	p.processes = {{100, "app", {"./app"}}, {200, "worker", {}}};
	p.start_unix_ns = 1700000000123456789;
	p.stop_unix_ns = 1700000001123456789;
	p.duration_ns = 1000000000;
	p.functions = {"int main(int, char**)", "void work(int)", "parse", "idle", "other"};
	p.locations = {"src/main.c:10", "src/work.cpp:42", "src/parse.c", "", "dir:name/file.c"};
	p.nodes = {
		// parent, function, pid, calls, open, self_ns, total_ns, self_offcpu_ns
		{kNoParent, 0, 100, 1, 1, 1000, 10000, 0},
		{0, 1, 100, 3, 0, 5000, 9000, 2000},
		{1, 2, 100, 6, 0, 4000, 4000, 0},
		{kNoParent, 0, 200, 0, 0, 0, 4000, 0},  // no calls, no self time: no sample
		{3, 3, 200, 2, 0, 4000, 4000, 4000},
		{kNoParent, 4, 300, 1, 0, 10, 10, 0},   // a pid without a known process
	};
	return p;
}

std::string gunzip(const std::string &gz)
{
	z_stream zs{};
	REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK); // gzip only, not zlib or raw deflate
	zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(gz.data()));
	zs.avail_in = static_cast<uInt>(gz.size());
	std::string out;
	char buf[4096];
	int rc;
	do {
		zs.next_out = reinterpret_cast<Bytef *>(buf);
		zs.avail_out = sizeof buf;
		rc = inflate(&zs, Z_NO_FLUSH);
		REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
		out.append(buf, sizeof buf - zs.avail_out);
	} while (rc != Z_STREAM_END);
	CHECK(zs.avail_in == 0);
	inflateEnd(&zs);
	return out;
}

pp::Profile decode(const Profile &profile, TimeMode time = TimeMode::Wall)
{
	std::string gz = render_pprof(profile, time);
	REQUIRE(gz.size() > 2);
	CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
	CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
	pp::Profile out;
	REQUIRE(out.ParseFromString(gunzip(gz)));
	return out;
}

struct Decoded {
	const pp::Profile &p;
	const std::string &str(int64_t i) const
	{
		REQUIRE(i >= 0);
		REQUIRE(i < p.string_table_size());
		return p.string_table(static_cast<int>(i));
	}
	const pp::Function &function(uint64_t id) const
	{
		for (const pp::Function &f : p.function())
			if (f.id() == id)
				return f;
		FAIL("no function " << id);
		throw;
	}
	const pp::Location &location(uint64_t id) const
	{
		for (const pp::Location &l : p.location())
			if (l.id() == id)
				return l;
		FAIL("no location " << id);
		throw;
	}
	std::vector<std::string> sample_types() const
	{
		std::vector<std::string> out;
		for (const pp::ValueType &vt : p.sample_type())
			out.push_back(str(vt.type()) + "/" + str(vt.unit()));
		return out;
	}
	std::vector<std::string> stack(const pp::Sample &s) const
	{
		std::vector<std::string> out;
		for (uint64_t id : s.location_id()) {
			const pp::Location &l = location(id);
			REQUIRE(l.line_size() == 1);
			out.push_back(str(function(l.line(0).function_id()).name()));
		}
		return out;
	}
	std::vector<int64_t> values(const pp::Sample &s) const { return {s.value().begin(), s.value().end()}; }
	// key -> "num" or the string
	std::map<std::string, std::string> labels(const pp::Sample &s) const
	{
		std::map<std::string, std::string> out;
		for (const pp::Label &l : s.label())
			out[str(l.key())] = l.str() ? str(l.str()) : std::to_string(l.num());
		return out;
	}
};

} // namespace

TEST_CASE("pprof: samples, stacks, values and labels", "[pprof]")
{
	pp::Profile out = decode(sample_profile());
	Decoded d{out};
	REQUIRE(out.string_table_size() > 0);
	CHECK(out.string_table(0).empty());

	CHECK(d.sample_types() == std::vector<std::string>{"calls/count", "self_time/nanoseconds",
							    "self_oncpu_time/nanoseconds", "self_offcpu_time/nanoseconds"});
	CHECK(d.str(out.default_sample_type()) == "self_time");
	CHECK(d.str(out.period_type().type()) == "calls");
	CHECK(d.str(out.period_type().unit()) == "count");
	CHECK(out.period() == 1);
	CHECK(out.time_nanos() == 1700000000123456789);
	CHECK(out.duration_nanos() == 1000000000);
	CHECK(out.comment_size() == 0);

	REQUIRE(out.sample_size() == 5);
	CHECK(d.stack(out.sample(0)) == std::vector<std::string>{"int main(int, char**)"});
	CHECK(d.values(out.sample(0)) == std::vector<int64_t>{1, 1000, 1000, 0});
	CHECK(d.stack(out.sample(1)) == std::vector<std::string>{"void work(int)", "int main(int, char**)"});
	CHECK(d.values(out.sample(1)) == std::vector<int64_t>{3, 5000, 3000, 2000});
	CHECK(d.stack(out.sample(2)) == std::vector<std::string>{"parse", "void work(int)", "int main(int, char**)"});
	CHECK(d.values(out.sample(2)) == std::vector<int64_t>{6, 4000, 4000, 0});
	CHECK(d.stack(out.sample(3)) == std::vector<std::string>{"idle", "int main(int, char**)"});
	CHECK(d.values(out.sample(3)) == std::vector<int64_t>{2, 4000, 0, 4000});
	CHECK(d.stack(out.sample(4)) == std::vector<std::string>{"other"});
	CHECK(d.values(out.sample(4)) == std::vector<int64_t>{1, 10, 10, 0});

	using Labels = std::map<std::string, std::string>;
	CHECK(d.labels(out.sample(0)) == Labels{{"pid", "100"}, {"process", "app"}});
	CHECK(d.labels(out.sample(2)) == Labels{{"pid", "100"}, {"process", "app"}});
	CHECK(d.labels(out.sample(3)) == Labels{{"pid", "200"}, {"process", "worker"}});
	CHECK(d.labels(out.sample(4)) == Labels{{"pid", "300"}});
	// The location of the first "main" and of the second (pid 200) are the same.
	CHECK(out.sample(0).location_id(0) == out.sample(3).location_id(1));
}

TEST_CASE("pprof: one function and one location per function", "[pprof]")
{
	pp::Profile out = decode(sample_profile());
	Decoded d{out};
	REQUIRE(out.function_size() == 5);
	REQUIRE(out.location_size() == 5);
	// One mapping, the profiled program, already symbolized: pprof neither
	// looks for the binary nor says "Main binary filename not available.".
	REQUIRE(out.mapping_size() == 1);
	CHECK(out.mapping(0).id() == 1);
	CHECK(d.str(out.mapping(0).filename()) == "./app");
	CHECK(out.mapping(0).has_functions());
	struct Expected {
		std::string file;
		int64_t line;
	};
	std::map<std::string, Expected> expected = {
		{"int main(int, char**)", {"src/main.c", 10}},
		{"void work(int)", {"src/work.cpp", 42}},
		{"parse", {"src/parse.c", 0}},
		{"idle", {"", 0}},
		{"other", {"dir:name/file.c", 0}},
	};
	std::map<uint64_t, int> ids;
	for (const pp::Function &f : out.function()) {
		CHECK(f.id() >= 1);
		CHECK(f.id() <= 5);
		ids[f.id()]++;
		const std::string &name = d.str(f.name());
		INFO(name);
		REQUIRE(expected.count(name) == 1);
		// Empty, not the name: pprof would rewrite it as a C++ name.
		CHECK(f.system_name() == 0);
		CHECK(d.str(f.filename()) == expected[name].file);
		CHECK(f.start_line() == expected[name].line);
		expected.erase(name);
	}
	CHECK(ids.size() == 5);
	for (const pp::Location &l : out.location()) {
		CHECK(l.id() >= 1);
		CHECK(l.id() <= 5);
		CHECK(l.mapping_id() == 1);
		REQUIRE(l.line_size() == 1);
		const pp::Function &f = d.function(l.line(0).function_id());
		CHECK(l.line(0).line() == f.start_line());
	}
}

TEST_CASE("pprof: without off-CPU time two sample types; no locations", "[pprof]")
{
	Profile p = sample_profile();
	p.locations.clear();
	for (PathNode &n : p.nodes)
		n.self_offcpu_ns = 0;
	pp::Profile out = decode(p);
	Decoded d{out};
	CHECK(out.string_table(0).empty());
	CHECK(d.sample_types() == std::vector<std::string>{"calls/count", "self_time/nanoseconds"});
	REQUIRE(out.sample_size() == 5);
	CHECK(d.values(out.sample(1)) == std::vector<int64_t>{3, 5000});
	for (const pp::Function &f : out.function()) {
		CHECK(f.filename() == 0);
		CHECK(f.start_line() == 0);
	}
}

TEST_CASE("pprof: a sampled recording says so in a comment", "[pprof]")
{
	Profile p = sample_profile();
	p.sampled_fraction = 0.25;
	pp::Profile out = decode(p);
	Decoded d{out};
	REQUIRE(out.comment_size() == 1);
	const std::string &comment = d.str(out.comment(0));
	CHECK_THAT(comment, Catch::Contains("sampled: probes attached for 25% of the time; "
					    "values are as measured, not scaled"));
	CHECK_THAT(comment, Catch::Contains("1/0.25 = 4"));
	// Values are not scaled.
	CHECK(d.values(out.sample(1)) == std::vector<int64_t>{3, 5000, 3000, 2000});
}

TEST_CASE("pprof: each sampled process of several says its own fraction in a comment", "[pprof]")
{
	Profile p = sample_profile();
	p.processes[0].sampled_fraction = 0.5; // app; worker was attached all the time
	p.sampled_fraction = 0.5;
	pp::Profile out = decode(p);
	Decoded d{out};
	REQUIRE(out.comment_size() == 2);
	CHECK_THAT(d.str(out.comment(0)), Catch::StartsWith("sampled: probes attached for 50% of the time"));
	CHECK_THAT(d.str(out.comment(1)), Catch::StartsWith("sampled: pid 100 (app) probes attached for 50% of the time; "
							      "values are as measured, not scaled"));
}

TEST_CASE("pprof: an empty profile is a valid pprof profile", "[pprof]")
{
	pp::Profile out = decode(Profile{});
	Decoded d{out};
	REQUIRE(out.string_table_size() > 0);
	CHECK(out.string_table(0).empty());
	CHECK(out.sample_size() == 0);
	CHECK(out.function_size() == 0);
	CHECK(d.sample_types() == std::vector<std::string>{"calls/count", "self_time/nanoseconds"});
}

TEST_CASE("pprof: cum is the report's inclusive time in the chosen domain, tasks under their creator", "[pprof][tasks]")
{
	Profile p = task_profile();
	for (TimeMode time : {TimeMode::Wall, TimeMode::Cpu, TimeMode::Offcpu}) {
		INFO(time_mode_name(time));
		pp::Profile out = decode(p, time);
		Decoded d{out};
		// The default sample type's column, as pprof's cum adds it up.
		std::string type = d.str(out.default_sample_type());
		size_t column = 0;
		while (d.str(out.sample_type(int(column)).type()) != type)
			column++;
		std::map<std::string, int64_t> cum;
		for (const pp::Sample &s : out.sample())
			for (const std::string &frame : d.stack(s))
				cum[frame] += s.value(int(column));
		CallTree tree = with_self_time(build_call_tree(p), time);
		for (const FunctionSummary &f : summarize_functions(tree))
			CHECK(cum[f.name] == int64_t(f.total_ns));
		CHECK(type == (time == TimeMode::Wall ? "self_time" : time == TimeMode::Cpu ? "self_oncpu_time"
											      : "self_offcpu_time"));
	}
	CHECK(decode(p).sample_type_size() == 4);
}

TEST_CASE("pprof: names with invalid UTF-8 become valid strings (U+FFFD), so the protobuf parses", "[pprof][escape]")
{
	Profile p = sample_profile();
	p.functions[2] = "bad\xff\xfe name";
	p.processes[0].comm = "comm\x9b";
	pp::Profile out = decode(p); // ParseFromString rejects invalid UTF-8 in a string field
	bool found = false;
	for (const std::string &s : out.string_table()) {
		CHECK(valid_utf8(s) == s);
		found |= s == "bad\xef\xbf\xbd\xef\xbf\xbd name";
	}
	CHECK(found);
}

namespace {

// Many call paths of many functions, some beyond the function table, over
// three processes: enough samples to pass through many of the gzip stream's
// 64 KiB buffers.
Profile many_paths_profile(size_t paths)
{
	Profile p = sample_profile();
	p.nodes.clear();
	for (size_t i = 0; i < paths; i++) {
		// A tree of 50 paths, at most 20 deep, then the next.
		uint32_t parent = i % 50 == 0 ? kNoParent : uint32_t(i - 1 - (i * 7919) % std::min<size_t>(i % 50, 20));
		int32_t pid = parent == kNoParent ? int32_t(100 * (1 + i % 3)) : p.nodes[parent].pid;
		uint32_t function = uint32_t((i * 104729) % 7); // 5 and 6 are not in the table
		uint64_t self = (i * 31) % 1000, offcpu = i % 5 == 0 ? self / 2 : 0;
		p.nodes.push_back({parent, function, pid, i % 4, 0, self, self, offcpu});
	}
	return p;
}

// A Sink that fails after `limit` bytes, as a full disk does.
class FailingSink : public Sink {
public:
	explicit FailingSink(size_t limit) : limit_(limit) {}
	void write(const char *, size_t size) override
	{
		written += size;
		if (written > limit_)
			throw std::runtime_error("disk full");
	}
	using Sink::write;
	size_t written = 0;

private:
	size_t limit_;
};

} // namespace

TEST_CASE("pprof: written sample by sample, the bytes are protobuf's own serialization of the whole message",
	  "[pprof]")
{
	Profile p = many_paths_profile(200000);
	for (TimeMode time : {TimeMode::Wall, TimeMode::Cpu}) {
		std::string bytes = gunzip(render_pprof(p, time));
		pp::Profile out;
		REQUIRE(out.ParseFromString(bytes));
		size_t with_values = 0;
		for (const PathNode &n : p.nodes)
			with_values += n.calls > 0 || n.self_ns > 0;
		CHECK(size_t(out.sample_size()) == with_values);
		CHECK(out.function_size() == 7);
		CHECK(out.location_size() == 7);
		std::string whole;
		REQUIRE(out.SerializeToString(&whole));
		CHECK(whole.size() == bytes.size());
		CHECK(whole == bytes); // fields in order, nothing duplicated or split
		// Each sample's locations are its path's stack, leaf first, though the
		// paths do not come depth first (a parent is any earlier node).
		std::map<uint64_t, std::string> name_of_location;
		for (const pp::Location &l : out.location())
			for (const pp::Function &f : out.function())
				if (f.id() == l.line(0).function_id())
					name_of_location[l.id()] = out.string_table(f.name());
		size_t k = 0, mismatches = 0;
		for (size_t i = 0; i < p.nodes.size(); i++) {
			if (p.nodes[i].calls == 0 && p.nodes[i].self_ns == 0)
				continue;
			std::vector<std::string> want, got;
			for (size_t j = i;; j = p.nodes[j].parent) {
				uint32_t f = p.nodes[j].function;
				want.push_back(f < p.functions.size() ? p.functions[f] : "[function " + std::to_string(f) + "]");
				if (p.nodes[j].parent >= j)
					break;
			}
			for (uint64_t id : out.sample(int(k++)).location_id())
				got.push_back(name_of_location[id]);
			mismatches += got != want;
		}
		CHECK(mismatches == 0);
	}
}

TEST_CASE("pprof: a Sink that fails stops the export with the Sink's error", "[pprof]")
{
	Profile p = many_paths_profile(200000);
	StringSink whole;
	write_pprof(p, TimeMode::Wall, whole);
	REQUIRE(whole.text.size() > 3 * 65536);
	FailingSink out(65536);
	CHECK_THROWS_WITH(write_pprof(p, TimeMode::Wall, out), "disk full");
	CHECK(out.written < whole.text.size());
}
