// Probe sites of our header: a nop and a 5-byte nop (include/usdtprof/usdtprof.h).
// usdtprof attaches at the 5-byte nop, which a kernel that optimizes uprobes
// rewrites into a call to a trampoline of its own after the first hit: the
// process's code is changed while it runs, so the test checks it is unharmed
// and its code is as before once usdtprof is gone.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"
#include "target/proc_maps.h"
#include "target/usdt.h"

using namespace e2e;
using nlohmann::json;

namespace {

const std::vector<unsigned char> kNopNop5 = {0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00};

// The bytes at a file offset of binary as the process pid sees them now.
std::vector<unsigned char> code_in_process(int pid, const std::string &binary, uint64_t file_offset, size_t n)
{
	auto maps = usdtprof::read_proc_maps(pid);
	REQUIRE(maps);
	for (const usdtprof::Mapping &m : *maps) {
		if (m.path != binary || !m.executable || file_offset < m.offset ||
		    file_offset - m.offset >= m.end - m.start)
			continue;
		std::ifstream mem("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
		mem.seekg(std::streamoff(m.start + (file_offset - m.offset)));
		std::vector<unsigned char> bytes(n);
		mem.read(reinterpret_cast<char *>(bytes.data()), std::streamsize(n));
		REQUIRE(mem.gcount() == std::streamsize(n));
		return bytes;
	}
	FAIL("no executable mapping of " << binary << " holds offset " << file_offset);
	return {};
}

bool mapped(int pid, const std::string &name)
{
	auto maps = usdtprof::read_proc_maps(pid);
	REQUIRE(maps);
	for (const usdtprof::Mapping &m : *maps)
		if (m.path == name)
			return true;
	return false;
}

// This kernel turns a uprobe on a 5-byte nop into a call (x86-64, Linux 6.18+).
bool kernel_optimizes_uprobes()
{
	std::ifstream syms("/proc/kallsyms");
	for (std::string line; std::getline(syms, line);)
		if (line.ends_with(" __x64_sys_uprobe"))
			return true;
	return false;
}

} // namespace

TEST_CASE("header sites: attached at their 5-byte nop, optimized by the kernel, the code restored at detach", "[sites]")
{
	const std::string hot = std::filesystem::canonical(target("hot"));
	auto sites = usdtprof::read_usdt_sites(hot);
	REQUIRE(sites);
	std::vector<uint64_t> offsets;
	for (const usdtprof::UsdtSite &s : *sites)
		if (s.provider == "usdtprof") {
			REQUIRE(s.nop5_follows);
			offsets.push_back(s.pc_offset - 1); // the note's address: the 1-byte nop
		}
	REQUIRE(offsets.size() == 2);

	std::string data = temp_dir() + "/hot.data";
	Background t({hot, "--wait", "600"}); // until SIGTERM
	t.wait_for_line("ready");
	kill(t.pid(), SIGUSR1);
	t.wait_for_line("go");
	Output rec = run({e2e::usdtprof(), "record", "-p", std::to_string(t.pid()), "-d", "1", "-o", data});
	INFO(rec.err);
	REQUIRE(rec.status == 0);

	// The kernel put its trampoline in the process: the sites were hit as calls.
	if (kernel_optimizes_uprobes())
		CHECK(mapped(t.pid(), "[uprobes-trampoline]"));
	else
		WARN("this kernel does not optimize uprobes: every hit was a breakpoint");
	// Detached: the code is the file's again, while the process still runs through it.
	for (uint64_t offset : offsets)
		REQUIRE(code_in_process(t.pid(), hot, offset, kNopNop5.size()) == kNopNop5);
	// It still runs, through the restored code, and ends as it should.
	kill(t.pid(), SIGTERM);
	REQUIRE(t.wait() == 0);
	std::string done = t.wait_for_line("calls");
	uint64_t made = std::stoull(done.substr(done.find(' ') + 1));

	json report = report_json(data);
	require_no_anomalies(report);
	uint64_t recorded = function(report, "work")["calls"];
	REQUIRE(recorded > 0);
	REQUIRE(recorded < made);
	// The calibration measured such sites, not breakpoints, passing clock
	// reads as our header's do.
	std::vector<std::string> kinds;
	for (const json &k : report["calibration"]["kinds"])
		kinds.push_back(k["kind"]);
	REQUIRE(kinds == std::vector<std::string>{"native nop5 in-band"});
}
