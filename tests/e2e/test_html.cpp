// The HTML pages (report --format html, diff --format html) opened from disk in
// headless Chromium and used as a user would (tests/clients/html_report.mjs),
// compared with `report --format json` and `report --callers/--callees` of the
// same recording. Screenshots are kept in .output/test-artifacts/html/.
#include <catch2/catch.hpp>
#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "harness.h"
#include "base/text_escape.h"

using namespace e2e;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

std::string artifacts()
{
	std::string dir = (fs::path(e2e::usdtprof()).parent_path() / "test-artifacts" / "html").string();
	fs::create_directories(dir);
	return dir;
}

json run_json(const std::vector<std::string> &argv)
{
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	return json::parse(o.out);
}

// What the page showed, from html_report.mjs.
json open_page(const std::vector<std::string> &args)
{
	std::vector<std::string> argv = {"node", source_file("tests/clients/html_report.mjs")};
	argv.insert(argv.end(), args.begin(), args.end());
	json shown = run_json(argv);
	INFO(shown["messages"].dump());
	REQUIRE(shown["messages"].empty());  // no script error, no warning
	REQUIRE(shown["requests"].empty());  // nothing fetched: self-contained
	return shown;
}

uint64_t number(const json &v) { return v.is_string() ? std::stoull(v.get<std::string>()) : v.get<uint64_t>(); }

// The page's function table (row data) equals JSON's functions, in order.
void require_table(const json &rows, const json &functions)
{
	REQUIRE(rows.size() == functions.size());
	for (size_t i = 0; i < rows.size(); i++) {
		const json &r = rows[i], &f = functions[i];
		INFO("row " << r.dump() << "\nreport " << f.dump());
		REQUIRE(r["name"] == f["name"]);
		REQUIRE(number(r["calls"]) == f["calls"]);
		REQUIRE(number(r["open"]) == f["open"]);
		REQUIRE(number(r["self"]) == f["self_ns"]);
		REQUIRE(number(r["total"]) == f["total_ns"]);
		REQUIRE(number(r["on"]) == f["self_oncpu_ns"]);
		REQUIRE(number(r["off"]) == f["self_offcpu_ns"]);
		REQUIRE((r["recursive"] == "true") == f["recursive"].get<bool>());
		// Durations (wall-clock whatever the time domain) as JSON's, merged from the paths alike.
		REQUIRE(r.contains("min") == f.contains("durations"));
		if (f.contains("durations")) {
			const json &d = f["durations"];
			REQUIRE(number(r["min"]) == d["min_ns"]);
			REQUIRE(number(r["p50"]) == d["p50_ns"]);
			REQUIRE(number(r["p99"]) == d["p99_ns"]);
			REQUIRE(number(r["max"]) == d["max_ns"]);
		}
	}
}

// The edges of `report --callers/--callees NAME --format json`, as the sandwich lists them.
void require_edges(const json &rows, const json &edges)
{
	REQUIRE(rows.size() >= edges.size());
	for (size_t i = 0; i < edges.size(); i++) {
		INFO("row " << rows[i].dump() << "\nreport " << edges[i].dump());
		REQUIRE(rows[i]["name"] == edges[i]["name"]);
		REQUIRE(number(rows[i]["calls"]) == edges[i]["calls"]);
		REQUIRE(number(rows[i]["time"]) == edges[i]["time_ns"]);
	}
}

// What "~" means, as the text report's footer says it.
const std::string kUncertainNote = "~: within the calibration's spread, not precise (a self time: of its calls; an "
				   "average or one call's duration: of one call)";

bool marked(const json &row, const char *key)
{
	return row["cells"].contains(key) && row["cells"][key].get<std::string>().starts_with("~");
}

// The page's table as report --format json's, each cell marked "~" exactly
// where JSON's numbers lie within the spread as the text report marks them:
// a self time within uncertain_ns, an average or one call's duration within
// one call's share of it (rounded up); each marked cell says why on hover.
void require_marks(const json &rows, const json &functions)
{
	require_table(rows, functions);
	for (size_t i = 0; i < rows.size(); i++) {
		const json &r = rows[i], &f = functions[i];
		INFO("row " << r.dump() << "\nreport " << f.dump());
		uint64_t spread = f["uncertain_ns"], calls = f["calls"];
		REQUIRE(number(r["uncertain"]) == spread);
		REQUIRE(marked(r, "self") == f["self_uncertain"].get<bool>());
		uint64_t call_spread = calls ? (spread + calls - 1) / calls : 0;
		auto within = [&](uint64_t v) { return spread && v <= call_spread; };
		REQUIRE(marked(r, "avg") == within(calls ? f["total_ns"].get<uint64_t>() / calls : 0));
		if (f.contains("durations"))
			for (const char *key : {"min", "p50", "p99", "max"})
				REQUIRE(marked(r, key) == within(f["durations"][std::string(key) + "_ns"].get<uint64_t>()));
		size_t marks = 0;
		for (const auto &[key, text] : r["cells"].items())
			marks += text.get<std::string>().starts_with("~");
		REQUIRE(r["titles"].size() == marks);
		for (const auto &[key, title] : r["titles"].items()) {
			REQUIRE(marked(r, key.c_str()));
			REQUIRE(title == kUncertainNote);
		}
	}
}

const json &row_named(const json &rows, const std::string &name)
{
	for (const json &r : rows)
		if (r["name"] == name)
			return r;
	FAIL("no row named " << name);
	return rows;
}

std::string joined(const json &stack)
{
	std::string out;
	for (const json &name : stack)
		out += (out.empty() ? "" : ";") + name.get<std::string>();
	return out;
}

} // namespace

TEST_CASE("html: the report page shows report --format json's table, zooms on a click, searches, and lists a "
	  "function's real callers and callees",
	  "[html][clients]")
{
	std::string dir = temp_dir(), data = dir + "/demo.data", page = dir + "/demo.html";
	Output rec = run({e2e::usdtprof(), "record", "-o", data, "--", target("demo"), "200"});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	Output html = run({e2e::usdtprof(), "report", data, "--format", "html", "-o", page});
	INFO(html.err);
	REQUIRE(html.status == 0);
	const std::string route = "{anonymous}::Server::route", checksum = "{anonymous}::checksum";
	const std::string search = "render|read_disk";
	std::string shot = artifacts() + "/report.png";
	json shown = open_page({"report", page, shot, route, search, checksum});
	json report = report_json(data);
	json cpu = run_json({e2e::usdtprof(), "report", data, "--format", "json", "--time", "cpu"});

	REQUIRE(shown["title"] == "usdtprof: " + target("demo"));
	// The table: every function, its numbers and marks, in report's order; in on-CPU time as --time cpu.
	require_table(shown["table"], report["functions"]);
	require_table(shown["table_cpu"], cpu["functions"]);
	std::vector<uint64_t> by_calls = shown["by_calls"];
	REQUIRE(std::is_sorted(by_calls.rbegin(), by_calls.rend()));

	// A click on route zooms: route is the full width, its ancestors above
	// it, the breadcrumbs lead to it, and every frame below is its subtree,
	// each as wide as its share of route's total.
	double width = shown["flame_width"];
	json route_path = path(report, "{anonymous}::Server::handle;" + route);
	REQUIRE(!route_path.is_null());
	double route_total = route_path["total_ns"];
	auto frame_named = [](const json &frames, const std::string &name) {
		for (const json &f : frames)
			if (f["name"] == name && !f["anc"].get<bool>())
				return f;
		return json();
	};
	REQUIRE(frame_named(shown["before"], route)["width"].get<double>() < width * 0.99);
	json zoomed = frame_named(shown["after"], route);
	REQUIRE(std::abs(zoomed["width"].get<double>() - width) < 1);
	REQUIRE(shown["hash"].get<std::string>().find("zoom=" + std::to_string(zoomed["i"].get<int>())) != std::string::npos);
	REQUIRE(shown["crumbs"] == json({"all", "{anonymous}::Server::handle", route}));
	size_t below = 0;
	for (const json &f : shown["after"]) {
		if (f["anc"].get<bool>() || f["name"].is_null() || f["name"] == route || f["top"] <= zoomed["top"])
			continue;
		below++;
		if (f["top"].get<double>() != zoomed["top"].get<double>() + 17)
			continue; // deeper frames: checked through their parents' widths
		json child = path(report, "{anonymous}::Server::handle;" + route + ";" + f["name"].get<std::string>());
		INFO(f.dump());
		REQUIRE(!child.is_null());
		REQUIRE(std::abs(f["width"].get<double>() + 0.5 - width * child["total_ns"].get<double>() / route_total) < 1);
	}
	REQUIRE(below >= 3); // render, read_disk, checksum ...

	// The search: the matched share is the outermost matching paths' total
	// over the recorded time, every drawn frame that matches is highlighted
	// and no other.
	std::regex re(search);
	uint64_t matched = 0;
	for (const json &p : report["paths"]) {
		const json &stack = p["stack"];
		bool outermost = std::regex_search(stack.back().get<std::string>(), re);
		for (size_t k = 0; outermost && k + 1 < stack.size(); k++)
			outermost = !std::regex_search(stack[k].get<std::string>(), re);
		if (outermost)
			matched += p["total_ns"].get<uint64_t>();
	}
	REQUIRE(matched > 0);
	REQUIRE(shown["matched"]["ns"] == matched);
	REQUIRE(std::abs(shown["matched"]["share"].get<double>() - double(matched) / report["total_self_ns"].get<double>()) < 1e-9);
	std::set<std::string> highlighted;
	for (const json &f : shown["search_frames"]) {
		if (f["name"].is_null() || f["i"] == 0)
			continue;
		INFO(f.dump());
		REQUIRE(f["match"].get<bool>() == std::regex_search(f["name"].get<std::string>(), re));
		if (f["match"].get<bool>())
			highlighted.insert(f["name"]);
	}
	REQUIRE(highlighted == std::set<std::string>{"template::render", "{anonymous}::Server::read_disk"});
	// Zoom and search live in the URL's hash: opened again, the page shows them.
	REQUIRE(shown["matched_reloaded"] == shown["matched"]);
	REQUIRE(shown["crumbs_reloaded"] == shown["crumbs"]);

	// The sandwich of the recursive checksum: its callers and callees as
	// report --callers/--callees count them (recursion once), [self] last.
	json callers = run_json({e2e::usdtprof(), "report", data, "--callers", checksum, "--format", "json"});
	json callees = run_json({e2e::usdtprof(), "report", data, "--callees", checksum, "--format", "json"});
	require_edges(shown["callers"], callers["callers"]["edges"]);
	REQUIRE(shown["callers"].size() == callers["callers"]["edges"].size());
	require_edges(shown["callees"], callees["callees"]["edges"]);
	REQUIRE(shown["callees"].size() == callees["callees"]["edges"].size() + 1);
	REQUIRE(shown["callees"].back()["name"] == "[self]");
	REQUIRE(number(shown["callees"].back()["time"]) == callees["callees"]["outer_self_ns"]);
	std::set<std::string> sandwich_names;
	for (const json &f : shown["sandwich_frames"])
		if (f["name"].is_string())
			sandwich_names.insert(f["name"]);
	REQUIRE(sandwich_names == std::set<std::string>{checksum, route, "{anonymous}::Server::handle"});

	// The recording's facts.
	std::string facts = shown["facts"];
	REQUIRE(facts.find(target("demo") + " 200") != std::string::npos);
	REQUIRE(facts.find("demo (pid ") != std::string::npos);
	REQUIRE(facts.find("compensated for the probes' own cost") != std::string::npos);
	REQUIRE(shown["anomalies"].size() == report["anomalies"].size());
	REQUIRE(fs::file_size(shot) > 10000);
	REQUIRE(fs::file_size(artifacts() + "/report-sandwich.png") > 10000);
}

TEST_CASE("html: a time within the calibration's spread shows ~ in the page as in the text report, one far above "
	  "it does not, each function's spread as report --format json's",
	  "[html][clients][compensation]")
{
	std::string dir = temp_dir(), data = dir + "/spread.data", page = dir + "/spread.html";
	Output rec = run({e2e::usdtprof(), "record", "-o", data, "--", target("spread")});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	Output html = run({e2e::usdtprof(), "report", data, "--format", "html", "-o", page});
	INFO(html.err);
	REQUIRE(html.status == 0);
	json wall = report_json(data);
	json cpu = run_json({e2e::usdtprof(), "report", data, "--format", "json", "--time", "cpu"});
	REQUIRE(cpu["calibration"]["compensated"] == true);
	json shown = open_page({"marks", page, artifacts() + "/marks.png"});
	require_marks(shown["table_cpu"], cpu["functions"]);
	require_marks(shown["table"], wall["functions"]);

	// tiny does nothing between its probes: its shortest call is the probes'
	// cost give or take, within the spread. Its on-CPU self time is too when
	// the probes cost what calibration measured; beside CPU-bound processes
	// they may cost more (up to 4x seen): whether it is marked is JSON's
	// self_uncertain, which require_marks held the page to.
	const json &tiny = row_named(shown["table_cpu"], "tiny");
	INFO("tiny " << tiny.dump());
	bool tiny_cpu_self = row_named(cpu["functions"], "tiny")["self_uncertain"];
	REQUIRE(marked(tiny, "min"));
	REQUIRE(marked(row_named(shown["table"], "tiny"), "min"));
	// busy spins 2 ms a call: it has a spread, far below its times: nothing marked.
	for (const json *rows : {&shown["table_cpu"], &shown["table"]}) {
		const json &busy = row_named(*rows, "busy");
		INFO("busy " << busy.dump());
		REQUIRE(number(busy["uncertain"]) > 0);
		for (const auto &[key, text] : busy["cells"].items())
			REQUIRE(!text.get<std::string>().starts_with("~"));
	}
	// The legend under the table and the recording's facts say what ~ means.
	REQUIRE(shown["note_cpu"] == kUncertainNote);
	REQUIRE(shown["facts"].get<std::string>().find(kUncertainNote) != std::string::npos);
	// The flame graph's tooltips mark a frame's self time as its table row,
	// and give its spread; tiny's sandwich (on-CPU) marks its self time as JSON does.
	bool tiny_self = row_named(wall["functions"], "tiny")["self_uncertain"];
	for (const json &frame : shown["tips"]) {
		std::string tip = frame["tip"];
		INFO(tip);
		if (frame["name"] == "busy") {
			REQUIRE(tip.find('~') == std::string::npos);
			REQUIRE(tip.find("calibration's spread over these calls: ") != std::string::npos);
		} else if (frame["name"] == "tiny") {
			REQUIRE((tip.find("self ~") != std::string::npos) == tiny_self);
		}
	}
	REQUIRE((shown["sandwich_cpu"].get<std::string>().find("self ~") != std::string::npos) == tiny_cpu_self);
}

TEST_CASE("html: a hostile program's names reach the page as the text report escapes them, and run nothing",
	  "[html][clients][security]")
{
	std::string dir = temp_dir(), data = dir + "/h.data", page = dir + "/h.html";
	REQUIRE(run({e2e::usdtprof(), "record", "-o", data, "--", target("hostile_names")}).status == 0);
	REQUIRE(run({e2e::usdtprof(), "report", data, "--format", "html", "-o", page}).status == 0);
	json shown = open_page({"table", page, artifacts() + "/hostile.png"});
	json report = report_json(data);
	REQUIRE(shown["table"].size() == report["functions"].size());
	std::set<std::string> want, got;
	for (const json &f : report["functions"])
		want.insert(usdtprof::escape_text(f["name"].get<std::string>()));
	for (const json &r : shown["table"])
		got.insert(r["name"]);
	REQUIRE(got == want);
	REQUIRE(got.count("main\\x0d\\x0afake line\\u009b31m\\u202ereversed") == 1);
	REQUIRE(shown["scripts"] == 2); // the page's own: the data and the viewer
}

TEST_CASE("html: a 100,000-path profile opens, zooms, searches and lists its functions within seconds, folding "
	  "what is too narrow into counted blocks",
	  "[html][clients][scale]")
{
	std::string dir = temp_dir(), data = dir + "/large.data", page = dir + "/large.html";
	std::string gen = (fs::path(e2e::usdtprof()).parent_path() / "tools" / "gen_profile").string();
	Output g = run({gen, "--paths", "100000", "--depth", "40", "-o", data});
	INFO(g.err);
	REQUIRE(g.status == 0);
	Output html = run({e2e::usdtprof(), "report", data, "--format", "html", "-o", page});
	INFO(html.err);
	REQUIRE(html.status == 0);
	json shown = open_page({"large", page, artifacts() + "/large.png"});
	INFO(shown.dump());
	// What the page measured itself (performance.now() around each render),
	// and the whole of each step as the driver saw it (opening includes
	// reading and parsing the 4 MB file).
	for (const char *step : {"open", "zoom", "search", "table", "sandwich"}) {
		REQUIRE(shown[step]["render_ms"].get<double>() < 5000);
		REQUIRE(shown[step]["wall_ms"].get<double>() < 15000);
	}
	// Frames too narrow to draw are counted in "N more" blocks, never dropped silently.
	REQUIRE(shown["more"].get<int>() > 1000);
	REQUIRE(shown["before"].get<int>() < 20000);
	REQUIRE(shown["matched"]["share"].get<double>() > 0);
	REQUIRE(shown["matched"]["share"].get<double>() < 1);
	// How many functions report counts (its text: "... N more functions not shown" after one).
	Output text = run({e2e::usdtprof(), "report", data, "--limit", "1"});
	REQUIRE(text.status == 0);
	std::smatch m;
	REQUIRE(std::regex_search(text.out, m, std::regex(R"(\.\.\. ([0-9]+) more functions not shown)")));
	size_t functions = std::stoul(m[1]) + 1;
	REQUIRE(shown["rows"] == 1000);
	REQUIRE(shown["more_rows"] == std::to_string(functions - 1000) + " more functions not shown: show all");
}

TEST_CASE("html: the diff page colours the function made 2x slower as slower, widest of both, and lists the diff's "
	  "table",
	  "[html][clients][diff]")
{
	std::string dir = temp_dir(), base = dir + "/base.data", slow = dir + "/slow.data", page = dir + "/diff.html";
	REQUIRE(run({e2e::usdtprof(), "record", "-o", base, "--", target("diffable")}).status == 0);
	REQUIRE(run({e2e::usdtprof(), "record", "-o", slow, "--", target("diffable"), "slow"}).status == 0);
	Output html = run({e2e::usdtprof(), "diff", base, slow, "--time", "cpu", "--format", "html", "-o", page});
	INFO(html.err);
	REQUIRE(html.status == 0);
	json shown = open_page({"diff", page, artifacts() + "/diff.png"});
	json d = run_json({e2e::usdtprof(), "diff", base, slow, "--time", "cpu", "--format", "json"});
	INFO(shown.dump());

	// The table: the JSON's functions, in its order, charlie first and significant.
	REQUIRE(shown["table"].size() == d["functions"].size());
	for (size_t i = 0; i < d["functions"].size(); i++) {
		const json &r = shown["table"][i], &f = d["functions"][i];
		REQUIRE(r["name"] == f["name"]);
		REQUIRE(std::stoll(r["delta"].get<std::string>()) == f["delta_self_ns"]);
		REQUIRE((r["significant"] == "true") == f["significant"].get<bool>());
		REQUIRE(r["status"] == f["status"]);
	}
	REQUIRE(shown["table"][0]["name"] == "charlie");
	REQUIRE(shown["table"][0]["significant"] == "true");
	REQUIRE(shown["legend"].get<std::string>().find("more self time in NEW") != std::string::npos);

	// The graph: worker;charlie as wide as the larger of its two totals (NEW's),
	// orange (more time), and the most strongly coloured frame.
	json charlie = nullptr;
	double root_width = 0;
	for (const json &f : shown["frames"]) {
		if (f["i"] == 0)
			root_width = f["width"];
		if (f["name"] == "charlie")
			charlie = f;
	}
	REQUIRE(!charlie.is_null());
	// Each frame's width: the larger of its two totals, and at least its children's side by side.
	std::map<std::string, double> wide;
	std::vector<json> paths(d["paths"].begin(), d["paths"].end());
	std::sort(paths.begin(), paths.end(), [](const json &a, const json &b) { return a["stack"].size() > b["stack"].size(); });
	for (const json &p : paths)
		wide[joined(p["stack"])] = std::max(p["base"]["total_ns"].get<double>(), p["new"]["total_ns"].get<double>());
	for (const json &p : paths) { // children side by side, deepest first
		std::string key = joined(p["stack"]);
		if (p["stack"].size() > 1) {
			double sum = 0;
			for (const json &q : paths)
				if (q["stack"].size() == p["stack"].size() && joined(q["stack"]).rfind(key.substr(0, key.rfind(';') + 1), 0) == 0)
					sum += wide[joined(q["stack"])];
			std::string parent = key.substr(0, key.rfind(';'));
			wide[parent] = std::max(wide[parent], sum);
		}
	}
	double roots = 0;
	for (const json &p : paths)
		if (p["stack"].size() == 1)
			roots += wide[joined(p["stack"])];
	double all = std::max(roots, double(std::max(d["base"]["total_self_ns"].get<uint64_t>(), d["new"]["total_self_ns"].get<uint64_t>())));
	REQUIRE(d["paths"][0]["stack"] == json({"worker", "charlie"}));
	double want = (root_width + 0.5) * wide["worker;charlie"] / all;
	REQUIRE(std::abs(charlie["width"].get<double>() + 0.5 - want) < 2);
	auto rgb = [](const json &f) {
		int r = 0, g = 0, b = 0;
		REQUIRE(sscanf(f["color"].get<std::string>().c_str(), "rgb(%d, %d, %d)", &r, &g, &b) == 3);
		return std::array<int, 3>{r, g, b};
	};
	auto c = rgb(charlie);
	REQUIRE(c[0] > c[1]);
	REQUIRE(c[1] > c[2]); // orange, not blue
	for (const json &f : shown["frames"])
		if (f["name"].is_string() && f["name"] != "charlie" && f["i"] != 0) {
			auto o = rgb(f);
			INFO(f.dump());
			REQUIRE(o[0] + o[1] + o[2] > c[0] + c[1] + c[2]); // a smaller change: lighter
		}
	REQUIRE(fs::file_size(artifacts() + "/diff.png") > 10000);
}

TEST_CASE("html: with --per-thread the thread switch shows each thread's own function table, as report --per-thread "
	  "--format json's threads",
	  "[html][clients][per_thread]")
{
	std::string dir = temp_dir(), data = dir + "/threads.data", page = dir + "/threads.html";
	// worker-0 calls work 20 times, worker-1 40 times; main calls done once.
	Output rec = run({e2e::usdtprof(), "record", "--per-thread", "-o", data, "--", target("named_threads"), "2", "20",
			  "scaled"});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	Output html = run({e2e::usdtprof(), "report", data, "--per-thread", "--format", "html", "-o", page});
	INFO(html.err);
	REQUIRE(html.status == 0);
	json shown = open_page({"threads", page, artifacts() + "/threads.png"});
	json report = run_json({e2e::usdtprof(), "report", data, "--per-thread", "--format", "json"});
	INFO(shown.dump());
	// The switch lists the threads as the JSON does, largest first; each
	// chosen one shows its own table and a flame graph rooted at its frame.
	REQUIRE(shown["threads"].size() == 3);
	REQUIRE(report["threads"].size() == 3);
	std::map<std::string, uint64_t> work_calls;
	for (size_t i = 0; i < 3; i++) {
		const json &s = shown["threads"][i], &t = report["threads"][i];
		std::string frame = t["name"].get<std::string>() + " (tid " + std::to_string(t["tid"].get<int>()) + ")";
		REQUIRE(s["tid"] == std::to_string(t["tid"].get<int>()));
		REQUIRE(s["label"] == frame);
		REQUIRE(s["root"] == frame);
		REQUIRE(s["crumbs"] == json({frame}));
		REQUIRE(s["hash"].get<std::string>().find("thread=" + s["tid"].get<std::string>()) != std::string::npos);
		require_table(s["table"], t["functions"]);
		for (const json &r : s["table"])
			if (r["name"] == "work")
				work_calls[t["name"]] = number(r["calls"]);
	}
	REQUIRE(work_calls == std::map<std::string, uint64_t>{{"worker-0", 20}, {"worker-1", 40}});
	REQUIRE(fs::file_size(artifacts() + "/threads.png") > 10000);
}

TEST_CASE("html: the process switch shows each process's own function table, as report --per-process's tree",
	  "[html][clients][per_process]")
{
	std::string dir = temp_dir(), data = dir + "/procs.data", page = dir + "/procs.html";
	// diffable: six worker processes, each worker -> alpha..echo 30 times.
	Output rec = run({e2e::usdtprof(), "record", "-o", data, "--", target("diffable")});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	Output html = run({e2e::usdtprof(), "report", data, "--format", "html", "-o", page});
	INFO(html.err);
	REQUIRE(html.status == 0);
	json shown = open_page({"processes", page, artifacts() + "/processes.png"});
	json tree = run_json({e2e::usdtprof(), "report", data, "--per-process", "--tree", "--min-percent", "0", "--format",
			      "json"})["tree"];
	json report = report_json(data);
	INFO(shown.dump());
	// Per process: each function's calls and self time summed over its subtree.
	std::map<std::string, std::map<std::string, std::pair<uint64_t, uint64_t>>> want;
	std::function<void(const std::string &, const json &)> add = [&](const std::string &root, const json &n) {
		auto &f = want[root][n["name"].get<std::string>()];
		f.first += n["calls"].get<uint64_t>();
		f.second += n["self_ns"].get<uint64_t>();
		for (const json &c : n["children"])
			add(root, c);
	};
	for (const json &root : tree)
		for (const json &c : root["children"])
			add(root["name"], c);
	REQUIRE(want.size() == 6);
	REQUIRE(shown["processes"].size() == 7); // "all processes" and the six
	REQUIRE(shown["processes"][0]["pid"] == "all");
	require_table(shown["processes"][0]["table"], report["functions"]);
	for (size_t i = 1; i < shown["processes"].size(); i++) {
		const json &s = shown["processes"][i];
		std::string label = s["label"];
		INFO(label);
		REQUIRE(label == "diffable (pid " + s["pid"].get<std::string>() + ")");
		REQUIRE(want.count(label) == 1);
		REQUIRE(s["crumbs"] == json({label}));
		REQUIRE(s["hash"].get<std::string>().find("proc=" + s["pid"].get<std::string>()) != std::string::npos);
		REQUIRE(s["table"].size() == want[label].size());
		for (const json &r : s["table"]) {
			auto it = want[label].find(r["name"].get<std::string>());
			REQUIRE(it != want[label].end());
			REQUIRE(number(r["calls"]) == it->second.first);
			REQUIRE(number(r["self"]) == it->second.second);
		}
		REQUIRE(number(s["table"][0]["calls"]) > 0);
	}
	REQUIRE(fs::file_size(artifacts() + "/processes.png") > 10000);
}
