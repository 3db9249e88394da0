#include <catch2/catch.hpp>
#include <map>
#include <algorithm>
#include <set>

#include "engine/call_paths.h"

using namespace usdtprof;

namespace {

PathRecord record(uint64_t path, uint64_t parent, uint64_t func, uint32_t tgid = 100, uint64_t calls = 1)
{
	PathRecord r;
	r.path = path;
	r.stats.parent = parent;
	r.stats.func = func;
	r.stats.tgid = tgid;
	r.stats.calls = calls;
	r.stats.self_ns = 10 * calls;
	r.stats.total_ns = 20 * calls;
	return r;
}

std::string name_of(const Profile &p, uint32_t node)
{
	return p.functions.at(p.nodes.at(node).function);
}

} // namespace

TEST_CASE("call paths: the tree is rebuilt from parent ids, parents first, whatever the record order")
{
	// main(0x10) -> parse(0x20) -> lex(0x30), main -> eval(0x40); children listed first.
	std::vector<PathRecord> records = {record(3, 2, 0x30), record(4, 1, 0x40), record(2, 1, 0x20),
					   record(1, 0, 0x10)};
	std::map<uint64_t, std::string> names = {{0x10, "main"}, {0x20, "parse"}, {0x30, "lex"}, {0x40, "eval"}};
	std::map<uint64_t, int> lookups;
	Profile p;
	add_call_paths(p, records, [&](uint32_t, uint64_t func) -> Result<FunctionName> {
		lookups[func]++;
		return FunctionName{names.at(func), ""};
	});
	REQUIRE(p.nodes.size() == 4);
	for (uint32_t i = 0; i < p.nodes.size(); i++) {
		INFO(i);
		REQUIRE((p.nodes[i].parent == kNoParent || p.nodes[i].parent < i));
	}
	std::map<std::string, std::string> parent_of;
	for (uint32_t i = 0; i < p.nodes.size(); i++)
		parent_of[name_of(p, i)] = p.nodes[i].parent == kNoParent ? "" : name_of(p, p.nodes[i].parent);
	REQUIRE(parent_of == std::map<std::string, std::string>{
				     {"main", ""}, {"parse", "main"}, {"lex", "parse"}, {"eval", "main"}});
	for (auto &[func, count] : lookups)
		REQUIRE(count == 1);
	REQUIRE(p.nodes[0].calls == 1);
	REQUIRE(p.nodes[0].total_ns == 20);
}

TEST_CASE("call paths: each function id is resolved once per process, equal names share one entry")
{
	// The same id in two processes (ASLR makes ids per process) and the same
	// name under two ids.
	std::vector<PathRecord> records = {record(1, 0, 0x10, 100), record(2, 0, 0x10, 200), record(3, 1, 0x10, 100),
					   record(4, 0, 0x99, 100)};
	int lookups = 0;
	Profile p;
	add_call_paths(p, records, [&](uint32_t, uint64_t) -> Result<FunctionName> {
		lookups++;
		return FunctionName{"f", ""};
	});
	REQUIRE(lookups == 3); // (100,0x10), (200,0x10), (100,0x99)
	REQUIRE(p.functions == std::vector<std::string>{"f"});
	REQUIRE(p.locations.empty());
	REQUIRE(p.nodes.size() == 4);
}

TEST_CASE("call paths: functions with one name and different locations stay apart, locations kept")
{
	std::vector<PathRecord> records = {record(1, 0, 0x10), record(2, 0, 0x20), record(3, 0, 0x30)};
	std::map<uint64_t, FunctionName> names = {
		{0x10, {"run", "a.py:3"}}, {0x20, {"run", "b.py:9"}}, {0x30, {"main", ""}}};
	Profile p;
	add_call_paths(p, records, [&](uint32_t, uint64_t func) -> Result<FunctionName> { return names.at(func); });
	REQUIRE(p.functions == std::vector<std::string>{"run", "run", "main"});
	REQUIRE(p.locations == std::vector<std::string>{"a.py:3", "b.py:9", ""});
}

TEST_CASE("call paths: an unresolvable id is named, a missing parent goes under [parent dropped]")
{
	std::vector<PathRecord> records = {record(5, 77, 0xabc), record(6, 78, 0xabc), record(7, 0, 0xabc)};
	Profile p;
	add_call_paths(p, records, [](uint32_t, uint64_t) -> Result<FunctionName> { return Error{"gone"}; });
	REQUIRE(p.nodes.size() == 4);
	REQUIRE(p.functions.size() == 2);
	uint32_t dropped = 0;
	while (name_of(p, dropped) != "[parent dropped]")
		dropped++;
	REQUIRE(name_of(p, dropped == 0 ? 1 : 0) == "[unknown 0xabc]");
	REQUIRE(p.nodes[dropped].parent == kNoParent);
	REQUIRE(p.nodes[dropped].calls == 0);
	int orphans = 0;
	for (const PathNode &n : p.nodes)
		orphans += n.parent == dropped;
	REQUIRE(orphans == 2);
}

TEST_CASE("cap_name: long names end in ... at a character boundary", "[call_paths]")
{
	std::string s = std::string(10, 'a');
	CHECK(!cap_name(s, 10));
	CHECK(s == std::string(10, 'a'));
	s = std::string(4000, 'a');
	CHECK(cap_name(s, 1024));
	CHECK(s.size() == 1024);
	CHECK(s.substr(1021) == "...");
	// U+00E9 is two bytes: the cut never splits one.
	s = "";
	for (int i = 0; i < 1000; i++)
		s += "\xc3\xa9";
	CHECK(cap_name(s, 1024));
	CHECK(s.size() == 1023);
	CHECK(s.substr(1018, 2) == "\xc3\xa9");
	CHECK(s.substr(1020) == "...");
}

TEST_CASE("add_call_paths caps what a target names and counts the cuts", "[call_paths]")
{
	Profile p;
	usdtprof_path_stats a{};
	a.tgid = 1;
	a.func = 0x100;
	a.calls = 1;
	usdtprof_path_stats b = a;
	b.func = 0x200;
	std::vector<PathRecord> records = {{10, path_stats_of(a)}, {20, path_stats_of(b)}};
	size_t cut = add_call_paths(p, records, [&](uint32_t, uint64_t func) -> Result<FunctionName> {
		if (func == 0x100)
			return FunctionName{std::string(100000, 'x'), "short.c:1"};
		return FunctionName{"short", std::string(5000, 'l')};
	});
	CHECK(cut == 2);
	REQUIRE(p.functions.size() == 2);
	for (const std::string &f : p.functions)
		CHECK(f.size() <= kMaxNameBytes);
	for (const std::string &l : p.locations)
		CHECK(l.size() <= kMaxNameBytes);
}

TEST_CASE("call paths: the roots of a process that works for another hang under one labelled frame")
{
	// Process 200 (a worker) has two roots, process 100 one; only 200 is labelled.
	std::vector<PathRecord> records = {record(1, 0, 0x10, 100), record(2, 0, 0x20, 200, 2), record(3, 0, 0x30, 200, 3),
					   record(4, 3, 0x40, 200)};
	std::map<uint64_t, std::string> names = {{0x10, "SELECT"}, {0x20, "buffer read"}, {0x30, "sort"}, {0x40, "lwlock wait"}};
	Profile p;
	add_call_paths(
		p, records, [&](uint32_t, uint64_t func) -> Result<FunctionName> { return FunctionName{names.at(func), ""}; },
		{{200, "[parallel worker for pid 100]"}});
	REQUIRE(p.nodes.size() == 5);
	std::map<std::string, std::string> parent_of;
	uint32_t label = kNoParent;
	for (uint32_t i = 0; i < p.nodes.size(); i++) {
		REQUIRE((p.nodes[i].parent == kNoParent || p.nodes[i].parent < i));
		parent_of[name_of(p, i)] = p.nodes[i].parent == kNoParent ? "" : name_of(p, p.nodes[i].parent);
		if (name_of(p, i) == "[parallel worker for pid 100]")
			label = i;
	}
	REQUIRE(parent_of == std::map<std::string, std::string>{{"SELECT", ""},
								 {"[parallel worker for pid 100]", ""},
								 {"buffer read", "[parallel worker for pid 100]"},
								 {"sort", "[parallel worker for pid 100]"},
								 {"lwlock wait", "sort"}});
	REQUIRE(label != kNoParent);
	REQUIRE(p.nodes[label].pid == 200);
	REQUIRE(p.nodes[label].calls == 1);
	REQUIRE(p.nodes[label].self_ns == 0);
	// As long as its roots: 2 * 20 + 3 * 20 ns.
	REQUIRE(p.nodes[label].total_ns == 100);
}

TEST_CASE("call paths: a worker's labelled frame hangs under its leader's statement, whose time stays its own")
{
	// Worker 200's roots come before its leader's statement (path 1, of 100) in the records.
	std::vector<PathRecord> records = {record(2, 0, 0x20, 200, 2), record(3, 0, 0x30, 200, 3),
					   record(1, 0, 0x10, 100), record(5, 1, 0x20, 100)};
	std::map<uint64_t, std::string> names = {{0x10, "SELECT"}, {0x20, "buffer read"}, {0x30, "sort"}};
	auto lookup = [&](uint32_t, uint64_t func) -> Result<FunctionName> { return FunctionName{names.at(func), ""}; };
	Profile p;
	add_call_paths(p, records, lookup, {{200, "[parallel worker for pid 100]"}}, {{200, 1}});
	REQUIRE(p.nodes.size() == 5);
	std::map<std::string, std::string> parent_of;
	uint32_t statement = kNoParent, label = kNoParent;
	for (uint32_t i = 0; i < p.nodes.size(); i++) {
		REQUIRE((p.nodes[i].parent == kNoParent || p.nodes[i].parent < i));
		std::string parent = p.nodes[i].parent == kNoParent ? "" : name_of(p, p.nodes[i].parent);
		parent_of[name_of(p, i) + "@" + std::to_string(p.nodes[i].pid)] = parent;
		if (name_of(p, i) == "SELECT")
			statement = i;
		if (name_of(p, i) == "[parallel worker for pid 100]")
			label = i;
	}
	REQUIRE(parent_of == std::map<std::string, std::string>{{"SELECT@100", ""},
								 {"buffer read@100", "SELECT"},
								 {"[parallel worker for pid 100]@200", "SELECT"},
								 {"buffer read@200", "[parallel worker for pid 100]"},
								 {"sort@200", "[parallel worker for pid 100]"}});
	REQUIRE(p.nodes[label].total_ns == 100);
	REQUIRE(p.nodes[statement].total_ns == 20); // the leader's own, the worker's beside it
	REQUIRE(p.nodes[statement].calls == 1);

	// A statement path not among the records (deleted, or of another interval): the label is a root.
	Profile q;
	add_call_paths(q, {records[0], records[1]}, lookup, {{200, "[parallel worker for pid 100]"}}, {{200, 1}});
	REQUIRE(q.nodes.size() == 3);
	REQUIRE(q.nodes[0].parent == kNoParent);
	REQUIRE(name_of(q, 0) == "[parallel worker for pid 100]");
}

TEST_CASE("call paths: processes whose labels name each other's statements make no cycle")
{
	std::vector<PathRecord> records = {record(1, 0, 0x10, 100), record(2, 0, 0x10, 200)};
	Profile p;
	add_call_paths(
		p, records, [&](uint32_t, uint64_t) -> Result<FunctionName> { return FunctionName{"SELECT", ""}; },
		{{100, "[parallel worker for pid 200]"}, {200, "[parallel worker for pid 100]"}}, {{100, 2}, {200, 1}});
	REQUIRE(p.nodes.size() == 4);
	for (uint32_t i = 0; i < p.nodes.size(); i++)
		REQUIRE((p.nodes[i].parent == kNoParent || p.nodes[i].parent < i));
}

TEST_CASE("call paths: with --per-thread each thread's roots hang under one frame named by the thread", "[per_thread]")
{
	// Process 100: thread 100 runs main -> work, thread 101 runs work twice and
	// has no name; thread 102's root under the process's label. A path whose
	// parent is missing (not a thread root) still goes under [parent dropped].
	uint64_t t100 = USDTPROF_THREAD_ROOT(100, 100), t101 = USDTPROF_THREAD_ROOT(100, 101);
	std::vector<PathRecord> records = {record(2, 1, 0x20), record(1, t100, 0x10), record(3, t101, 0x20, 100, 2),
					   record(4, 77, 0x20)};
	std::map<uint64_t, std::string> names = {{0x10, "main"}, {0x20, "work"}};
	Profile p;
	size_t cut = add_call_paths(
		p, records, [&](uint32_t, uint64_t func) -> Result<FunctionName> { return FunctionName{names.at(func), ""}; },
		{}, {}, [](uint32_t tgid, uint32_t tid) { return tgid == 100 && tid == 100 ? "srv" : ""; });
	REQUIRE(cut == 0);
	std::map<std::string, std::string> parent_of;
	std::map<std::string, uint32_t> index;
	for (uint32_t i = 0; i < p.nodes.size(); i++) {
		REQUIRE((p.nodes[i].parent == kNoParent || p.nodes[i].parent < i));
		std::string parent = p.nodes[i].parent == kNoParent ? "" : name_of(p, p.nodes[i].parent);
		parent_of[name_of(p, i) + "<" + parent] = i;
		index[name_of(p, i)] = i;
	}
	CHECK(parent_of.count("srv (tid 100)<"));
	CHECK(parent_of.count("(tid 101)<"));
	CHECK(parent_of.count("main<srv (tid 100)"));
	CHECK(parent_of.count("work<main"));
	CHECK(parent_of.count("work<(tid 101)"));
	CHECK(parent_of.count("work<[parent dropped]"));
	REQUIRE(p.nodes.size() == 7);
	const PathNode &srv = p.nodes[index["srv (tid 100)"]], &anon = p.nodes[index["(tid 101)"]];
	CHECK(srv.calls == 0); // a thread, not a call
	CHECK(srv.self_ns == 0);
	CHECK(srv.total_ns == 20); // its roots': main's
	CHECK(anon.total_ns == 40);
	CHECK(srv.pid == 100);
	REQUIRE(p.thread_nodes.size() == 2);
	CHECK(std::is_sorted(p.thread_nodes.begin(), p.thread_nodes.end()));
	std::set<std::string> threads;
	for (uint32_t n : p.thread_nodes)
		threads.insert(name_of(p, n));
	CHECK(threads == std::set<std::string>{"srv (tid 100)", "(tid 101)"});

	// A labelled process's thread frames hang under its label, which sums them.
	Profile q;
	add_call_paths(
		q, {record(5, USDTPROF_THREAD_ROOT(200, 201), 0x20, 200, 3)},
		[&](uint32_t, uint64_t func) -> Result<FunctionName> { return FunctionName{names.at(func), ""}; },
		{{200, "[parallel worker for pid 100]"}}, {}, [](uint32_t, uint32_t) { return "bgworker"; });
	REQUIRE(q.nodes.size() == 3);
	CHECK(name_of(q, 0) == "[parallel worker for pid 100]");
	CHECK(name_of(q, 1) == "bgworker (tid 201)");
	CHECK(q.nodes[1].parent == 0);
	CHECK(q.nodes[0].total_ns == 60);
	CHECK(q.nodes[1].total_ns == 60);
}

TEST_CASE("call paths: a Java lambda's hidden class is named by what it calls, per process, numbered when it "
	  "calls nothing")
{
	// main(0x10) -> Srv$$Lambda$11 (0x20) -> lambda$main$1 (0x30); main -> Srv$$Lambda$12 (0x21),
	// whose body's path was never recorded; another process where the JVM numbered the lambda that
	// calls lambda$main$1 12 (and made no other), calling it twice.
	std::vector<PathRecord> records = {record(1, 0, 0x10), record(2, 1, 0x20), record(3, 2, 0x30),
					   record(4, 1, 0x21), record(5, 0, 0x10, 200), record(6, 5, 0x21, 200, 2),
					   record(7, 6, 0x30, 200, 2)};
	std::map<uint64_t, std::string> names = {{0x10, "Srv.main(String[])"},
						 {0x20, "Srv$$Lambda$11.apply(Object):Object"},
						 {0x21, "Srv$$Lambda$12.apply(Object):Object"},
						 {0x30, "Srv.lambda$main$1(Object):Object"}};
	Profile p;
	add_call_paths(p, records,
		       [&](uint32_t, uint64_t func) -> Result<FunctionName> { return FunctionName{names.at(func), ""}; });
	REQUIRE(p.nodes.size() == 7);
	std::vector<std::string> named;
	for (uint32_t i = 0; i < p.nodes.size(); i++)
		named.push_back(name_of(p, i));
	const std::string lambda = "Srv$$Lambda[lambda$main$1].apply(Object):Object";
	REQUIRE(named == std::vector<std::string>{"Srv.main(String[])", lambda, "Srv.lambda$main$1(Object):Object",
						  "Srv$$Lambda$12.apply(Object):Object", "Srv.main(String[])",
						  lambda, "Srv.lambda$main$1(Object):Object"});
	// One function for both processes' lambda, as for any name.
	REQUIRE(std::count(p.functions.begin(), p.functions.end(), lambda) == 1);
	REQUIRE(p.nodes[5].calls == 2);
}

TEST_CASE("call paths: from columns, each node and its durations moved to its place, after the profile's own")
{
	// Read children first, an orphan (its parent 99 not read) among them: its
	// "[parent dropped]" frame is made while placing, after the paths.
	std::vector<PathRecord> records = {record(3, 2, 0x30), record(5, 99, 0x50), record(2, 1, 0x20),
					   record(1, 0, 0x10)};
	records[0].stats.buckets = {{5, 1}};
	records[0].stats.min_ns = 40, records[0].stats.max_ns = 30; // max below min: raised to it
	records[2].stats.buckets = {{3, 2}, {4, 1}};
	records[2].stats.min_ns = 10, records[2].stats.max_ns = 20;
	records[3].stats.min_ns = 7, records[3].stats.max_ns = 9; // no buckets: no extremes
	PathColumns paths = PathColumns::of(records);
	Profile p;
	p.functions = {"before"};
	add_node(p, PathNode{});
	std::map<uint64_t, std::string> names = {{0x10, "main"}, {0x20, "parse"}, {0x30, "lex"}, {0x50, "lost"}};
	add_call_paths(p, paths, [&](uint32_t, uint64_t func) -> Result<FunctionName> {
		return FunctionName{names.at(func), ""};
	});
	REQUIRE(paths.nodes.empty());
	REQUIRE(paths.dists.empty());
	REQUIRE(paths.path == std::vector<uint64_t>{3, 5, 2, 1});
	REQUIRE(p.nodes.size() == 6);
	REQUIRE(p.dists.size() == 6);
	REQUIRE(name_of(p, 0) == "before");
	std::map<std::string, uint32_t> at;
	for (uint32_t i = 0; i < p.nodes.size(); i++) {
		INFO(i);
		REQUIRE((p.nodes[i].parent == kNoParent || p.nodes[i].parent < i));
		at[name_of(p, i)] = i;
	}
	REQUIRE(p.nodes[at["lex"]].parent == at["parse"]);
	REQUIRE(p.nodes[at["parse"]].parent == at["main"]);
	REQUIRE(p.nodes[at["main"]].parent == kNoParent);
	REQUIRE(p.nodes[at["lost"]].parent == at["[parent dropped]"]);
	REQUIRE(p.nodes[at["lost"]].pid == 100);
	REQUIRE(p.dists[at["lex"]].buckets == Buckets{{5, 1}});
	REQUIRE((p.dists[at["lex"]].min_ns == 40 && p.dists[at["lex"]].max_ns == 40));
	REQUIRE(p.dists[at["parse"]].buckets == Buckets{{3, 2}, {4, 1}});
	REQUIRE((p.dists[at["parse"]].min_ns == 10 && p.dists[at["parse"]].max_ns == 20));
	REQUIRE((p.dists[at["main"]].empty() && p.dists[at["main"]].min_ns == 0 && p.dists[at["main"]].max_ns == 0));
	REQUIRE(p.dists[at["[parent dropped]"]].empty());
	// The same profile as from the records themselves (copied into columns).
	Profile q;
	q.functions = {"before"};
	add_node(q, PathNode{});
	add_call_paths(q, records, [&](uint32_t, uint64_t func) -> Result<FunctionName> {
		return FunctionName{names.at(func), ""};
	});
	REQUIRE(q.functions == p.functions);
	for (uint32_t i = 0; i < p.nodes.size(); i++) {
		INFO(i);
		REQUIRE(q.nodes[i].parent == p.nodes[i].parent);
		REQUIRE(q.nodes[i].function == p.nodes[i].function);
		REQUIRE(q.dists[i].buckets == p.dists[i].buckets);
	}
}

TEST_CASE("PathColumns: each path's kernel slot stays beside it through keep_if, truncate, records and of")
{
	PathColumns c;
	usdtprof_path_stats s{};
	s.tgid = 100;
	for (uint32_t i = 0; i < 5; i++) {
		s.calls = i + 1;
		c.append(1000 + i, s, 70 + i);
	}
	c.append(2000, s); // an [other] path: no slot
	REQUIRE(c.slot == std::vector<uint32_t>{70, 71, 72, 73, 74, USDTPROF_NO_SLOT});
	c.keep_if([](size_t i) { return i % 2 == 0; });
	REQUIRE(c.path == std::vector<uint64_t>{1000, 1002, 1004});
	REQUIRE(c.slot == std::vector<uint32_t>{70, 72, 74});
	std::vector<PathRecord> records = c.records();
	REQUIRE(records[1].slot == 72);
	REQUIRE(PathColumns::of(records).slot == c.slot);
	c.truncate(1);
	REQUIRE(c.slot == std::vector<uint32_t>{70});
	c.clear();
	REQUIRE(c.slot.empty());
}
