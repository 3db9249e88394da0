// `usdtprof list`: probes of binaries and of running processes, checked
// against the files' own notes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <map>
#include <sstream>
#include <unistd.h>

#include "harness.h"
#include "target/proc_maps.h"
#include "target/usdt.h"

using namespace e2e;

namespace {

struct Expected {
	size_t sites = 0;
	uint64_t semaphore = 0;
};

// "provider:name" -> its sites in file, from the notes (as readelf -n shows them).
std::map<std::string, Expected> notes_of(const std::string &file)
{
	auto sites = usdtprof::read_usdt_sites(file);
	REQUIRE(sites);
	std::map<std::string, Expected> probes;
	for (const auto &s : *sites) {
		Expected &e = probes[s.provider + ":" + s.name];
		e.sites++;
		e.semaphore = s.semaphore;
	}
	return probes;
}

std::string hex(uint64_t v)
{
	std::ostringstream out;
	out << "0x" << std::hex << v;
	return out.str();
}

// One binary of `list --format json` against its notes, probe by probe.
void require_matches_notes(const nlohmann::json &binary)
{
	const std::string path = binary.at("path");
	INFO(path);
	auto expected = notes_of(path);
	REQUIRE(binary.at("probes").size() == expected.size());
	for (const auto &p : binary.at("probes")) {
		const std::string probe = p.at("provider").get<std::string>() + ":" + p.at("name").get<std::string>();
		INFO(probe);
		REQUIRE(expected.count(probe));
		REQUIRE(p.at("sites") == expected[probe].sites);
		if (expected[probe].semaphore)
			REQUIRE(p.at("semaphore") == hex(expected[probe].semaphore));
		else
			REQUIRE(p.at("semaphore").is_null());
		const bool native = p.at("provider") == "usdtprof";
		REQUIRE(p.at("presets") == (native ? nlohmann::json{"native"} : nlohmann::json::array()));
	}
}

nlohmann::json list_json(const std::vector<std::string> &args)
{
	std::vector<std::string> argv = {e2e::usdtprof(), "list", "--format", "json"};
	argv.insert(argv.end(), args.begin(), args.end());
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	return nlohmann::json::parse(o.out);
}

// Paths of the files pid maps that have probes, in map order.
std::vector<std::string> probed_files(int pid)
{
	auto maps = usdtprof::read_proc_maps(pid);
	REQUIRE(maps);
	std::vector<std::string> files;
	for (const std::string &f : usdtprof::executable_files(*maps))
		if (!notes_of(f).empty())
			files.push_back(f);
	return files;
}

} // namespace

TEST_CASE("list: a target's probes, site counts and semaphores as in its notes", "[list]")
{
	const std::string nested = target("nested");
	auto notes = notes_of(nested);
	REQUIRE(notes.size() == 2);

	Output o = run({e2e::usdtprof(), "list", nested});
	INFO(o.out << o.err);
	REQUIRE(o.status == 0);
	REQUIRE(o.err.empty());
	std::istringstream lines(o.out);
	std::string line;
	REQUIRE(std::getline(lines, line));
	REQUIRE(line == nested);
	REQUIRE(std::getline(lines, line));
	REQUIRE(line.find("provider:name") != std::string::npos);
	for (const char *probe : {"usdtprof:enter", "usdtprof:exit"}) {
		REQUIRE(std::getline(lines, line));
		std::istringstream cells(line);
		std::string name, semaphore;
		size_t sites;
		cells >> name >> sites >> semaphore;
		REQUIRE(name == probe);
		REQUIRE(sites == notes[probe].sites);
		REQUIRE(semaphore == hex(notes[probe].semaphore));
		REQUIRE(line.ends_with("  native"));
	}
	const size_t sites = notes["usdtprof:enter"].sites + notes["usdtprof:exit"].sites;
	REQUIRE(o.out.ends_with("\n\n2 probes (" + std::to_string(sites) + " sites) in 1 binary; presets: native\n"));

	auto doc = list_json({nested});
	REQUIRE(doc.at("binaries").size() == 1);
	REQUIRE(doc["binaries"][0]["path"] == nested);
	require_matches_notes(doc["binaries"][0]);
}

TEST_CASE("list -p: the process's binary and its shared libraries, in map order", "[list]")
{
	// libstdc++ has probes of its own (libstdcxx:throw...); Debian's libc may
	// or may not, so which libraries must appear is read from the notes.
	Background t({"env", "LD_PRELOAD=/lib/x86_64-linux-gnu/libstdc++.so.6", target("nested"), "--wait", "5"});
	t.wait_for_line("ready");
	const std::string pid = std::to_string(t.pid());

	auto doc = list_json({"-p", pid});
	std::vector<std::string> paths;
	for (const auto &b : doc.at("binaries")) {
		paths.push_back(b.at("path"));
		require_matches_notes(b);
	}
	const auto expected = probed_files(t.pid());
	REQUIRE(paths == expected);
	REQUIRE(paths.size() >= 2);
	REQUIRE(paths[0] == std::filesystem::canonical(target("nested")).string());
	REQUIRE(std::ranges::any_of(paths, [](const std::string &p) { return p.find("libstdc++") != std::string::npos; }));

	Output o = run({e2e::usdtprof(), "list", "-p", pid});
	INFO(o.err);
	REQUIRE(o.status == 0);
	for (const std::string &p : expected)
		REQUIRE(("\n" + o.out).find("\n" + p + "\n") != std::string::npos);
	REQUIRE(o.out.find("  libstdcxx:throw ") != std::string::npos);
	REQUIRE(o.out.find("in " + std::to_string(expected.size()) + " binaries; presets: native\n") != std::string::npos);

	// Listing left the target alone: it runs to its normal exit.
	kill(t.pid(), SIGUSR1);
	REQUIRE(t.wait() == 7);
}

TEST_CASE("list: no probes is an answer, not an error", "[list]")
{
	Output o = run({e2e::usdtprof(), "list", "/bin/true"});
	REQUIRE(o.status == 0);
	REQUIRE(o.out == "no USDT probes in /bin/true\n");
	REQUIRE(list_json({"/bin/true"}) == nlohmann::json{{"binaries", nlohmann::json::array()}});

	// A shell that has printed is past its exec with libc mapped; it then waits
	// on its child. (Polling /proc for a fresh `sleep` to map libc timed out in CI.)
	Background sleeper({"sh", "-c", "echo ready; sleep 30"});
	sleeper.wait_for_line("ready");
	Output p = run({e2e::usdtprof(), "list", "-p", std::to_string(sleeper.pid())});
	REQUIRE(p.status == 0);
	if (probed_files(sleeper.pid()).empty())
		REQUIRE(p.out == "pid " + std::to_string(sleeper.pid()) +
				" (sh): no USDT probes in its binary or shared libraries\n");
	else
		REQUIRE(p.out.find(" probes (") != std::string::npos);
}

TEST_CASE("list: errors and usage errors", "[list]")
{
	Output gone = run({e2e::usdtprof(), "list", "-p", "999999"});
	REQUIRE(gone.status == 1);
	REQUIRE(gone.err == "usdtprof: no process with pid 999999\n");
	REQUIRE(gone.out.empty());

	Output text = run({e2e::usdtprof(), "list", "/proc/self/status"});
	REQUIRE(text.status == 1);
	REQUIRE(text.err == "usdtprof: /proc/self/status: not an ELF file\n");

	Output missing = run({e2e::usdtprof(), "list", "/nonexistent/binary"});
	REQUIRE(missing.status == 1);
	REQUIRE(missing.err == "usdtprof: /nonexistent/binary: No such file or directory\n");

	for (const std::vector<std::string> &args :
	     {std::vector<std::string>{}, {"-p", "1", "/bin/true"}, {"-p", "0"}, {"--format", "xml", "/bin/true"}}) {
		std::vector<std::string> argv = {e2e::usdtprof(), "list"};
		argv.insert(argv.end(), args.begin(), args.end());
		Output o = run(argv);
		INFO(o.err);
		REQUIRE(o.status == 2);
		REQUIRE(o.out.empty());
		REQUIRE(std::count(o.err.begin(), o.err.end(), '\n') == 1);
	}
}
