// Files of targets: the maps line's device and inode, the checks an opened
// file must pass, and the caps on probe sites.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "engine/probes.h"
#include "target/proc_maps.h"
#include "target/target_file.h"
#include "target/usdt.h"

using namespace usdtprof;

namespace {

// This process's executable mapping of its own binary.
Mapping own_exe_mapping()
{
	auto maps = read_proc_maps(getpid());
	REQUIRE(maps);
	struct stat st;
	REQUIRE(stat("/proc/self/exe", &st) == 0);
	for (const Mapping &m : executable_mappings(*maps))
		if (m.inode == st.st_ino)
			return m;
	FAIL("no executable mapping of /proc/self/exe");
	return {};
}

std::string scratch_dir()
{
	char tmpl[] = "/tmp/usdtprof-unit-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != nullptr);
	return tmpl;
}

} // namespace

TEST_CASE("parse_proc_maps reads the device of each line as stat's st_dev", "[target_file]")
{
	auto maps = parse_proc_maps("1000-2000 r-xp 00000000 08:01 42 /a\n"
				    "3000-4000 r-xp 00000000 fd:1f 43 /b\n"
				    "5000-6000 r-xp 00000000 zz:01 44 /bad-dev\n"
				    "7000-8000 r-xp 00000000 0801 45 /no-colon\n");
	REQUIRE(maps.size() == 2);
	CHECK(maps[0].dev == makedev(8, 1));
	CHECK(maps[0].inode == 42);
	CHECK(maps[1].dev == makedev(0xfd, 0x1f));
}

TEST_CASE("executable_mappings: one per device and inode, not per path", "[target_file]")
{
	auto maps = parse_proc_maps("1000-2000 r-xp 00000000 08:01 42 /a\n"
				    "2000-3000 r-xp 00001000 08:01 42 /a-hardlink\n"
				    "3000-4000 r-xp 00000000 08:02 42 /same-inode-other-device\n"
				    "4000-5000 r--p 00000000 08:01 50 /not-executable\n"
				    "5000-6000 r-xp 00000000 08:01 51 /gone (deleted)\n");
	auto exec = executable_mappings(maps);
	REQUIRE(exec.size() == 2);
	CHECK(exec[0].path == "/a");
	CHECK(exec[1].path == "/same-inode-other-device");
}

TEST_CASE("is_mapped_file: a regular file with the maps line's device and inode", "[target_file]")
{
	Mapping m = own_exe_mapping();
	struct stat st;
	REQUIRE(stat("/proc/self/exe", &st) == 0);
	CHECK(is_mapped_file(st, m));
	Mapping other_inode = m, other_dev = m;
	other_inode.inode++;
	other_dev.dev = makedev(major(m.dev) + 1, minor(m.dev));
	CHECK_FALSE(is_mapped_file(st, other_inode));
	CHECK_FALSE(is_mapped_file(st, other_dev));
	struct stat dir;
	REQUIRE(stat("/", &dir) == 0);
	Mapping root = m;
	root.dev = dir.st_dev;
	root.inode = dir.st_ino;
	CHECK_FALSE(is_mapped_file(dir, root)); // same numbers, not a regular file
}

TEST_CASE("open_mapped_file opens the mapped file itself and refuses another one", "[target_file]")
{
	Mapping m = own_exe_mapping();
	auto file = open_mapped_file(getpid(), m);
	REQUIRE(file);
	CHECK((*file)->ino == m.inode);
	CHECK((*file)->path == m.path);
	CHECK_FALSE((*file)->sites.empty()); // this binary has our header's probes
	struct stat st;
	REQUIRE(stat((*file)->fd_path().c_str(), &st) == 0);
	CHECK(st.st_ino == m.inode);

	Mapping lie = m;
	lie.inode++;
	auto refused = open_mapped_file(getpid(), lie);
	REQUIRE_FALSE(refused);
	CHECK(refused.error().message == m.path + ": not the file the process maps");
}

TEST_CASE("open_named_file refuses a FIFO without blocking, and a directory", "[target_file]")
{
	std::string dir = scratch_dir();
	std::string fifo = dir + "/fifo";
	REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
	auto f = open_named_file(fifo); // would block forever in a blocking open
	REQUIRE_FALSE(f);
	CHECK(f.error().message == fifo + ": not a regular file");
	auto d = open_named_file(dir);
	REQUIRE_FALSE(d);
	CHECK(d.error().message == dir + ": not a regular file");
	auto sites = read_usdt_sites(fifo);
	REQUIRE_FALSE(sites);
	std::filesystem::remove_all(dir);
}

TEST_CASE("read_usdt_sites stops at its cap of sites per file and says so", "[target_file]")
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	bool cut = true;
	auto all = read_usdt_sites(fd, "self", &cut);
	REQUIRE(all);
	REQUIRE(all->size() > 3);
	CHECK_FALSE(cut);
	auto three = read_usdt_sites(fd, "self", &cut, 3);
	REQUIRE(three);
	CHECK(cut);
	REQUIRE(three->size() == 3);
	for (size_t i = 0; i < 3; i++)
		CHECK((*three)[i].pc == (*all)[i].pc);
	auto exact = read_usdt_sites(fd, "self", &cut, all->size());
	REQUIRE(exact);
	CHECK_FALSE(cut);
	CHECK(exact->size() == all->size());
	close(fd);
}

TEST_CASE("find_sites attaches at most kMaxSitesTotal sites in all", "[target_file]")
{
	auto file = std::make_shared<TargetFile>();
	file->path = "/many";
	for (int i = 0; i < 10; i++) {
		UsdtSite s;
		s.provider = "usdtprof";
		s.name = i % 2 ? "exit" : "enter";
		s.pc_offset = uint64_t(i);
		file->sites.push_back(s);
	}
	std::vector<TargetFilePtr> files = {file, file};
	auto roles = native_probe_roles();
	CHECK(find_sites(files, 7, roles).size() == 20);
	auto last = find_sites(files, 7, roles, kMaxSitesTotal - 4);
	REQUIRE(last.size() == 4);
	CHECK(last[0].pid == 7);
	CHECK(last[0].file == file);
	CHECK(find_sites(files, 7, roles, kMaxSitesTotal).empty());
}
