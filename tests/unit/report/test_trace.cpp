#include <catch2/catch.hpp>

#include <algorithm>
#include <iterator>
#include <random>

#include <nlohmann/json.hpp>

#include "report/trace.h"
#include "../trace_validate.h"

using namespace usdtprof;
using nlohmann::json;

namespace {

constexpr uint32_t kPid = 100;
constexpr uint64_t kStart = 1'000'000; // start_ns; the helpers take times relative to it

TraceEvent enter(uint32_t tid, uint64_t ts, std::string name) { return {kStart + ts, kPid, tid, USDTPROF_EV_ENTER, std::move(name)}; }
TraceEvent leave(uint32_t tid, uint64_t ts, std::string name) { return {kStart + ts, kPid, tid, USDTPROF_EV_EXIT, std::move(name)}; }
TraceEvent task(usdtprof_event_type type, uint32_t tid, uint64_t ts, uint64_t id) { return {kStart + ts, kPid, tid, type, "", id}; }

TraceInput make_input(std::vector<TraceEvent> events, uint64_t stop = 10'000)
{
	TraceInput in;
	in.events = std::move(events);
	in.start_ns = kStart;
	in.stop_ns = kStart + stop;
	return in;
}

struct Output {
	json chrome, speedscope;
};

// Both renderings, parsed and checked by the validators.
Output render(const TraceInput &in)
{
	Output out{json::parse(render_chrome_trace(in)), json::parse(render_speedscope(in))};
	INFO(out.chrome.dump());
	REQUIRE(validate_chrome_trace(out.chrome) == "");
	INFO(out.speedscope.dump());
	REQUIRE(validate_speedscope(out.speedscope) == "");
	return out;
}

// The non-metadata events as "tid ph name-or-flow-id ts", and a slice's end
// (ts + dur, as readers compute it) after, in array order.
std::vector<std::string> steps(const json &chrome)
{
	std::vector<std::string> out;
	for (const json &e : chrome["traceEvents"])
		if (e["ph"] != "M")
			out.push_back(std::to_string(e["tid"].get<uint32_t>()) + " " + e["ph"].get<std::string>() + " " +
				(e["ph"] == "s" || e["ph"] == "f" ? e["id"].dump() : e["name"].get<std::string>()) + " " + e["ts"].dump() +
				(e["ph"] == "X" ? " " + json(e["ts"].get<double>() + e["dur"].get<double>()).dump() : ""));
	return out;
}

// One speedscope profile's events as "type frame-name at".
std::vector<std::string> steps(const json &speedscope, size_t profile)
{
	std::vector<std::string> out;
	for (const json &e : speedscope["profiles"][profile]["events"])
		out.push_back(e["type"].get<std::string>() + " " + speedscope["shared"]["frames"][e["frame"].get<size_t>()]["name"].get<std::string>() +
			" " + e["at"].dump());
	return out;
}

const json &find_event(const json &chrome, const std::string &ph, const std::string &name)
{
	for (const json &e : chrome["traceEvents"])
		if (e["ph"] == ph && e["name"] == name)
			return e;
	FAIL("no " << ph << " event " << name);
	return chrome;
}

} // namespace

TEST_CASE("trace: nested calls become nested slices")
{
	Output out = render(make_input({enter(1, 0, "main"), enter(1, 500, "work"), leave(1, 1500, "work"), leave(1, 2000, "main")}, 5000));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X main 0.0 2.0", "1 X work 0.5 1.5"});
	CHECK(out.chrome["displayTimeUnit"] == "ns");
	CHECK(out.chrome["otherData"] == json{{"unmatched_exits", 0}, {"events", 4}});
	const json &b = find_event(out.chrome, "X", "work");
	CHECK(b["cat"] == "function");
	CHECK(b["pid"] == kPid);
	CHECK(b["ts"].is_number_float());

	const json &s = out.speedscope;
	CHECK(s["$schema"] == "https://www.speedscope.app/file-format-schema.json");
	CHECK(s["shared"]["frames"] == json::parse(R"([{"name": "main"}, {"name": "work"}])"));
	REQUIRE(s["profiles"].size() == 1);
	const json &p = s["profiles"][0];
	CHECK(p["type"] == "evented");
	CHECK(p["name"] == "tid 1");
	CHECK(p["unit"] == "nanoseconds");
	CHECK(p["startValue"] == 0);
	CHECK(p["endValue"] == 5000);
	CHECK(steps(s, 0) == std::vector<std::string>{"O main 0", "O work 500", "C work 1500", "C main 2000"});
	CHECK(s["name"] == "usdtprof trace");
	CHECK(s["activeProfileIndex"] == 0);
	CHECK(s["exporter"] == "usdtprof");
}

TEST_CASE("trace: an exit that skips frames closes them")
{
	Output out = render(make_input({enter(1, 0, "a"), enter(1, 100, "b"), enter(1, 200, "c"), leave(1, 300, "a")}));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X a 0.0 0.3", "1 X b 0.1 0.3", "1 X c 0.2 0.3"});
	CHECK(out.chrome["otherData"]["unmatched_exits"] == 0);
	CHECK(steps(out.speedscope, 0) == std::vector<std::string>{"O a 0", "O b 100", "O c 200", "C c 300", "C b 300", "C a 300"});
}

TEST_CASE("trace: an exit matching no open frame is dropped and counted")
{
	Output out = render(make_input({enter(1, 0, "a"), leave(1, 100, "z"), leave(1, 200, "a"), leave(1, 300, "a")}));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X a 0.0 0.2"});
	CHECK(out.chrome["otherData"] == json{{"unmatched_exits", 2}, {"events", 4}});
	CHECK(steps(out.speedscope, 0) == std::vector<std::string>{"O a 0", "C a 200"});
}

TEST_CASE("trace: frames open at the stop are closed at stop_ns")
{
	Output out = render(make_input({enter(1, 0, "a"), enter(1, 100, "b")}, 3000));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X a 0.0 3.0", "1 X b 0.1 3.0"});
	CHECK(steps(out.speedscope, 0) == std::vector<std::string>{"O a 0", "O b 100", "C b 3000", "C a 3000"});

	SECTION("or at their thread's last event when it came after the stop")
	{
		out = render(make_input({enter(2, 0, "a"), enter(1, 4000, "late")}, 3000));
		CHECK(steps(out.chrome) == std::vector<std::string>{"2 X a 0.0 3.0", "1 X late 4.0 4.0"});
		CHECK(out.speedscope["profiles"][0]["endValue"] == 4000);
	}
}

TEST_CASE("trace: a task created in a slice and begun on another thread gets a flow")
{
	Output out = render(make_input({enter(1, 0, "spawn"), task(USDTPROF_EV_TASK_CREATE, 1, 100, 7), leave(1, 200, "spawn"),
		task(USDTPROF_EV_TASK_BEGIN, 2, 300, 7), enter(2, 400, "run"), leave(2, 500, "run"), task(USDTPROF_EV_TASK_END, 2, 600, 7)}));
	// The flow start is at the creation's instant, the end follows the [task]
	// slice, so that each binds (same ts, thread and cat).
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X spawn 0.0 0.2", "1 i task created 0.1", "1 s 7 0.1",
		"2 X [task] 0.3 0.6", "2 f 7 0.3", "2 X run 0.4 0.5"});
	CHECK(find_event(out.chrome, "i", "task created") ==
		json::parse(R"({"ph": "i", "s": "t", "name": "task created", "cat": "task", "pid": 100, "tid": 1, "ts": 0.1, "args": {"task_id": 7}})"));
	CHECK(find_event(out.chrome, "s", "task") == json::parse(R"({"ph": "s", "id": 7, "name": "task", "cat": "task", "pid": 100, "tid": 1, "ts": 0.1})"));
	CHECK(find_event(out.chrome, "f", "task") ==
		json::parse(R"({"ph": "f", "id": 7, "name": "task", "cat": "task", "pid": 100, "tid": 2, "ts": 0.3, "bp": "e"})"));
	const json &b = find_event(out.chrome, "X", "[task]");
	CHECK(b["cat"] == "task");
	CHECK(b["args"] == json::parse(R"({"task_id": 7, "created_in": ["spawn"]})"));
	// speedscope runs the task under its creator's path, as the profile counts it.
	CHECK(steps(out.speedscope, 1) == std::vector<std::string>{"O spawn 300", "O [task] 300", "O run 400", "C run 500",
		"C [task] 600", "C spawn 600"});
}

TEST_CASE("trace: a flow needs a create inside a slice, before its begin")
{
	std::vector<TraceEvent> events;
	// Where the profile counts the task: created at the root, under spawn, or
	// (never created) under the worker's own frames.
	std::vector<std::string> speedscope = {"O [task] 300", "C [task] 400"};
	json created_in;
	SECTION("create outside any slice")
	{
		events = {task(USDTPROF_EV_TASK_CREATE, 1, 100, 7)};
		created_in = json::array();
	}
	SECTION("begin earlier than the create")
	{
		events = {enter(1, 0, "spawn"), task(USDTPROF_EV_TASK_CREATE, 1, 500, 7), leave(1, 600, "spawn")};
		speedscope = {"O spawn 300", "O [task] 300", "C [task] 400", "C spawn 400"};
		created_in = {"spawn"};
	}
	SECTION("no create")
	{
		events = {enter(1, 0, "spawn"), leave(1, 600, "spawn")};
	}
	events.push_back(task(USDTPROF_EV_TASK_BEGIN, 2, 300, 7));
	events.push_back(task(USDTPROF_EV_TASK_END, 2, 400, 7));
	Output out = render(make_input(events));
	for (const std::string &step : steps(out.chrome))
		CHECK(step.find(" s ") == std::string::npos);
	CHECK(find_event(out.chrome, "X", "[task]")["args"].value("created_in", json()) == created_in);
	CHECK(steps(out.speedscope, 1) == speedscope);
}

TEST_CASE("trace: a begin pairs with the latest unpaired create of its id")
{
	// The second create has no enclosing slice: the first begin takes it and
	// gets no flow; the second begin takes the first create.
	Output out = render(make_input({enter(1, 0, "a"), task(USDTPROF_EV_TASK_CREATE, 1, 100, 7), leave(1, 150, "a"),
		task(USDTPROF_EV_TASK_CREATE, 1, 200, 7), task(USDTPROF_EV_TASK_BEGIN, 2, 300, 7), task(USDTPROF_EV_TASK_END, 2, 400, 7),
		task(USDTPROF_EV_TASK_BEGIN, 2, 500, 7), task(USDTPROF_EV_TASK_END, 2, 600, 7)}));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X a 0.0 0.15", "1 i task created 0.1", "1 s 7 0.1",
		"2 X [task] 0.3 0.4", "2 X [task] 0.5 0.6", "2 f 7 0.5"});
}

TEST_CASE("trace: a task end closes its task slice and the frames above it")
{
	Output out = render(make_input({task(USDTPROF_EV_TASK_BEGIN, 1, 0, 5), enter(1, 100, "x"), task(USDTPROF_EV_TASK_BEGIN, 1, 200, 6),
		enter(1, 300, "y"), leave(1, 350, "[task]"), task(USDTPROF_EV_TASK_END, 1, 400, 5), task(USDTPROF_EV_TASK_END, 1, 500, 9),
		task(USDTPROF_EV_TASK_END, 1, 600, 5)}));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X [task] 0.0 0.4", "1 X x 0.1 0.4", "1 X [task] 0.2 0.4",
		"1 X y 0.3 0.4"});
	// The exit of a function named "[task]" is not a task end; task 9 never began; task 5 ended already.
	CHECK(out.chrome["otherData"]["unmatched_exits"] == 3);
}

TEST_CASE("trace: metadata names processes and threads")
{
	TraceInput in = make_input({enter(1, 0, "a"), leave(1, 100, "a"), enter(2, 0, "b"), leave(2, 100, "b")});
	in.process_names = {{kPid, "app"}};
	in.thread_names = {{1, "main"}};
	Output out = render(in);
	const json &events = out.chrome["traceEvents"];
	CHECK(events[0] == json::parse(R"({"ph": "M", "name": "process_name", "pid": 100, "args": {"name": "app"}})"));
	CHECK(events[1] == json::parse(R"({"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}})"));
	CHECK(events[2] == json::parse(R"({"ph": "M", "name": "thread_name", "pid": 100, "tid": 2, "args": {"name": "tid 2"}})"));
	CHECK(events[3]["ph"] != "M");
	CHECK(out.speedscope["profiles"][0]["name"] == "main (tid 1)");
	CHECK(out.speedscope["profiles"][1]["name"] == "tid 2");
}

TEST_CASE("trace: timestamps going back on a thread are clamped")
{
	TraceEvent early = enter(1, 0, "early");
	early.ts_ns = kStart - 500; // before the recording's start
	Output out = render(make_input({early, leave(1, 100, "early"), enter(1, 500, "a"), enter(1, 300, "b"), leave(1, 400, "b"), leave(1, 600, "a")}));
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X early 0.0 0.1", "1 X a 0.5 0.6", "1 X b 0.5 0.5"});
	CHECK(steps(out.speedscope, 0) == std::vector<std::string>{"O early 0", "C early 100", "O a 500", "O b 500", "C b 500", "C a 600"});
}

TEST_CASE("trace: names that are not UTF-8 are replaced")
{
	Output out = render(make_input({enter(1, 0, "bad\xff"), leave(1, 100, "bad\xff")}));
	CHECK(find_event(out.chrome, "X", "bad\xef\xbf\xbd")["ts"] == 0.0);
	CHECK(out.speedscope["shared"]["frames"][0]["name"] == "bad\xef\xbf\xbd");
}

TEST_CASE("trace: the validators reject broken traces")
{
	auto chrome = [](const char *events) { return validate_chrome_trace(json::parse(std::string(R"({"traceEvents": [)") + events + "]}")); };
	CHECK(chrome(R"({"ph": "X", "name": "a", "cat": "function", "pid": 1, "tid": 1, "ts": 1.0})") != ""); // no dur
	// A child that outlasts its parent; ts going back.
	CHECK(chrome(R"({"ph": "X", "name": "a", "cat": "function", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
		{"ph": "X", "name": "b", "cat": "function", "pid": 1, "tid": 1, "ts": 2, "dur": 5})") != "");
	CHECK(chrome(R"({"ph": "X", "name": "a", "cat": "function", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
		{"ph": "X", "name": "b", "cat": "function", "pid": 1, "tid": 1, "ts": 1, "dur": 0})") != "");
	// An f with no s; an s outside any slice; an s with no instant to bind to.
	CHECK(chrome(R"({"ph": "X", "name": "a", "cat": "task", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
		{"ph": "f", "name": "task", "cat": "task", "bp": "e", "id": 3, "pid": 1, "tid": 1, "ts": 1})") != "");
	CHECK(chrome(R"({"ph": "s", "name": "task", "cat": "task", "id": 3, "pid": 1, "tid": 2, "ts": 0},
		{"ph": "X", "name": "a", "cat": "task", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
		{"ph": "f", "name": "task", "cat": "task", "bp": "e", "id": 3, "pid": 1, "tid": 1, "ts": 1})") != "");
	const char *valid_tail = R"({"ph": "s", "name": "task", "cat": "task", "id": 3, "pid": 1, "tid": 2, "ts": 0},
		{"ph": "X", "name": "a", "cat": "task", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
		{"ph": "f", "name": "task", "cat": "task", "bp": "e", "id": 3, "pid": 1, "tid": 1, "ts": 1})";
	CHECK(chrome((std::string(R"({"ph": "X", "name": "b", "cat": "function", "pid": 1, "tid": 2, "ts": 0, "dur": 2}, )") +
		valid_tail).c_str()) != "");
	CHECK(chrome((std::string(R"({"ph": "X", "name": "b", "cat": "function", "pid": 1, "tid": 2, "ts": 0, "dur": 2},
		{"ph": "i", "s": "t", "name": "task created", "cat": "task", "pid": 1, "tid": 2, "ts": 0}, )") + valid_tail).c_str()) == "");

	auto speedscope = [](const char *events) {
		return validate_speedscope(json::parse(std::string(R"({"$schema": "https://www.speedscope.app/file-format-schema.json",
			"shared": {"frames": [{"name": "a"}, {"name": "b"}]}, "activeProfileIndex": 0, "profiles": [{"type": "evented",
			"name": "t", "unit": "nanoseconds", "startValue": 0, "endValue": 10, "events": [)") + events + "]}]}"));
	};
	CHECK(speedscope(R"({"type": "O", "frame": 0, "at": 1}, {"type": "O", "frame": 1, "at": 2},
		{"type": "C", "frame": 1, "at": 3}, {"type": "C", "frame": 0, "at": 4})") == "");
	CHECK(speedscope(R"({"type": "O", "frame": 0, "at": 1}, {"type": "O", "frame": 1, "at": 2},
		{"type": "C", "frame": 0, "at": 3}, {"type": "C", "frame": 1, "at": 4})") != "");
	CHECK(speedscope(R"({"type": "O", "frame": 2, "at": 1}, {"type": "C", "frame": 2, "at": 2})") != "");
	CHECK(speedscope(R"({"type": "O", "frame": 0, "at": 2}, {"type": "C", "frame": 0, "at": 1})") != "");
	CHECK(speedscope(R"({"type": "O", "frame": 0, "at": 2})") != "");
}

TEST_CASE("trace: random event sequences always give valid traces")
{
	const std::pair<uint32_t, uint32_t> threads[] = {{100, 1}, {100, 2}, {200, 3}};
	const char *names[] = {"a", "b", "c", "d"};
	const usdtprof_event_type types[] = {USDTPROF_EV_ENTER, USDTPROF_EV_ENTER, USDTPROF_EV_ENTER, USDTPROF_EV_EXIT, USDTPROF_EV_EXIT,
		USDTPROF_EV_EXIT, USDTPROF_EV_TASK_CREATE, USDTPROF_EV_TASK_BEGIN, USDTPROF_EV_TASK_END};
	std::mt19937 rng(20240611);
	auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
	for (int iteration = 0; iteration < 200; iteration++) {
		TraceInput in = make_input({}, pick(3000));
		uint64_t now[3] = {};
		size_t opens = 0;
		for (size_t n = pick(80); n-- > 0;) {
			size_t t = pick(3);
			// Now and then a timestamp goes back, which the renderers must clamp.
			now[t] = pick(20) ? now[t] + pick(100) : now[t] - std::min<uint64_t>(now[t], pick(50));
			usdtprof_event_type type = types[pick(std::size(types))];
			opens += type == USDTPROF_EV_ENTER || type == USDTPROF_EV_TASK_BEGIN;
			in.events.push_back({kStart + now[t], threads[t].first, threads[t].second, type, type <= USDTPROF_EV_EXIT ? names[pick(4)] : "",
				pick(3) + 1});
		}
		INFO("iteration " << iteration);
		Output out = render(in);
		size_t slices = 0, frames = 0;
		for (const json &e : out.chrome["traceEvents"])
			slices += e["ph"] == "X";
		for (const json &p : out.speedscope["profiles"])
			for (const json &e : p["events"])
				frames += e["type"] == "O";
		CHECK(slices == opens);
		// speedscope also opens a task's creator frames, and reopens the worker's after it.
		CHECK(frames >= opens);
		CHECK(out.chrome["otherData"]["events"] == in.events.size());
	}
}

TEST_CASE("trace: a task created inside a task names the whole path; speedscope reopens the worker's frames")
{
	// Thread 1 runs a; thread 2, inside its own loop frame, runs task 7 for a
	// and creates task 8 there; thread 3 runs task 8 inside its own loop.
	Output out = render(make_input({enter(1, 0, "a"), task(USDTPROF_EV_TASK_CREATE, 1, 10, 7), enter(2, 20, "loop"),
		task(USDTPROF_EV_TASK_BEGIN, 2, 30, 7), enter(2, 40, "b"), task(USDTPROF_EV_TASK_CREATE, 2, 50, 8),
		enter(3, 60, "loop"), task(USDTPROF_EV_TASK_BEGIN, 3, 70, 8), enter(3, 80, "c"), leave(3, 90, "c"),
		task(USDTPROF_EV_TASK_END, 3, 100, 8), leave(3, 110, "loop"), leave(2, 120, "b"), task(USDTPROF_EV_TASK_END, 2, 130, 7),
		leave(2, 140, "loop"), leave(1, 150, "a")}));
	std::vector<json> created;
	for (const json &e : out.chrome["traceEvents"])
		if (e["ph"] == "X" && e["name"] == "[task]")
			created.push_back(e["args"]["created_in"]);
	CHECK(created == std::vector<json>{{"a"}, {"a", "[task]", "b"}});
	CHECK(steps(out.speedscope, 2) == std::vector<std::string>{"O loop 60", "C loop 70", "O a 70", "O [task] 70", "O b 70",
		"O [task] 70", "O c 80", "C c 90", "C [task] 100", "C b 100", "C [task] 100", "C a 100", "O loop 100", "C loop 110"});
}

TEST_CASE("trace: spans are slices on a track of their own per thread and name, never on the thread's stack")
{
	auto span = [](usdtprof_event_type type, uint32_t tid, uint64_t ts, std::string name) {
		return TraceEvent{kStart + ts, kPid, tid, type, std::move(name)};
	};
	const std::string gc = "python:gc__start/gc__done", tx = "x:tx__start/tx__end";
	// gc starts inside a and ends after a has returned (it does not nest with the calls); tx
	// overlaps gc on the same thread; a second gc is started again before its end (the kernel
	// times it from the later start), tx is still open at the stop, an end without a start is
	// dropped.
	TraceInput in = make_input({enter(1, 0, "a"), span(USDTPROF_EV_SPAN_START, 1, 100, gc), span(USDTPROF_EV_SPAN_START, 1, 150, tx),
				    leave(1, 200, "a"), span(USDTPROF_EV_SPAN_END, 1, 300, gc), enter(1, 400, "b"),
				    span(USDTPROF_EV_SPAN_START, 1, 500, gc), span(USDTPROF_EV_SPAN_START, 1, 600, gc),
				    span(USDTPROF_EV_SPAN_END, 1, 700, gc), span(USDTPROF_EV_SPAN_END, 1, 750, gc), leave(1, 800, "b"),
				    span(USDTPROF_EV_SPAN_START, 2, 900, gc), span(USDTPROF_EV_SPAN_END, 2, 950, gc)},
				   3000);
	in.thread_names = {{1, "main"}, {2, "worker"}};
	Output out = render(in);
	// The threads' own slices are their calls alone; the tracks' tids start at 2^30, in (pid,
	// tid, name) order.
	const std::string t0 = std::to_string(1u << 30), t1 = std::to_string((1u << 30) + 1), t2 = std::to_string((1u << 30) + 2);
	CHECK(steps(out.chrome) == std::vector<std::string>{"1 X a 0.0 0.2", "1 X b 0.4 0.8",
		t0 + " X [span " + gc + "] 0.1 0.3", t0 + " X [span " + gc + "] 0.6 0.7",
		t1 + " X [span " + tx + "] 0.15 3.0", t2 + " X [span " + gc + "] 0.9 0.95"});
	std::map<std::string, std::string> names;
	for (const json &e : out.chrome["traceEvents"])
		if (e["ph"] == "M" && e["name"] == "thread_name")
			names[e["tid"].dump()] = e["args"]["name"];
	// Thread 2 had spans and no call: a span track, no track of its own.
	CHECK(names == std::map<std::string, std::string>{{"1", "main"},
		{t0, "[span " + gc + "] main (tid 1)"}, {t1, "[span " + tx + "] main (tid 1)"}, {t2, "[span " + gc + "] worker (tid 2)"}});
	const json &open = find_event(out.chrome, "X", "[span " + tx + "]");
	CHECK(open["cat"] == "span");
	CHECK(open["pid"] == kPid);
	CHECK(open["args"] == json{{"span", tx}, {"thread", 1}, {"open", true}});
	CHECK(find_event(out.chrome, "X", "[span " + gc + "]")["args"] == json{{"span", gc}, {"thread", 1}});
	CHECK(out.chrome["otherData"] ==
	      json{{"unmatched_exits", 0}, {"events", 13}, {"span_restarts", 1}, {"unmatched_span_ends", 1}});

	// speedscope: each track a profile after its thread's.
	const json &s = out.speedscope;
	std::vector<std::string> profiles;
	for (const json &p : s["profiles"])
		profiles.push_back(p["name"]);
	CHECK(profiles == std::vector<std::string>{"main (tid 1)", "[span " + gc + "] main (tid 1)", "[span " + tx + "] main (tid 1)",
		"[span " + gc + "] worker (tid 2)"});
	CHECK(steps(s, 0) == std::vector<std::string>{"O a 0", "C a 200", "O b 400", "C b 800"});
	CHECK(steps(s, 1) == std::vector<std::string>{"O [span " + gc + "] 100", "C [span " + gc + "] 300", "O [span " + gc + "] 600",
		"C [span " + gc + "] 700"});
	CHECK(steps(s, 2) == std::vector<std::string>{"O [span " + tx + "] 150", "C [span " + tx + "] 3000"});
	CHECK(steps(s, 3) == std::vector<std::string>{"O [span " + gc + "] 900", "C [span " + gc + "] 950"});
	CHECK(s["profiles"][3]["endValue"] == 3000);
	CHECK(s["activeProfileIndex"] == 0);
}

TEST_CASE("trace: a span frame is apart from a function of the same name")
{
	TraceInput in = make_input({enter(1, 0, "[span g]"), TraceEvent{kStart + 10, kPid, 1, USDTPROF_EV_SPAN_START, "g"},
				    TraceEvent{kStart + 20, kPid, 1, USDTPROF_EV_SPAN_END, "g"}, leave(1, 30, "[span g]")});
	Output out = render(in);
	CHECK(out.speedscope["shared"]["frames"] == json::parse(R"([{"name": "[span g]"}, {"name": "[span g]"}])"));
	CHECK(out.speedscope["profiles"][1]["events"] == json::parse(R"([{"type": "O", "frame": 1, "at": 10}, {"type": "C", "frame": 1, "at": 20}])"));
}
