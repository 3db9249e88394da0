#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "report/formats.h"

using namespace usdtprof;

namespace {

size_t count(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
		n++;
	return n;
}

// The JSON of the page's <script type="application/json" id="data">.
nlohmann::json page_data(const std::string &page)
{
	const std::string open = "<script type=\"application/json\" id=\"data\">";
	size_t from = page.find(open);
	REQUIRE(from != std::string::npos);
	from += open.size();
	return nlohmann::json::parse(page.substr(from, page.find("</script>", from) - from));
}

} // namespace

TEST_CASE("html: names a process chose can neither end the data's script nor run their own", "[html][security]")
{
	Profile p;
	p.command = {"/bin/x</title><script>alert(0)</script>"};
	p.functions = {"</script><script>alert(1)</script>", "a<!--b", "esc\x1b[2J\r\nfake", "bad\xff"};
	p.processes = {{42, "p</script>", {"run", "<img src=x onerror=alert(2)>"}}};
	p.nodes.push_back({kNoParent, 0, 42, 1, 0, 100, 100});
	p.nodes.push_back({0, 1, 42, 1, 0, 100, 100});
	p.nodes.push_back({1, 2, 42, 1, 0, 100, 100});
	p.nodes.push_back({2, 3, 42, 1, 0, 100, 100});
	std::string page = render_profile(*find_format("html", kUseReport), p, ReportOptions{});
	// Only the page's own two scripts and its title; nothing a name brought.
	CHECK(count(page, "<script") == 2);
	CHECK(count(page, "</script") == 2);
	CHECK(count(page, "<!--") == 0);
	CHECK(count(page, "<img") == 0);
	CHECK(page.find("<title>usdtprof: /bin/x&lt;/title&gt;&lt;script&gt;alert(0)&lt;/script&gt;</title>") != std::string::npos);
	// Every byte of the page is printable or a line break: no raw controls.
	for (unsigned char c : page)
		REQUIRE(((c >= 0x20 || c == '\n' || c == '\t') && c != 0x7f));
	nlohmann::json data = page_data(page);
	std::vector<std::string> names = data["tree"]["names"];
	CHECK(std::find(names.begin(), names.end(), "</script><script>alert(1)</script>") != names.end());
	CHECK(std::find(names.begin(), names.end(), "esc\\x1b[2J\\x0d\\x0afake") != names.end());
	CHECK(std::find(names.begin(), names.end(), "bad\\xff") != names.end());
	CHECK(data["facts"]["processes"][0]["cmdline"][1] == "<img src=x onerror=alert(2)>");
}

TEST_CASE("html: the page carries the tree with one root per process and each part of self time", "[html]")
{
	Profile p;
	p.functions = {"main", "work"};
	p.processes = {{7, "a", {}}, {9, "b", {}}};
	p.nodes.push_back({kNoParent, 0, 7, 1, 0, 500, 900});
	p.nodes.push_back({0, 1, 7, 3, 1, 400, 400, 150});
	p.nodes.push_back({kNoParent, 0, 9, 2, 0, 100, 100});
	nlohmann::json data = page_data(render_profile(*find_format("html", kUseReport), p, ReportOptions{}));
	CHECK(data["kind"] == "report");
	const nlohmann::json &tree = data["tree"];
	REQUIRE(tree["roots"].size() == 2);
	CHECK(tree["roots"][0]["pid"] == 7);
	CHECK(tree["roots"][1]["pid"] == 9);
	// [name, parent, calls, open, on-CPU self, off-CPU self]
	std::vector<std::vector<int64_t>> nodes;
	for (const auto &n : tree["nodes"])
		nodes.push_back({tree["names"][n[0].get<size_t>()] == "work", n[1], n[2], n[3], n[4], n[5]});
	CHECK(nodes == std::vector<std::vector<int64_t>>{{0, -1, 0, 0, 0, 0}, {0, 0, 1, 0, 500, 0}, {1, 1, 3, 1, 250, 150},
							 {0, -1, 0, 0, 0, 0}, {0, 3, 2, 0, 100, 0}});
}
