#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <stdlib.h>

#include "base/output_file.h"

using namespace usdtprof;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed with what is in it when the test ends.
struct TempDir {
	std::string path;
	TempDir()
	{
		path = (fs::temp_directory_path() / "usdtprof-output-file-XXXXXX").string();
		REQUIRE(mkdtemp(path.data()));
	}
	~TempDir() { fs::remove_all(path); }
};

} // namespace

TEST_CASE("same_file: one device and inode, however the paths spell it")
{
	TempDir dir;
	const std::string a = dir.path + "/a.data", b = dir.path + "/b.data";
	std::ofstream(a) << "a";
	std::ofstream(b) << "b";
	fs::create_directory(dir.path + "/sub");

	REQUIRE(same_file(a, a));
	REQUIRE_FALSE(same_file(a, b));
	SECTION("another spelling of one path") { REQUIRE(same_file(a, dir.path + "/sub/../a.data")); }
	SECTION("a symlink is followed")
	{
		fs::create_symlink(a, dir.path + "/link");
		REQUIRE(same_file(dir.path + "/link", a));
		REQUIRE_FALSE(same_file(dir.path + "/link", b));
	}
	SECTION("a hard link is one file under two names")
	{
		fs::create_hard_link(a, dir.path + "/hard");
		REQUIRE(same_file(a, dir.path + "/hard"));
	}
	SECTION("a copy is another file")
	{
		fs::copy_file(a, dir.path + "/copy");
		REQUIRE_FALSE(same_file(a, dir.path + "/copy"));
	}
}

TEST_CASE("same_file: paths not there yet are one file when they resolve to one place")
{
	TempDir dir;
	const std::string fresh = dir.path + "/new.data";
	REQUIRE(same_file(fresh, dir.path + "/./new.data"));
	REQUIRE_FALSE(same_file(fresh, dir.path + "/other.data"));
	// A symlink to a name not written yet: write_output follows it and
	// creates that name, so writing either writes the same file. The link may
	// be relative, or a chain of links.
	fs::create_symlink(fresh, dir.path + "/dangling");
	REQUIRE(same_file(dir.path + "/dangling", fresh));
	REQUIRE(same_file(fresh, dir.path + "/dangling"));
	fs::create_directory(dir.path + "/sub");
	fs::create_symlink("../new.data", dir.path + "/sub/relative");
	fs::create_symlink("sub/relative", dir.path + "/chain");
	REQUIRE(same_file(dir.path + "/sub/relative", fresh));
	REQUIRE(same_file(dir.path + "/chain", dir.path + "/dangling"));
	REQUIRE_FALSE(same_file(dir.path + "/dangling", dir.path + "/other.data"));
	REQUIRE(write_output(dir.path + "/chain", "written"));
	REQUIRE(fs::is_symlink(dir.path + "/chain"));
	REQUIRE(fs::is_symlink(dir.path + "/sub/relative"));
	std::ifstream written(fresh);
	REQUIRE(std::string(std::istreambuf_iterator<char>(written), {}) == "written");
	REQUIRE(same_file(dir.path + "/dangling", fresh)); // now both there: one inode
	fs::remove(fresh);
	// An existing file and a new name are never one file.
	std::ofstream(dir.path + "/there") << "x";
	REQUIRE_FALSE(same_file(dir.path + "/there", fresh));
}
