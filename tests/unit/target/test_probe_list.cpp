#include <algorithm>
#include <catch2/catch.hpp>
#include <tuple>

#include <nlohmann/json.hpp>
#include <usdtprof/usdtprof.h>

#include "target/presets.h"
#include "target/probe_list.h"
#include "target/probe_roles.h"

using namespace usdtprof;

// A probe of another provider at exactly two sites, without arguments; its
// semaphore (sys/sdt.h wants one here, usdtprof.h enabled them) keeps it apart
// from the native preset's.
__attribute__((weak, visibility("hidden"), section(".probes"))) volatile unsigned short unit_list_twice_semaphore;

namespace {

__attribute__((noinline)) void probe_twice()
{
	STAP_PROBE(unit_list, twice);
	STAP_PROBE(unit_list, twice);
}

UsdtSite site(const std::string &provider, const std::string &name, std::vector<std::string> args,
	      uint64_t semaphore = 0)
{
	UsdtSite s;
	s.provider = provider;
	s.name = name;
	s.args = std::move(args);
	s.semaphore = semaphore;
	return s;
}

const ListedProbe &find(const std::vector<ListedProbe> &probes, const std::string &provider, const std::string &name)
{
	auto it = std::find_if(probes.begin(), probes.end(),
			       [&](const ListedProbe &p) { return p.provider == provider && p.name == name; });
	REQUIRE(it != probes.end());
	return *it;
}

} // namespace

TEST_CASE("list_probes groups this binary's sites per probe, sorted, with the native preset")
{
	probe_twice();
	auto sites = read_usdt_sites("/proc/self/exe");
	REQUIRE(sites);
	auto probes = list_probes(std::vector<std::string>{"/proc/self/exe"});
	REQUIRE(probes);
	for (size_t i = 1; i < probes->size(); i++) {
		const ListedProbe &a = (*probes)[i - 1], &b = (*probes)[i];
		CHECK(std::tie(a.provider, a.name) < std::tie(b.provider, b.name));
	}
	size_t total = 0;
	for (const ListedProbe &p : *probes) {
		CHECK(p.binary == "/proc/self/exe");
		total += p.sites;
	}
	CHECK(total == sites->size());

	for (const char *name : {"enter", "exit"}) {
		INFO(name);
		const ListedProbe &p = find(*probes, "usdtprof", name);
		size_t n = 0;
		for (const UsdtSite &s : *sites)
			if (s.provider == "usdtprof" && s.name == name) {
				n++;
				CHECK(p.semaphore == s.semaphore);
			}
		CHECK(p.sites == n);
		CHECK(p.has_semaphore);
		CHECK(p.args.size() == 5); // the name and the clock reads (usdtprof.h)
		CHECK(p.presets == std::vector<std::string>{"native"});
	}
	const ListedProbe &twice = find(*probes, "unit_list", "twice");
	CHECK(twice.sites == 2);
	CHECK(twice.args.empty());
	CHECK_FALSE(twice.args_vary);
	CHECK(twice.has_semaphore);
	CHECK(twice.presets.empty());
}

TEST_CASE("list_probes reports an unreadable or non-ELF file")
{
	auto missing = list_probes(std::vector<std::string>{"/proc/self/exe", "/nonexistent/usdtprof"});
	REQUIRE_FALSE(missing);
	CHECK(missing.error().message == "/nonexistent/usdtprof: No such file or directory");
	auto text = list_probes(std::vector<std::string>{"/proc/self/status"});
	REQUIRE_FALSE(text);
	CHECK(text.error().message == "/proc/self/status: not an ELF file");
}

TEST_CASE("probe_presets: native is exactly our header's probes")
{
	for (const ProbeRole &r : native_probe_roles())
		CHECK(probe_presets(r.provider, r.name) == std::vector<std::string>{"native"});
	CHECK(probe_presets("usdtprof", "task_begin") == std::vector<std::string>{"native"});
	CHECK(probe_presets("usdtprof", "other").empty());
	CHECK(probe_presets("libstdcxx", "throw").empty());
	CHECK(probe_presets("myapp", "enter").empty());
}

TEST_CASE("group_sites counts sites, keeps the first args, marks disagreeing ones")
{
	auto probes = group_sites("/bin/x", {
		site("p", "b", {"8@%rax"}, 0x40),
		site("p", "a", {"8@%rdi", "-4@$5"}),
		site("p", "b", {"8@%r15"}, 0x40),
		site("o", "z", {}),
		site("p", "a", {"8@%rdi", "-4@$5"}),
		site("p", "b", {"8@%rax"}, 0x40),
	});
	REQUIRE(probes.size() == 3);
	CHECK(probes[0].provider + ":" + probes[0].name == "o:z");
	CHECK(probes[1].provider + ":" + probes[1].name == "p:a");
	CHECK(probes[2].provider + ":" + probes[2].name == "p:b");
	CHECK(probes[1].sites == 2);
	CHECK(probes[1].args == std::vector<std::string>{"8@%rdi", "-4@$5"});
	CHECK_FALSE(probes[1].args_vary);
	CHECK_FALSE(probes[1].has_semaphore);
	CHECK(probes[2].sites == 3);
	CHECK(probes[2].args == std::vector<std::string>{"8@%rax"});
	CHECK(probes[2].args_vary);
	CHECK(probes[2].has_semaphore);
	CHECK(probes[2].semaphore == 0x40);
	for (const ListedProbe &p : probes)
		CHECK(p.binary == "/bin/x");
	CHECK(group_sites("/bin/x", {}).empty());
}

TEST_CASE("render_probe_list: a table per binary and a summary, or JSON")
{
	auto probes = group_sites("/bin/a", {
		site("usdtprof", "enter", {"8@%rax"}, 0x4070),
		site("usdtprof", "enter", {"8@%r15"}, 0x4070),
		site("myapp", "query__start", {"8@%rdi", "-4@%esi"}),
	});
	for (ListedProbe &p : group_sites("/lib/b.so", {site("lib", "go", {})}))
		probes.push_back(p);

	CHECK(render_probe_list(probes, false) ==
	      "/bin/a\n"
	      "  provider:name       sites  semaphore  arguments       presets\n"
	      "  myapp:query__start      1  -          8@%rdi -4@%esi  -\n"
	      "  usdtprof:enter          2  0x4070     varies          native\n"
	      "\n"
	      "/lib/b.so\n"
	      "  provider:name  sites  semaphore  arguments  presets\n"
	      "  lib:go             1  -          -          -\n"
	      "\n"
	      "3 probes (4 sites) in 2 binaries; presets: native\n");
	CHECK(render_probe_list({probes.back()}, false).ends_with("\n1 probe (1 site) in 1 binary; presets: none\n"));

	auto doc = nlohmann::json::parse(render_probe_list(probes, true));
	REQUIRE(doc["binaries"].size() == 2);
	CHECK(doc["binaries"][0]["path"] == "/bin/a");
	CHECK(doc["binaries"][1]["path"] == "/lib/b.so");
	const auto &enter = doc["binaries"][0]["probes"][1];
	CHECK(enter == nlohmann::json{{"provider", "usdtprof"}, {"name", "enter"}, {"sites", 2}, {"semaphore", "0x4070"},
		{"args", {"8@%rax"}}, {"args_vary", true}, {"presets", {"native"}}});
	CHECK(doc["binaries"][0]["probes"][0]["semaphore"].is_null());
	CHECK(doc["binaries"][1]["probes"][0]["args"] == nlohmann::json::array());
	CHECK(nlohmann::json::parse(render_probe_list({}, true)) == nlohmann::json{{"binaries", nlohmann::json::array()}});
}

TEST_CASE("list: probe strings and paths from an ELF file are escaped in text and valid UTF-8 in JSON", "[escape]")
{
	std::vector<ListedProbe> probes = group_sites(
		"/tmp/evil\x1b]0;t\x07\r\nfake\xff", {site("prov\x1b[2J", "name\r\nfake", {"8@%rax\x9b", "-4@$1\x7f"})});
	std::string text = render_probe_list(probes, false);
	for (unsigned char c : text)
		REQUIRE(((c >= 0x20 || c == '\n') && c != 0x7f));
	CHECK(text.find("/tmp/evil\\x1b]0;t\\x07\\x0d\\x0afake\\xff\n") != std::string::npos);
	CHECK(text.find("prov\\x1b[2J:name\\x0d\\x0afake") != std::string::npos);
	CHECK(text.find("8@%rax\\x9b -4@$1\\x7f") != std::string::npos);
	auto j = nlohmann::json::parse(render_probe_list(probes, true)); // strict: throws on invalid UTF-8
	CHECK(j["binaries"][0]["path"] == "/tmp/evil\x1b]0;t\x07\r\nfake\xef\xbf\xbd");
	CHECK(j["binaries"][0]["probes"][0]["args"][0] == "8@%rax\xef\xbf\xbd");
}
