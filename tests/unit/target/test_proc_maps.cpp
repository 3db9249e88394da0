#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "target/proc_maps.h"

using namespace usdtprof;

namespace {

// As the kernel prints it: anonymous mappings end in "0 " with no path, and
// malformed lines mixed in must be skipped. The last line has no newline.
const std::string kMaps =
	"55d4c0a00000-55d4c0a02000 r--p 00000000 08:01 1048601                    /usr/bin/my app\n"
	"55d4c0a02000-55d4c0a07000 r-xp 00002000 08:01 1048601                    /usr/bin/my app\n"
	"55d4c0a07000-55d4c0a09000 r--p 00007000 08:01 1048601                    /usr/bin/my app\n"
	"55d4c0a0a000-55d4c0a0b000 rw-p 00009000 08:01 1048601                    /usr/bin/my app\n"
	"55d4c1e8b000-55d4c1eac000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f1a2c000000-7f1a2c021000 rw-p 00000000 00:00 0 \n"
	"this line is garbage\n"
	"\n"
	"7f1a2e400000-7f1a2e428000 r--p 00000000 fd:00 1051234                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f1a2e428000-7f1a2e59d000 r-xp 00028000 fd:00 1051234                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f1a2e5a0000-7f1a2e59f000 r-xp 00000000 fd:00 1 /backwards\n"
	"7f1a2e600000-7f1a2e601000 r-xp 00001000 08:01 1060000                    /tmp/old plugin.so (deleted)\n"
	"zz-7f1a2e6ff000 r-xp 00000000 08:01 1 /bad/start\n"
	"7f1a2e700000-7f1a2e701000 rwxp 00000000 00:00 0 \n"
	"7f1a2e800000-7f1a2e801000 r-xp 0000000g 08:01 1 /bad/offset\n"
	"7fff5a1b2000-7fff5a1d3000 rw-p 00000000 00:00 0                          [stack]\n"
	"7fff5a1f6000-7fff5a1fa000 r--p 00000000 00:00 0                          [vvar]\n"
	"7fff5a1fa000-7fff5a1fc000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

} // namespace

TEST_CASE("parse_proc_maps parses addresses, permissions, paths with spaces; skips malformed lines") {
	const std::vector<Mapping> maps = parse_proc_maps(kMaps);
	REQUIRE(maps.size() == 14);

	SECTION("file-backed executable mapping whose path has a space") {
		const Mapping &m = maps[1];
		CHECK(m.start == 0x55d4c0a02000);
		CHECK(m.end == 0x55d4c0a07000);
		CHECK(m.offset == 0x2000);
		CHECK(m.readable);
		CHECK_FALSE(m.writable);
		CHECK(m.executable);
		CHECK(m.inode == 1048601);
		CHECK(m.path == "/usr/bin/my app");
	}
	SECTION("anonymous mapping has an empty path") {
		const Mapping &m = maps[5];
		CHECK(m.start == 0x7f1a2c000000);
		CHECK(m.inode == 0);
		CHECK(m.writable);
		CHECK_FALSE(m.executable);
		CHECK(m.path.empty());
	}
	SECTION("pseudo-files and deleted files keep their names") {
		CHECK(maps[4].path == "[heap]");
		CHECK(maps[8].path == "/tmp/old plugin.so (deleted)");
		CHECK(maps[8].offset == 0x1000);
		CHECK(maps[12].path == "[vdso]");
	}
	SECTION("the last line needs no newline, and 64-bit addresses do not overflow") {
		const Mapping &m = maps.back();
		CHECK(m.start == 0xffffffffff600000);
		CHECK(m.end == 0xffffffffff601000);
		CHECK_FALSE(m.readable);
		CHECK(m.executable);
		CHECK(m.path == "[vsyscall]");
	}
	SECTION("empty text gives no mappings") {
		CHECK(parse_proc_maps("").empty());
	}
}

TEST_CASE("executable_files lists distinct real files in first-seen order") {
	const std::vector<std::string> files = executable_files(parse_proc_maps(kMaps));
	CHECK(files == std::vector<std::string>{"/usr/bin/my app", "/usr/lib/x86_64-linux-gnu/libc.so.6"});
}

TEST_CASE("mapping_for finds the mapping containing an address, end exclusive") {
	const std::vector<Mapping> maps = parse_proc_maps(kMaps);
	SECTION("first byte of a mapping") {
		std::optional<Mapping> m = mapping_for(maps, 0x55d4c0a02000);
		REQUIRE(m);
		CHECK(m->offset == 0x2000);
	}
	SECTION("last byte of a mapping") {
		std::optional<Mapping> m = mapping_for(maps, 0x55d4c0a06fff);
		REQUIRE(m);
		CHECK(m->start == 0x55d4c0a02000);
	}
	SECTION("end of one mapping is the start of the next") {
		std::optional<Mapping> m = mapping_for(maps, 0x55d4c0a07000);
		REQUIRE(m);
		CHECK(m->offset == 0x7000);
	}
	SECTION("gaps, and addresses before the first or after the last mapping") {
		CHECK_FALSE(mapping_for(maps, 0x55d4c0a09000));
		CHECK_FALSE(mapping_for(maps, 0x1000));
		CHECK_FALSE(mapping_for(maps, 0xffffffffff601000));
		CHECK_FALSE(mapping_for({}, 0x55d4c0a02000));
	}
}

TEST_CASE("read_proc_maps of this process lists this test binary as executable") {
	Result<std::vector<Mapping>> maps = read_proc_maps(getpid());
	REQUIRE(maps);
	const std::string exe = std::filesystem::read_symlink("/proc/self/exe");
	const std::vector<std::string> files = executable_files(*maps);
	CHECK(std::find(files.begin(), files.end(), exe) != files.end());
	// Code linked into this binary lies in one of its executable mappings.
	std::optional<Mapping> m = mapping_for(*maps, reinterpret_cast<uintptr_t>(&executable_files));
	REQUIRE(m);
	CHECK(m->executable);
	CHECK(m->path == exe);
}

TEST_CASE("read_proc_maps of a pid that does not exist says so") {
	Result<std::vector<Mapping>> maps = read_proc_maps(INT_MAX);
	REQUIRE_FALSE(maps);
	CHECK(maps.error().message == "no process with pid " + std::to_string(INT_MAX));
}
