#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>

#include "target/naming.h"
#include "../render_as.h"
#include "profile/path_filter.h"
#include "report/report.h"
#include "../task_profile.h"

using namespace usdtprof;
using nlohmann::json;

namespace {

struct Node {
	uint32_t parent;
	uint32_t function;
	int32_t pid;
	uint64_t calls, self_ns, open = 0;
};

// A consistent profile: each total is its self plus its children's totals.
Profile make_profile(std::vector<std::string> functions, const std::vector<Node> &nodes)
{
	Profile p;
	p.functions = std::move(functions);
	for (const Node &n : nodes)
		p.nodes.push_back({n.parent, n.function, n.pid, n.calls, n.open, n.self_ns, n.self_ns});
	for (size_t i = p.nodes.size(); i-- > 0;)
		if (p.nodes[i].parent != kNoParent)
			p.nodes[p.nodes[i].parent].total_ns += p.nodes[i].total_ns;
	return p;
}

// main -> work -> parse, main -> compute -> tiny, in two processes whose
// function ids differ.
Profile sample_profile()
{
	Profile p = make_profile(
		{"main", "work", "util::parse", "compute", "main", "work", "tiny"},
		{
			{kNoParent, 0, 100, 1, 1'000'000, 1},
			{0, 1, 100, 10, 5'000'000},
			{1, 2, 100, 20, 3'000'000},
			{0, 3, 100, 5, 1'000'000},
			{3, 6, 100, 1, 999},
			{kNoParent, 4, 200, 1, 500'000},
			{5, 5, 200, 2, 2'000'000, 1},
		});
	p.duration_ns = 20'000'000;
	p.processes = {{100, "app", {"./app"}}, {200, "app", {"./app"}}};
	return p;
}

size_t find_child(const CallTree &t, uint32_t parent, const std::string &name)
{
	std::span<const uint32_t> ids = parent == kNoParent ? std::span<const uint32_t>(t.roots) : t.children(parent);
	for (uint32_t i : ids)
		if (t.name(i) == name)
			return i;
	FAIL("no child " << name);
	return 0;
}

const FunctionSummary &summary(const std::vector<FunctionSummary> &fs, const std::string &name)
{
	for (const FunctionSummary &f : fs)
		if (f.name == name)
			return f;
	FAIL("no function " << name);
	return fs.front();
}

std::vector<std::string> function_order(const Profile &p, SortKey key, size_t limit = 0)
{
	ReportOptions o;
	o.sort = key;
	o.limit = limit;
	std::vector<std::string> names;
	json report = json::parse(render_as("json", p, o));
	for (const json &f : report["functions"])
		names.push_back(f["name"]);
	return names;
}

// A JSON report path's stack, from its parents (report JSON version 2:
// each path names its parent by id, the index of an earlier path).
json path_stack(const json &report, size_t id)
{
	json stack = json::array();
	for (json at = id; !at.is_null(); at = report["paths"][at.get<size_t>()]["parent"]) {
		const json &path = report["paths"][at.get<size_t>()];
		REQUIRE(path["id"] == at);
		stack.insert(stack.begin(), path["name"]);
	}
	return stack;
}

} // namespace

TEST_CASE("report: tree merges paths by name across processes", "[report]")
{
	CallTree t = build_call_tree(sample_profile());
	REQUIRE(t.roots.size() == 1);
	REQUIRE(t.nodes.size() == 5);
	uint32_t main = t.roots[0];
	const TreeNode &m = t.nodes[main];
	CHECK(t.names[m.name] == "main");
	CHECK(m.calls == 2);
	CHECK(m.open == 1);
	CHECK(m.self_ns == 1'500'000);
	CHECK(m.total_ns == 12'500'999);
	const TreeNode &work = t.nodes[find_child(t, main, "work")];
	CHECK(work.calls == 12);
	CHECK(work.open == 1);
	CHECK(work.self_ns == 7'000'000);
	CHECK(work.total_ns == 10'000'000);
	CHECK(t.total_self_ns == 12'500'999);
	CHECK(stack_of(t, find_child(t, find_child(t, main, "work"), "util::parse")) ==
		std::vector<std::string>{"main", "work", "util::parse"});
	for (uint32_t i = 0; i < t.nodes.size(); i++) {
		const TreeNode &n = t.nodes[i];
		uint64_t children = 0;
		for (uint32_t c : t.children(i)) {
			CHECK(c > i); // parents first
			CHECK(t.nodes[c].parent == i);
			children += t.nodes[c].total_ns;
		}
		CHECK(n.total_ns == n.self_ns + children);
	}
}

TEST_CASE("report: recursion is never double counted", "[report]")
{
	SECTION("a -> a -> a") {
		CallTree t = build_call_tree(make_profile({"a"}, {{kNoParent, 0, 1, 1, 10}, {0, 0, 1, 1, 10}, {1, 0, 1, 1, 10}}));
		std::vector<FunctionSummary> fs = summarize_functions(t);
		REQUIRE(fs.size() == 1);
		CHECK(fs[0].name == "a");
		CHECK(fs[0].calls == 3);
		CHECK(fs[0].self_ns == 30);
		CHECK(fs[0].total_ns == 30);
		CHECK(fs[0].recursive);
	}
	SECTION("a -> b -> a") {
		CallTree t = build_call_tree(make_profile({"a", "b"},
			{{kNoParent, 0, 1, 1, 10}, {0, 1, 1, 2, 20}, {1, 0, 1, 3, 40}, {kNoParent, 1, 1, 1, 5}}));
		std::vector<FunctionSummary> fs = summarize_functions(t);
		const FunctionSummary &a = summary(fs, "a"), &b = summary(fs, "b");
		CHECK(a.calls == 4);
		CHECK(a.self_ns == 50);
		CHECK(a.total_ns == 70);
		CHECK(a.recursive);
		CHECK(b.calls == 3);
		CHECK(b.total_ns == 65);
		CHECK_FALSE(b.recursive);
	}
}

TEST_CASE("report: nested activations are those under an ancestor of the same name only", "[report]")
{
	// main -> a -> x, main -> b -> x, main -> b -> a -> b; "b" and "b2" are
	// two functions of one name ("b"), so the last b is nested.
	CallTree t = build_call_tree(make_profile({"main", "a", "b", "x", "b"},
		{{kNoParent, 0, 1, 1, 100}, {0, 1, 1, 1, 20}, {1, 3, 1, 1, 5}, {0, 2, 1, 1, 30}, {3, 3, 1, 1, 7},
		 {3, 1, 1, 1, 9}, {5, 4, 1, 1, 4}}));
	REQUIRE(t.nodes.size() == 7);
	std::vector<bool> nested = nested_activations(t);
	std::vector<std::string> nested_stacks;
	for (uint32_t i = 0; i < t.nodes.size(); i++)
		if (nested[i]) {
			std::vector<std::string> s = stack_of(t, i);
			nested_stacks.push_back(s[0] + ";" + s[1] + ";" + s[2] + ";" + s[3]);
		}
	CHECK(nested_stacks == std::vector<std::string>{"main;b;a;b"});
	const FunctionSummary &b = summary(summarize_functions(t), "b");
	CHECK(b.recursive);
	CHECK(b.calls == 2);
	CHECK(b.total_ns == 50); // the outer one's subtree (30 + 7 + 9 + 4): the inner 4 not twice
	CHECK_FALSE(summary(summarize_functions(t), "x").recursive);
	// A chain deeper than any call stack would allow recursing over.
	std::vector<Node> chain;
	for (uint32_t i = 0; i < 200'000; i++)
		chain.push_back({i ? i - 1 : kNoParent, i % 2, 1, 1, 1});
	std::vector<FunctionSummary> fs = summarize_functions(build_call_tree(make_profile({"p", "q"}, chain)));
	REQUIRE(fs.size() == 2);
	CHECK(fs[0].recursive);
	CHECK(fs[0].total_ns == 200'000);
	CHECK(fs[1].total_ns == 199'999);
}

TEST_CASE("report: sort keys", "[report]")
{
	CHECK(*parse_sort_key("avg") == SortKey::Avg);
	CHECK(*parse_sort_key("name") == SortKey::Name);
	Result<SortKey> bad = parse_sort_key("Self");
	REQUIRE_FALSE(bad.ok());
	CHECK(bad.error().message == "unknown sort key 'Self' (expected self, total, calls, avg or name)");

	Profile p = sample_profile();
	CHECK(function_order(p, SortKey::Self) == std::vector<std::string>{"work", "util::parse", "main", "compute", "tiny"});
	CHECK(function_order(p, SortKey::Total) == std::vector<std::string>{"main", "work", "util::parse", "compute", "tiny"});
	CHECK(function_order(p, SortKey::Calls) == std::vector<std::string>{"util::parse", "work", "compute", "main", "tiny"});
	CHECK(function_order(p, SortKey::Avg) == std::vector<std::string>{"main", "work", "compute", "util::parse", "tiny"});
	CHECK(function_order(p, SortKey::Name) == std::vector<std::string>{"compute", "main", "tiny", "util::parse", "work"});
	CHECK(function_order(p, SortKey::Self, 2) == std::vector<std::string>{"work", "util::parse"});
}

TEST_CASE("report: flat text", "[report]")
{
	Profile p = sample_profile();
	ReportOptions o;
	o.limit = 3;
	std::string text = render_as("text", p, o);
	INFO(text);
	CHECK(text.find("12.5 ms recorded in 40 calls") != std::string::npos);
	CHECK(text.find("self%") != std::string::npos);
	size_t work = text.find("  work"), parse = text.find("  util::parse"), main = text.find("  main");
	CHECK(work < parse);
	CHECK(parse < main);
	CHECK(text.find("compute") == std::string::npos);
	CHECK(text.find("... 2 more functions not shown") != std::string::npos);
	CHECK(text.find("7.00 ms  56.0%") != std::string::npos);
	CHECK(text.find("work (1 open)") != std::string::npos);
	CHECK(text.find("\nanomalies: none\n") != std::string::npos);

	p.anomalies = {{"exit_mismatch", 3}, {"agg_full", 0}, {"future_counter", 1}};
	text = render_as("text", p, o);
	CHECK(text.find("anomalies:\n  exit_mismatch: 3  (exit did not match the top frame; frames were popped)\n"
		"  future_counter: 1\n") != std::string::npos);
	CHECK(text.find("agg_full") == std::string::npos);

	// Paths lost to [other]: the line says how many calls came while the
	// table was still growing, where a larger --max-paths would not help.
	Profile lost = make_profile({"a", "[other]"}, {{kNoParent, 0, 1, 1, 60}, {0, 1, 1, 4, 40}});
	lost.anomalies = {{"agg_full", 4}};
	text = render_as("text", lost, {});
	INFO(text);
	CHECK(text.find("lost paths: 40.0% of the recorded time") != std::string::npos);
	CHECK(text.find("still growing") == std::string::npos);
	lost.anomalies = {{"agg_full", 4}, {"agg_late", 3}};
	text = render_as("text", lost, {});
	CHECK(text.find("kept its own (3 of its 4 calls came while the table was still growing, not full); record "
			"with a larger --max-paths") != std::string::npos);

	CHECK(render_as("text", make_profile({"a"}, {{kNoParent, 0, 1, 1, 10}, {0, 0, 1, 1, 10}}), {}).find("a [recursive]") !=
		std::string::npos);
}

TEST_CASE("report: tree text", "[report]")
{
	Profile p = sample_profile();
	ReportOptions o;
	o.view = "tree";
	o.min_percent = 10;
	std::string text = render_as("text", p, o);
	INFO(text);
	CHECK(text.find("below 10% of the recorded time") != std::string::npos);
	CHECK(text.find("  main (1 open)\n") != std::string::npos);
	CHECK(text.find("    work (1 open)\n") != std::string::npos);
	CHECK(text.find("      util::parse\n") != std::string::npos);
	CHECK(text.find("    ... 1 more below 10%\n") != std::string::npos); // compute: 8%
	CHECK(text.find("compute") == std::string::npos);
	CHECK(text.find("anomalies: none") != std::string::npos);

	o.min_percent = 0;
	text = render_as("text", p, o);
	CHECK(text.find("      tiny\n") != std::string::npos);
	CHECK(text.find("more below") == std::string::npos);
	// Children by total, descending.
	CHECK(text.find("    work") < text.find("    compute"));
}

TEST_CASE("report: json", "[report]")
{
	Profile p = sample_profile();
	p.anomalies = {{"depth_overflow", 4}, {"future_counter", 2}};
	ReportOptions o;
	o.limit = 4;
	json j = json::parse(render_as("json", p, o));
	REQUIRE(j["functions"].size() == 4);
	for (const json &f : j["functions"]) {
		CHECK(f["name"].is_string());
		for (const char *k : {"calls", "open", "self_ns", "total_ns"})
			CHECK(f[k].is_number_unsigned());
		CHECK(f["recursive"].is_boolean());
	}
	CHECK(j["functions"][0]["name"] == "work");
	CHECK(j["functions"][0]["self_ns"] == 7'000'000);
	CHECK(j["version"] == 2);
	REQUIRE(j["paths"].size() == 5);
	CHECK(path_stack(j, 0) == json{"main"});
	CHECK(path_stack(j, 2) == json{"main", "work", "util::parse"});
	// Each path: its id (its index), its parent's id (an earlier path) or null, its own name only.
	CHECK(j["paths"][0]["parent"].is_null());
	CHECK(j["paths"][2]["parent"] == 1);
	CHECK(j["paths"][2]["name"] == "util::parse");
	for (size_t i = 0; i < j["paths"].size(); i++) {
		const json &path = j["paths"][i];
		CHECK(path["id"] == i);
		CHECK((path["parent"].is_null() || path["parent"].get<size_t>() < i));
		CHECK_FALSE(path.contains("stack"));
		for (const char *k : {"calls", "open", "self_ns", "total_ns"})
			CHECK(path[k].is_number_unsigned());
	}
	for (const char *k : {"exit_mismatch", "exit_no_frame", "depth_overflow", "agg_full", "dropped_ns", "no_storage",
		     "lost_events", "window_exits", "agg_late"})
		CHECK(j["anomalies"][k].is_number_unsigned());
	CHECK(j["anomalies"]["depth_overflow"] == 4);
	CHECK(j["anomalies"]["future_counter"] == 2);
	CHECK(j["anomalies"].size() == 10);
	CHECK(j["total_self_ns"] == 12'500'999);
	CHECK(j["duration_ns"] == 20'000'000);
	CHECK(j["processes"] == json::parse(R"([{"pid":100,"comm":"app"},{"pid":200,"comm":"app"}])"));
	CHECK(j["sampled_fraction"] == 1.0);
}

TEST_CASE("report: json is written path by path with exactly the bytes of the document's dump", "[report]")
{
	Profile p = sample_profile();
	p.functions[1] = "w\"o\\rk\x01\xff"; // quoted, escaped and invalid UTF-8
	p.functions[2] = std::string(70'000, 'n'); // longer than the writer's chunks
	for (int variant = 0; variant < 3; variant++) {
		bool calibrated = variant > 0;
		if (calibrated)
			p.calibration = Calibration{{{"native", 120.0, 80.0, 3.0, 2.0, 24, 0}}, std::vector<int32_t>(5, 0)};
		if (variant == 2) {
			// Durations, written by hand per path: one bucket, several, none.
			p.distributions = true;
			p.dists.resize(p.nodes.size());
			p.dists[0] = {1000, 1000, {{9, 1}}};
			p.dists[1] = {3, 2'000'000'000'000, {{1, 2}, {12, 7}, {39, 1}}};
		}
		for (const char *view : {"flat", "tree"}) {
			ReportOptions o;
			o.view = view;
			std::string text = render_as("json", p, o);
			auto j = nlohmann::ordered_json::parse(text); // keys in the report's order
			CHECK(text == j.dump(2) + "\n");
			CHECK(j["paths"].size() == 6); // the renamed function no longer merges with its namesake
			CHECK(j["paths"][0].contains("raw_self_ns") == calibrated);
			CHECK(j["paths"][0].contains("durations") == (variant == 2));
		}
	}
	CHECK(render_as("json", Profile{}, {}) == nlohmann::ordered_json::parse(render_as("json", Profile{}, {})).dump(2) + "\n");
}

TEST_CASE("report: a sampled monitor interval says so, with its counts unscaled", "[report]")
{
	Profile p = sample_profile();
	ReportOptions o;
	CHECK(render_as("text", p, o).find("sampled") == std::string::npos);
	p.sampled_fraction = 0.25;
	for (bool tree : {false, true}) {
		o.view = tree ? "tree" : "flat";
		std::string text = render_as("text", p, o);
		INFO(text);
		// The line after the heading.
		CHECK(text.substr(text.find('\n') + 1).rfind(
			      "sampled: probes attached for 25.0% of the recording; counts and times are not scaled\n\n", 0) == 0);
		CHECK(text.find("12.5 ms recorded in 40 calls") != std::string::npos);
	}
	json j = json::parse(render_as("json", p, o));
	CHECK(j["sampled_fraction"] == 0.25);
	CHECK(j["total_self_ns"] == 12'500'999);
}

TEST_CASE("report: folded stacks", "[report]")
{
	// Weights in nanoseconds, nothing rounded away (tiny's 999 ns included).
	CHECK(render_folded(build_call_tree(sample_profile())) ==
		"main 1500000\n"
		"main;work 7000000\n"
		"main;work;util::parse 3000000\n"
		"main;compute 1000000\n"
		"main;compute;tiny 999\n");
	// Names are escaped; a node without self time has no line.
	Profile p = make_profile({"a;b", "50%", "x y\tz"}, {{kNoParent, 0, 1, 1, 2999}, {0, 1, 1, 1, 0}, {1, 2, 1, 1, 999}});
	CHECK(render_folded(build_call_tree(p)) == "a%3Bb 2999\na%3Bb;50%25;x y%09z 999\n");
	CHECK(render_folded(CallTree{}) == "");
	// Depth first whatever the order the paths were recorded in: a frame's lines are contiguous.
	Profile bfs = make_profile({"a", "x", "b", "y"}, {{kNoParent, 0, 1, 1, 10}, {kNoParent, 1, 1, 1, 20}, {0, 2, 1, 1, 30},
		{1, 3, 1, 1, 40}, {0, 3, 1, 1, 50}});
	CHECK(render_folded(build_call_tree(bfs)) == "a 10\na;b 30\na;y 50\nx 20\nx;y 40\n");

	CHECK(escape_folded_frame("plain name<int>::f") == "plain name<int>::f");
	CHECK(escape_folded_frame("a;b%c") == "a%3Bb%25c");
	CHECK(escape_folded_frame(std::string("t\tn\n\x7f\x1f", 6)) == "t%09n%0A%7F%1F");
	CHECK(escape_folded_frame("caf\xc3\xa9") == "caf\xc3\xa9");
	// C1 controls and bidi overrides in UTF-8, and invalid UTF-8: every byte.
	CHECK(escape_folded_frame("a\xc2\x9b" "31m\xe2\x80\xae" "b\xff") == "a%C2%9B31m%E2%80%AEb%FF");
}

TEST_CASE("report: simplify_function_name", "[report]")
{
	const std::pair<const char *, const char *> cases[] = {
		{"int ns::Cls<T>::run(int) const", "ns::Cls<T>::run"},
		{"void foo()", "foo"},
		{"static void A::b(std::vector<int>&)", "A::b"},
		{"virtual int Base::get() const &&", "Base::get"},
		{"std::map<int, int> f(int)", "f"},
		{"const std::map<int, std::pair<int, int> >& ns::g(std::function<void(int)>)", "ns::g"},
		{"unsigned int count(const char*) noexcept", "count"},
		{"void X::operator()(int)", "X::operator()"},
		{"bool ns::A<int>::operator<(const ns::A<int>&) const", "ns::A<int>::operator<"},
		{"A& A::operator<<=(int)", "A::operator<<="},
		{"void* operator new(std::size_t)", "operator new"},
		{"A::operator bool() const", "A::operator bool"},
		{"A::A(int)", "A::A"},
		{"A::~A()", "A::~A"},
		{"T max(T, T) [with T = int]", "max"},
		{"void S<T>::f() const [with T = std::vector<int>; U = int[3]]", "S<T>::f"},
		{"void f() [T = int]", "f"},
		{"void (anonymous namespace)::helper()", "(anonymous namespace)::helper"},
		{"void {anonymous}::helper()", "{anonymous}::helper"},
		{"void main()::Local::run()", "main()::Local::run"},
		{"main()::<lambda(int)>", "main()::<lambda(int)>"},
		{"main", "main"},
		{"parse", "parse"},
		{"foo.bar", "foo.bar"},
		{"", ""},
		{"void (* signal(int, void (*)(int)))(int)", "void (* signal(int, void (*)(int)))(int)"},
		{"broken(int))", "broken(int))"},
		{"oops ()", "oops"},
	};
	for (const auto &[in, out] : cases) {
		INFO(in);
		CHECK(simplify_function_name(in) == out);
	}
}

TEST_CASE("report: self time splits into on- and off-CPU parts; --time selects one")
{
	Profile p = make_profile({"main", "wait"}, {{kNoParent, 0, 1, 1, 1000}, {0, 1, 1, 2, 3000}});
	p.nodes[0].self_offcpu_ns = 200;
	p.nodes[1].self_offcpu_ns = 2000;
	ReportOptions json_options;
	json j = json::parse(render_as("json", p, json_options));
	for (const auto &entries : {j["functions"], j["paths"]})
		for (const auto &e : entries)
			CHECK(e["self_oncpu_ns"].get<uint64_t>() + e["self_offcpu_ns"].get<uint64_t>() == e["self_ns"]);
	CHECK(j["functions"][0]["name"] == "wait");
	CHECK(j["functions"][0]["self_offcpu_ns"] == 2000);

	CallTree cpu = with_self_time(build_call_tree(p), TimeMode::Cpu);
	CallTree off = with_self_time(build_call_tree(p), TimeMode::Offcpu);
	CHECK(cpu.nodes[1].self_ns == 1000);
	CHECK(off.nodes[1].self_ns == 2000);
	CHECK(cpu.total_self_ns == 800 + 1000);
	CHECK(off.total_self_ns == 200 + 2000);
	// Inclusive time is in the same domain: the sum of the subtree's parts.
	CHECK(cpu.nodes[0].total_ns == 800 + 1000);
	CHECK(off.nodes[0].total_ns == 200 + 2000);
	CHECK(cpu.time == TimeMode::Cpu);
	CHECK(render_folded(with_self_time(build_call_tree(p), TimeMode::Offcpu)) == "main 200\nmain;wait 2000\n");
	CHECK(parse_time_mode("cpu").value() == TimeMode::Cpu);
	CHECK_FALSE(parse_time_mode("gpu").ok());
}

namespace {

// Every total is its self plus its children's totals, no child exceeds its
// parent, and total_self_ns is the sum of the selves.
void check_tree_sums(const CallTree &t)
{
	uint64_t selves = 0;
	for (uint32_t i = 0; i < t.nodes.size(); i++) {
		uint64_t children = 0;
		for (uint32_t c : t.children(i)) {
			CHECK(t.nodes[c].total_ns <= t.nodes[i].total_ns);
			children += t.nodes[c].total_ns;
		}
		CHECK(t.nodes[i].total_ns == t.nodes[i].self_ns + children);
		selves += t.nodes[i].self_ns;
	}
	CHECK(t.total_self_ns == selves);
}

} // namespace

TEST_CASE("report: a task's work counts in its creator's inclusive time, not its worker's", "[report][tasks]")
{
	Profile p = task_profile();
	CallTree t = build_call_tree(p);
	check_tree_sums(t);
	uint32_t main = find_child(t, kNoParent, "main"), spawn = find_child(t, main, "spawn");
	uint32_t task = find_child(t, spawn, "[task]"), body = find_child(t, kNoParent, "thread_body");
	CHECK(t.nodes[task].total_ns == 761'000);
	CHECK(t.nodes[spawn].total_ns == 110'000 + 761'000);
	CHECK(t.nodes[main].total_ns == 40'000 + 871'000);
	CHECK(t.nodes[body].total_ns == 50'000); // not the 761 us it spent running spawn's task
	CHECK(t.total_self_ns == 961'000);

	const auto fs = summarize_functions(t);
	CHECK(summary(fs, "spawn").total_ns == 871'000);
	CHECK(summary(fs, "thread_body").total_ns == 50'000);

	// Text, tree and JSON say the same.
	ReportOptions o;
	o.view = "tree";
	o.min_percent = 0;
	std::string tree = render_as("text", p, o);
	INFO(tree);
	CHECK(tree.find("871 us   90.6%     110 us            1    spawn\n") != std::string::npos);
	CHECK(tree.find("761 us   79.2%    1.00 us            1      [task]\n") != std::string::npos);
	CHECK(tree.find("50.0 us    5.2%    50.0 us            1  thread_body\n") != std::string::npos);
	o.view = "flat";
	std::string flat = render_as("text", p, o);
	INFO(flat);
	CHECK(flat.find("110 us  11.4%     871 us     871 us  spawn\n") != std::string::npos);
	json j = json::parse(render_as("json", p, o));
	size_t spawns = 0;
	for (size_t i = 0; i < j["paths"].size(); i++)
		if (path_stack(j, i) == json{"main", "spawn"}) {
			CHECK(j["paths"][i]["total_ns"] == 871'000);
			spawns++;
		}
	CHECK(spawns == 1);
	// Folded weights add up to the same totals.
	uint64_t under_spawn = 0;
	std::istringstream folded(render_folded(t));
	for (std::string line; std::getline(folded, line);)
		if (line.rfind("main;spawn", 0) == 0)
			under_spawn += std::stoull(line.substr(line.rfind(' ') + 1));
	CHECK(under_spawn == 871'000);
}

TEST_CASE("report: --time puts self, total, average and percentages in one domain", "[report][time]")
{
	Profile p = task_profile();
	for (TimeMode mode : {TimeMode::Wall, TimeMode::Cpu, TimeMode::Offcpu}) {
		INFO(time_mode_name(mode));
		CallTree t = with_self_time(build_call_tree(p), mode);
		check_tree_sums(t);
		for (const TreeNode &n : t.nodes)
			CHECK(n.self_ns == (mode == TimeMode::Wall ? n.self_oncpu_ns + n.self_offcpu_ns
							  : mode == TimeMode::Cpu ? n.self_oncpu_ns : n.self_offcpu_ns));
		for (const FunctionSummary &f : summarize_functions(t))
			CHECK(f.total_ns <= t.total_self_ns);

		// No total% above 100 in the tree; the JSON is in the same domain.
		ReportOptions o;
		o.view = "tree";
		o.min_percent = 0;
		o.time = mode;
		std::string text = render_as("text", p, o);
		INFO(text);
		std::istringstream lines(text);
		for (std::string line; std::getline(lines, line);) {
			size_t pc = line.find('%');
			if (pc != std::string::npos && pc > 8 && pc < 20 && isdigit(static_cast<unsigned char>(line[pc - 1])))
				CHECK(std::stod(line.substr(pc - 6, 6)) <= 100.0);
		}
		json j = json::parse(render_as("json", p, o));
		CHECK(j["time"] == time_mode_name(mode));
		CHECK(j["total_self_ns"] == t.total_self_ns);
		uint64_t selves = 0;
		for (const json &path : j["paths"]) {
			selves += path["self_ns"].get<uint64_t>();
			// The parts always describe the wall-clock self time; self_ns is the chosen one.
			uint64_t on = path["self_oncpu_ns"], off = path["self_offcpu_ns"];
			CHECK(path["self_ns"] == (mode == TimeMode::Wall ? on + off : mode == TimeMode::Cpu ? on : off));
		}
		CHECK(selves == t.total_self_ns);
	}
	CallTree cpu = with_self_time(build_call_tree(p), TimeMode::Cpu);
	uint32_t spawn = find_child(cpu, find_child(cpu, kNoParent, "main"), "spawn");
	CHECK(cpu.nodes[spawn].total_ns == 10'000 + 1'000 + 700'000);
	ReportOptions o;
	o.time = TimeMode::Cpu;
	std::string flat = render_as("text", p, o);
	INFO(flat);
	CHECK(flat.find("usdtprof report (on-CPU time): 771 us recorded") == 0);
	// spawn: 10 us on-CPU self (1.3%), 711 us on-CPU total and average.
	CHECK(flat.find("10.0 us   1.3%     711 us     711 us  spawn\n") != std::string::npos);
}

TEST_CASE("report: json --tree nests the tree view, pruned like the text", "[report]")
{
	ReportOptions o;
	CHECK_FALSE(json::parse(render_as("json", task_profile(), o)).contains("tree"));
	o.view = "tree";
	o.min_percent = 5.3;
	json j = json::parse(render_as("json", task_profile(), o));
	REQUIRE(j["tree"].size() == 1); // thread_body (5.2%) is pruned
	const json &main = j["tree"][0];
	CHECK(main["name"] == "main");
	CHECK(main["total_ns"] == 911'000);
	CHECK(main["omitted_children"] == 0);
	const json &task = main["children"][0]["children"][0];
	CHECK(task["name"] == "[task]");
	CHECK(task["total_ns"] == 761'000);
	CHECK(task["children"][0]["name"] == "work");
	CHECK(task["children"][0]["children"] == json::array());
	o.min_percent = 0;
	CHECK(json::parse(render_as("json", task_profile(), o))["tree"].size() == 2);
}

TEST_CASE("report: names from the target are escaped in flat, tree and per-process text", "[report][escape]")
{
	Profile p = make_profile({"main", "evil\x1b]0;pwned\x07\r\nfake\xff"}, {{kNoParent, 0, 7, 1, 1000}, {0, 1, 7, 2, 500}});
	p.processes = {{7, "p\x1b[31m\nfake", {}}};
	p.anomalies = {{"odd\x1b[2J", 1}};
	for (bool tree : {false, true})
		for (bool per_process : {false, true}) {
			ReportOptions o;
			o.view = tree ? "tree" : "flat";
			std::string text = render_as("text", per_process ? split_by_process(p) : p, o);
			INFO(text);
			for (unsigned char c : text)
				REQUIRE(((c >= 0x20 || c == '\n') && c != 0x7f && c < 0x80));
			CHECK(text.find("evil\\x1b]0;pwned\\x07\\x0d\\x0afake\\xff") != std::string::npos);
			CHECK(text.find("odd\\x1b[2J: 1") != std::string::npos);
			CHECK(text.find("\nfake") == std::string::npos);
			if (per_process && tree)
				CHECK(text.find("p\\x1b[31m\\x0afake (pid 7)") != std::string::npos);
		}
}

namespace {

// pid 7: thread "worker (tid 11)" runs main -> work; thread "x (tid 9) (tid 12)"
// (it named itself "x (tid 9)") runs work; under its main, a nested thread's
// frame "(tid 13)" (unnamed, as a parallel worker under its leader) runs parse.
Profile threads_profile()
{
	Profile p = make_profile({"worker (tid 11)", "main", "work", "x (tid 9) (tid 12)", "(tid 13)", "parse"},
				 {
					 {kNoParent, 0, 7, 0, 0},
					 {0, 1, 7, 1, 100},
					 {1, 2, 7, 4, 400},
					 {kNoParent, 3, 7, 0, 0},
					 {3, 2, 7, 2, 1000},
					 {4, 4, 7, 0, 0},
					 {5, 5, 7, 3, 30},
				 });
	p.per_thread = true;
	p.thread_nodes = {0, 3, 5};
	p.processes = {{7, "app", {"./app"}}};
	p.duration_ns = 5000;
	return p;
}

} // namespace

TEST_CASE("split_by_thread: each thread's paths apart, its frame left out, a nested thread a thread of its own",
	  "[report][per_thread]")
{
	std::vector<ThreadProfile> ts = split_by_thread(threads_profile());
	REQUIRE(ts.size() == 3);
	CHECK((ts[0].name == "worker" && ts[0].tid == 11 && ts[0].pid == 7));
	CHECK((ts[1].name == "x (tid 9)" && ts[1].tid == 12)); // the last "(tid N)" is ours
	CHECK((ts[2].name.empty() && ts[2].tid == 13));
	REQUIRE(ts[0].profile.nodes.size() == 2);
	CHECK(ts[0].profile.nodes[0].parent == kNoParent);
	CHECK((ts[0].profile.nodes[1].parent == 0 && ts[0].profile.nodes[1].calls == 4));
	REQUIRE(ts[1].profile.nodes.size() == 1); // work; the nested thread's frame is not its path
	CHECK(ts[1].profile.nodes[0].self_ns == 1000);
	REQUIRE(ts[2].profile.nodes.size() == 1);
	CHECK((ts[2].profile.nodes[0].parent == kNoParent && ts[2].profile.nodes[0].calls == 3));
	for (const ThreadProfile &t : ts)
		CHECK((t.profile.thread_nodes.empty() && !t.profile.per_thread && t.profile.processes.size() == 1));
	CHECK(split_by_thread(make_profile({"main"}, {{kNoParent, 0, 7, 1, 5}})).empty());
}

TEST_CASE("split_by_process and --ignore keep a per-thread profile's thread frames marked", "[report][per_thread]")
{
	Profile split = split_by_process(threads_profile());
	REQUIRE(split.thread_nodes.size() == 3);
	for (size_t i = 0; i < 3; i++)
		CHECK(split.functions[split.nodes[split.thread_nodes[i]].function] ==
		      threads_profile().functions[threads_profile().nodes[threads_profile().thread_nodes[i]].function]);
	auto filtered = filter_paths(threads_profile(), "", "^worker");
	REQUIRE(filtered);
	REQUIRE(filtered->thread_nodes.size() == 2);
	CHECK(filtered->functions[filtered->nodes[filtered->thread_nodes[0]].function] == "x (tid 9) (tid 12)");
	CHECK(split_by_thread(*filtered).size() == 2);
}

TEST_CASE("report --per-thread: a function table per thread, largest first, in text and JSON", "[report][per_thread]")
{
	ReportOptions o;
	o.per_thread = true;
	std::string text = render_as("text", threads_profile(), o);
	INFO(text);
	size_t x = text.find("thread x (tid 9) (tid 12), process app (pid 7): 65.4% of the recorded time\n"
			     "usdtprof report: 1.00 us recorded in 2 calls over 5.00 us\n");
	size_t worker = text.find("thread worker (tid 11), process app (pid 7): 32.7% of the recorded time\n"
				  "usdtprof report: 500 ns recorded in 5 calls over 5.00 us\n");
	size_t nested = text.find("thread (tid 13), process app (pid 7): 2.0% of the recorded time\n");
	CHECK((x != std::string::npos && worker != std::string::npos && nested != std::string::npos));
	CHECK((x < worker && worker < nested));
	CHECK(text.find("anomalies: none") > nested); // once, after the tables
	CHECK(text.find("anomalies: none") == text.rfind("anomalies: none"));

	json j = json::parse(render_as("json", threads_profile(), o));
	REQUIRE(j["threads"].size() == 3);
	const json &w = j["threads"][1];
	CHECK((w["name"] == "worker" && w["tid"] == 11 && w["pid"] == 7 && w["calls"] == 5 && w["total_ns"] == 500));
	REQUIRE(w["functions"].size() == 2);
	CHECK((w["functions"][0]["name"] == "work" && w["functions"][0]["self_ns"] == 400 &&
	       w["functions"][0]["calls"] == 4));
	CHECK((w["functions"][1]["name"] == "main" && w["functions"][1]["total_ns"] == 500));
	CHECK(j["threads"][0]["tid"] == 12);
	// Without --per-thread no "threads" key.
	CHECK_FALSE(json::parse(render_as("json", threads_profile(), ReportOptions{})).contains("threads"));
}
