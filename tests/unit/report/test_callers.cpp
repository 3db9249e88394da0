#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "report/callers.h"

using namespace usdtprof;

namespace {

// main -> a -> b -> a -> c, main -> b, and a at a root of its own:
// a is recursive through b.
Profile recursive_profile()
{
	Profile p;
	p.functions = {"main", "a", "b", "c"};
	p.nodes = {
		// parent, function, pid, calls, open, self_ns (total_ns is derived by the tree)
		{kNoParent, 0, 1, 1, 0, 10},
		{0, 1, 1, 2, 0, 100},
		{1, 2, 1, 3, 0, 20},
		{2, 1, 1, 4, 0, 50},
		{3, 3, 1, 5, 0, 7},
		{0, 2, 1, 2, 0, 30},
		{kNoParent, 1, 2, 1, 0, 5},
	};
	return p;
}

struct Expected {
	std::string name;
	uint64_t calls, time_ns;
};

void require_edges(const std::vector<Edge> &edges, const std::vector<Expected> &expected)
{
	REQUIRE(edges.size() == expected.size());
	for (size_t i = 0; i < edges.size(); i++) {
		INFO(i);
		CHECK(edges[i].name == expected[i].name);
		CHECK(edges[i].calls == expected[i].calls);
		CHECK(edges[i].time_ns == expected[i].time_ns);
	}
}

} // namespace

TEST_CASE("callers: calls through every edge, time only of outermost activations", "[callers]")
{
	CallTree tree = build_call_tree(recursive_profile());
	auto a = neighbours_of(tree, "a");
	REQUIRE(a);
	CHECK(a->function.calls == 7);
	CHECK(a->function.total_ns == 182); // main;a (177) + a (5)
	CHECK(a->function.recursive);
	// The 4 calls from b are inside main;a: their time is in its 177.
	require_edges(a->callers, {{"main", 2, 177}, {"[root]", 1, 5}, {"b", 4, 0}});
}

TEST_CASE("callees: the outermost activations' children, plus their self, add up to the total", "[callers]")
{
	CallTree tree = build_call_tree(recursive_profile());
	auto a = neighbours_of(tree, "a");
	REQUIRE(a);
	// c is called only by the inner a: its 7 ns are in b's 77.
	require_edges(a->callees, {{"b", 3, 77}, {"c", 5, 0}});
	CHECK(a->outer_self_ns == 105);
	CHECK(a->outer_self_ns + 77 == a->function.total_ns);

	auto main = neighbours_of(tree, "main");
	REQUIRE(main);
	require_edges(main->callers, {{"[root]", 1, 217}});
	require_edges(main->callees, {{"a", 2, 177}, {"b", 2, 30}});
	CHECK(main->outer_self_ns == 10);

	auto b = neighbours_of(tree, "b");
	REQUIRE(b);
	require_edges(b->callers, {{"a", 3, 77}, {"main", 2, 30}});
	CHECK_FALSE(neighbours_of(tree, "nope"));
}

TEST_CASE("render_neighbours: JSON with the requested views, an unknown name is an error", "[callers]")
{
	ReportOptions options;
	options.raw = true;
	auto out = render_neighbours(recursive_profile(), options, true, "a", "");
	REQUIRE(out);
	auto j = nlohmann::json::parse(*out);
	CHECK(j["callers"]["edges"][0] == nlohmann::json{{"name", "main"}, {"calls", 2}, {"time_ns", 177}});
	CHECK(j["callers"]["function"]["total_ns"] == 182);
	CHECK_FALSE(j.contains("callees"));

	auto text = render_neighbours(recursive_profile(), options, false, "", "a");
	REQUIRE(text);
	CHECK(text->find("usdtprof callees of a: 7 calls, self 155 ns, total 182 ns [recursive]") == 0);
	CHECK(text->find("[self]") != std::string::npos);

	auto missing = render_neighbours(recursive_profile(), options, false, "zz", "");
	REQUIRE_FALSE(missing);
	CHECK(missing.error().message == "no function named 'zz' in the profile");
}
