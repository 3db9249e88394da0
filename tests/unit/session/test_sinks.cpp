#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "base/result.h"
#include "profile/profile.h"
#include "report/formats.h"
#include "serve/metrics.h"
#include "serve/pusher.h"
#include "session/sinks.h"
#include "../push_receiver.h"
#include "../task_profile.h"
#include "../trace_validate.h"

using namespace usdtprof;
namespace fs = std::filesystem;

namespace {

// A pid no process has (above any pid_max): thread names come from the
// exited threads' names only.
constexpr uint32_t kNoPid = 1u << 30;

std::string temp_dir()
{
	std::string t = (fs::temp_directory_path() / "usdtprof-sinks-XXXXXX").string();
	REQUIRE(mkdtemp(t.data()));
	return t;
}

std::string read_all(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	return {std::istreambuf_iterator<char>(in), {}};
}

// Remembers what it was given and what the sinks before it rendered; renders
// its own name.
class NoteSink : public ProfileSink {
public:
	NoteSink(std::string name, std::vector<std::string> &order) : name_(std::move(name)), order_(order) {}
	void write(ProfileOutput &out) override
	{
		std::string seen;
		for (const auto &[k, v] : out.rendered)
			seen += k + "=" + v + ";";
		order_.push_back(name_ + "(" + seen + ")");
		out.rendered[name_] = std::to_string(out.profile.nodes.size());
	}

private:
	std::string name_;
	std::vector<std::string> &order_;
};

// What this process writes to stderr while it lives (into a temporary file).
class StderrCapture {
public:
	StderrCapture() : saved_(dup(STDERR_FILENO)), file_(tmpfile())
	{
		REQUIRE(saved_ >= 0);
		REQUIRE(file_);
		fflush(stderr);
		dup2(fileno(file_), STDERR_FILENO);
	}
	~StderrCapture()
	{
		restore();
		fclose(file_);
	}
	// Ends the capture; what was written.
	std::string text()
	{
		restore();
		std::string out;
		rewind(file_);
		for (int c; (c = fgetc(file_)) != EOF;)
			out += char(c);
		return out;
	}

private:
	void restore()
	{
		if (saved_ < 0)
			return;
		fflush(stderr);
		dup2(saved_, STDERR_FILENO);
		close(saved_);
		saved_ = -1;
	}
	int saved_;
	FILE *file_;
};

usdtprof_event event(uint64_t ts, uint32_t tid, usdtprof_event_type type, uint64_t func)
{
	return {ts, func, kNoPid, tid, uint32_t(type), 0};
}

} // namespace

TEST_CASE("write_all gives the output to each sink in order, each seeing what those before it rendered",
	  "[sinks]")
{
	Profile p = task_profile();
	std::vector<std::string> order;
	ProfileSinks sinks;
	sinks.push_back(std::make_unique<NoteSink>("a", order));
	sinks.push_back(std::make_unique<NoteSink>("b", order));
	ProfileOutput out{p, 0};
	write_all(sinks, out);
	REQUIRE(order == std::vector<std::string>{"a()", "b(a=5;)"});
	REQUIRE(out.rendered.at("b") == "5");
}

TEST_CASE("interval_stamp: the start in UTC to the millisecond, truncated, with no dot", "[sinks]")
{
	// 2026-12-03T04:15:00.123999999Z
	REQUIRE(interval_stamp(1796271300123999999) == "20261203T041500123Z");
	REQUIRE(interval_stamp(1796271300000000000) == "20261203T041500000Z");
	REQUIRE(interval_stamp(0) == "19700101T000000000Z");
}

TEST_CASE("ProfileFileSink writes a profile that loads back the same; an unwritable path is a UserError",
	  "[sinks]")
{
	std::string dir = temp_dir();
	Profile p = task_profile();
	ProfileOutput out{p, 0};
	ProfileFileSink(dir + "/p.data", "target exited").write(out);
	auto loaded = load_profile(dir + "/p.data");
	REQUIRE(loaded);
	REQUIRE(loaded->functions == p.functions);
	REQUIRE(loaded->nodes.size() == p.nodes.size());
	for (size_t i = 0; i < p.nodes.size(); i++) {
		CHECK(loaded->nodes[i].parent == p.nodes[i].parent);
		CHECK(loaded->nodes[i].self_ns == p.nodes[i].self_ns);
		CHECK(loaded->nodes[i].total_ns == p.nodes[i].total_ns);
	}
	REQUIRE_THROWS_AS(ProfileFileSink(dir + "/no/such/dir/p.data", "x").write(out), UserError);
	fs::remove_all(dir);
}

TEST_CASE("IntervalFilesSink: one file per monitor format under the interval's stamp, pprof handed on, "
	  "retention applied",
	  "[sinks]")
{
	std::string dir = temp_dir();
	Profile p = task_profile();
	std::vector<std::string> extensions;
	for (const Format &f : formats())
		if (f.uses & kUseMonitor)
			extensions.push_back(f.extension);
	REQUIRE(extensions.size() >= 2);

	p.distributions = true;
	fit_dists(p);
	p.dists.at(0) = Distribution{150000, 150000, {{dist_bucket_of(150000), 1}}};
	IntervalFilesSink sink(dir, "app-", IntervalFileLimits{.keep = 1}, {PushSink::kFormat});
	ProfileOutput first{p, 1796271300123000000};
	size_t dists = p.dists.size();
	sink.write(first);
	for (const std::string &ext : extensions)
		REQUIRE(fs::exists(dir + "/app-20261203T041500123Z" + ext));
	// What a push sends is the interval's pprof file, byte for byte.
	REQUIRE(!first.rendered.at("pprof").empty());
	REQUIRE(first.rendered.at("pprof") == read_all(dir + "/app-20261203T041500123Z.pb.gz"));
	auto data = load_profile(dir + "/app-20261203T041500123Z.data");
	REQUIRE(data);
	REQUIRE(data->nodes.size() == p.nodes.size());
	// Streamed into the files, the bytes each format renders whole; the
	// profile left as it was, its durations too.
	REQUIRE(dists > 0);
	REQUIRE(p.dists.size() == dists);
	REQUIRE(p.dists[0].max_ns == 150000);
	REQUIRE(data->dists.at(0).max_ns == 150000);
	for (const Format &f : formats())
		if (f.uses & kUseMonitor)
			REQUIRE(read_all(dir + "/app-20261203T041500123Z" + f.extension) ==
				render_profile(f, p, ReportOptions{}));
	// No push: the pprof is not kept.
	std::string alone = temp_dir();
	ProfileOutput unpushed{p, 1796271300123000000};
	IntervalFilesSink(alone, "app-", IntervalFileLimits{.keep = 1}, {}).write(unpushed);
	REQUIRE(unpushed.rendered.empty());
	REQUIRE(read_all(alone + "/app-20261203T041500123Z.pb.gz") == first.rendered.at("pprof"));
	fs::remove_all(alone);
	// Its directory gone: no file, but a push still has the pprof.
	ProfileOutput homeless{p, 1796271300123000000};
	IntervalFilesSink(alone, "app-", IntervalFileLimits{.keep = 1}, {PushSink::kFormat}).write(homeless);
	REQUIRE(homeless.rendered.at("pprof") == first.rendered.at("pprof"));

	// keep = 1: the next interval's files replace the first's.
	ProfileOutput second{p, 1796271310123000000};
	sink.write(second);
	std::set<std::string> left;
	for (const auto &e : fs::directory_iterator(dir))
		left.insert(e.path().filename().string());
	std::set<std::string> expected;
	for (const std::string &ext : extensions)
		expected.insert("app-20261203T041510123Z" + ext);
	REQUIRE(left == expected);
	fs::remove_all(dir);
}

TEST_CASE("MetricsSink adds each interval to the registry and sets the health it is given", "[sinks]")
{
	MetricsRegistry metrics;
	MonitorHealth health;
	health.intervals = 3;
	health.probe_hits = 42;
	MetricsSink sink(metrics, nullptr, health);
	Profile p = task_profile();
	ProfileOutput out{p, 0};
	sink.write(out);
	std::string text = metrics.render();
	CHECK(metrics.series_count() > 0);
	CHECK(text.find("function=\"work\"") != std::string::npos);
	CHECK(text.find(" 42\n") != std::string::npos);
	// The registry sums the intervals: twice the calls of one.
	sink.write(out);
	CHECK(metrics.render() != text);
}

TEST_CASE("EventLog keeps events up to its limit and counts the rest", "[sinks]")
{
	EventLog log{2, {}, 0};
	for (uint64_t i = 0; i < 5; i++)
		log.add(event(i, 1, USDTPROF_EV_ENTER, i));
	REQUIRE(log.events.size() == 2);
	REQUIRE(log.events[1].ts == 1);
	REQUIRE(log.not_kept == 3);
}

TEST_CASE("timeline_input: functions named once each, spans by their specs, tasks by id, threads and processes "
	  "named",
	  "[sinks]")
{
	EventLog log{100, {}, 0};
	log.add(event(10, 5, USDTPROF_EV_ENTER, 0x100));
	log.add(event(11, 5, USDTPROF_EV_SPAN_START, 7));
	log.add(event(12, 5, USDTPROF_EV_SPAN_START, 8)); // no spec names span 8: left out
	log.add(event(13, 6, USDTPROF_EV_TASK_CREATE, 99));
	log.add(event(14, 5, USDTPROF_EV_SPAN_END, 7));
	log.add(event(15, 5, USDTPROF_EV_EXIT, 0x100));
	log.add(event(16, 5, USDTPROF_EV_ENTER, 0x200)); // the lookup fails
	int lookups = 0;
	TraceNames names{5, 20, 3,
			 [&](uint32_t, uint64_t func) -> Result<FunctionName> {
				 lookups++;
				 if (func == 0x100)
					 return FunctionName{"handle", "app.php:3"};
				 return Error{"gone"};
			 },
			 {{5, "worker-5"}}, {{7, "gc__start"}}};
	TraceInput in = timeline_input(log, names, {{int32_t(kNoPid), "app", {}}});

	REQUIRE(in.events.size() == 6);
	CHECK(in.events[0].name == "handle");
	CHECK(in.events[1].name == "gc__start");
	CHECK(in.events[1].ts_ns == 11);
	CHECK(in.events[2].type == USDTPROF_EV_TASK_CREATE);
	CHECK(in.events[2].task_id == 99);
	CHECK(in.events[2].name.empty());
	CHECK(in.events[3].type == USDTPROF_EV_SPAN_END);
	CHECK(in.events[4].name == "handle");
	CHECK(in.events[5].name == "[unknown 0x200]");
	CHECK(lookups == 2); // 0x100 once, 0x200 once
	CHECK(in.start_ns == 5);
	CHECK(in.stop_ns == 20);
	CHECK(in.lost_events == 3);
	CHECK(!in.max_events_reached);
	CHECK(in.thread_names == std::map<uint32_t, std::string>{{5, "worker-5"}, {6, ""}});
	CHECK(in.process_names == std::map<uint32_t, std::string>{{kNoPid, "app"}});

	log.max_events = log.events.size();
	log.add(event(17, 5, USDTPROF_EV_EXIT, 0x200));
	CHECK(timeline_input(log, names, {}).max_events_reached);
}

TEST_CASE("timeline_input: a Java lambda's hidden class is named by the method it calls, as in the profile",
	  "[sinks]")
{
	// Thread 5: main -> Srv$$Lambda$11 -> its body; then Srv$$Lambda$12, whose body no event shows.
	// Thread 6 enters the body with nothing open (its lambda entered before the recording).
	EventLog log{100, {}, 0};
	for (auto [ts, tid, type, func] : std::vector<std::tuple<uint64_t, uint32_t, usdtprof_event_type, uint64_t>>{
		     {1, 5, USDTPROF_EV_ENTER, 0x10}, {2, 5, USDTPROF_EV_ENTER, 0x20}, {3, 6, USDTPROF_EV_ENTER, 0x30},
		     {4, 5, USDTPROF_EV_ENTER, 0x30}, {5, 5, USDTPROF_EV_EXIT, 0x30}, {6, 5, USDTPROF_EV_EXIT, 0x20},
		     {7, 5, USDTPROF_EV_ENTER, 0x21}, {8, 5, USDTPROF_EV_EXIT, 0x21}, {9, 5, USDTPROF_EV_EXIT, 0x10}})
		log.add(event(ts, tid, type, func));
	std::map<uint64_t, std::string> functions = {{0x10, "Srv.main(String[])"}, {0x20, "Srv$$Lambda$11.run()"},
						     {0x21, "Srv$$Lambda$12.run()"}, {0x30, "Srv.lambda$main$0()"}};
	TraceNames names{0, 10, 0,
			 [&](uint32_t, uint64_t func) -> Result<FunctionName> { return FunctionName{functions.at(func), ""}; },
			 {}, {}};
	TraceInput in = timeline_input(log, names, {});
	std::vector<std::string> named;
	for (const TraceEvent &e : in.events)
		named.push_back(e.name);
	CHECK(named == std::vector<std::string>{"Srv.main(String[])", "Srv$$Lambda[lambda$main$0].run()",
						"Srv.lambda$main$0()", "Srv.lambda$main$0()", "Srv.lambda$main$0()",
						"Srv$$Lambda[lambda$main$0].run()", "Srv$$Lambda$12.run()",
						"Srv$$Lambda$12.run()", "Srv.main(String[])"});
}

TEST_CASE("TraceFileSink writes a valid Chrome trace of the events; an unknown format is a usage error",
	  "[sinks]")
{
	std::string dir = temp_dir();
	EventLog log{100, {}, 0};
	log.add(event(1000, 5, USDTPROF_EV_ENTER, 0x1000));
	log.add(event(2000, 5, USDTPROF_EV_ENTER, 0x2000));
	log.add(event(3000, 5, USDTPROF_EV_EXIT, 0x2000));
	// main's exit is not seen: closed at the stop.
	TraceNames names{0, 5000, 0,
			 [](uint32_t, uint64_t func) -> Result<FunctionName> {
				 return FunctionName{func == 0x1000 ? "main" : "work", ""};
			 },
			 {}, {}};
	Profile p = task_profile();
	ProfileOutput out{p, 0};
	TraceOptions options{.output = dir + "/t.json", .format = "chrome"};
	TraceFileSink(options, log, names).write(out);
	auto trace = nlohmann::json::parse(read_all(options.output));
	REQUIRE(validate_chrome_trace(trace) == "");
	std::multiset<std::string> slices;
	for (const auto &e : trace["traceEvents"])
		if (e["ph"] == "X")
			slices.insert(e["name"].get<std::string>());
	REQUIRE(slices == std::multiset<std::string>{"main", "work"});

	TraceOptions bad{.output = dir + "/u.json", .format = "no-such-format"};
	try {
		TraceFileSink(bad, log, names).write(out);
		FAIL("an unknown format was written");
	} catch (const UserError &e) {
		REQUIRE(e.exit_code() == 2);
	}
	REQUIRE(!fs::exists(bad.output));
	fs::remove_all(dir);
}

TEST_CASE("PushSink pushes the pprof the interval files rendered, with its times and labels; a failed push is "
	  "said once",
	  "[sinks]")
{
	using push_test::eventually;
	using push_test::param;
	push_test::Receiver receiver([](size_t n) { return n == 0 ? 200 : 400; });
	auto pusher = ProfilePusher::create(push_test::fast_options(receiver.url()));
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	PushSink sink(p);

	Profile profile = task_profile();
	profile.stop_unix_ns = 1796271310999000000;
	ProfileOutput out{profile, 1796271300123000000};
	out.rendered["pprof"] = std::string("\x1f\x8b\0pprof", 8);
	out.pid = 4242;
	out.container_id = "0123456789ab";
	sink.write(out);
	REQUIRE(eventually([&] { return p.sent() == 1; }));
	auto sent = receiver.requests().at(0);
	CHECK(sent.body == out.rendered["pprof"]);
	CHECK(param(sent, "from") == "1796271300"); // unix seconds, truncated
	CHECK(param(sent, "until") == "1796271310");
	CHECK(param(sent, "name") == "myapp{hostname=testhost,pid=4242,container_id=0123456789ab}");

	// The receiver refuses the next (a 4xx: given up at once).
	sink.write(out);
	REQUIRE(eventually([&] { return p.failed() == 1; }));
	StderrCapture err;
	sink.say_limits();
	sink.say_limits(); // the same reason: not said again
	CHECK(err.text() == "usdtprof: push to " + receiver.url() +
				    ": HTTP 400: try later (pushes so far: 1 sent, 1 given up, 0 dropped from the full queue)\n");
}
