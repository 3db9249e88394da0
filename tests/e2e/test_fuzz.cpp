// The libFuzzer targets of `make fuzz` (tests/fuzz/) as regression tests: each
// replays its committed corpus and then a fixed number of mutations from a
// fixed seed, so a parser change that crashes on known or nearby input (or a
// fuzzer that no longer builds: make test builds them) fails the suite. The
// seed fixes the mutations but not all of libFuzzer's choices (they follow
// coverage, which moves a little from run to run), so runs differ slightly:
// a failure here is a crash of a parser, with the crashing input kept in the
// scratch directory the failure names. The open-ended search stays in `make fuzz`.
#include <catch2/catch.hpp>
#include <filesystem>

#include "harness.h"

using namespace e2e;
using Catch::Matchers::Contains;

namespace {

// make test passes the directory it built them in; a subset run looks beside usdtprof.
std::string fuzzer(const std::string &name)
{
	const char *dir = getenv("USDTPROF_FUZZERS");
	std::filesystem::path d = dir ? std::filesystem::path(dir)
				      : std::filesystem::path(usdtprof()).parent_path() / "fuzz";
	std::string path = d / ("fuzz_" + name);
	if (!std::filesystem::exists(path))
		FAIL("no " << path << ": run make test (or make " << path << ")");
	return path;
}

void replay_and_mutate(const std::string &name, int runs)
{
	std::string scratch = temp_dir();
	// New inputs go to the first directory (the scratch one), never to the
	// committed corpus; a crash's input to the scratch directory too.
	Output o = run({fuzzer(name), "-seed=1", "-runs=" + std::to_string(runs), "-timeout=60",
			"-artifact_prefix=" + scratch + "/", scratch,
			source_file("tests/fuzz/corpus/" + name)});
	INFO("inputs in " << scratch << "; libFuzzer's log ends:\n"
			  << o.err.substr(o.err.size() > 4000 ? o.err.size() - 4000 : 0));
	CHECK(o.status == 0);
	CHECK_THAT(o.err, Contains("Done " + std::to_string(runs) + " runs"));
	if (o.status == 0)
		std::filesystem::remove_all(scratch);
}

} // namespace

TEST_CASE("fuzz: the profile reader survives its corpus and 5,000 mutations of it", "[fuzz]")
{
	replay_and_mutate("profile", 5000);
}

TEST_CASE("fuzz: the USDT argument parser survives its corpus and 50,000 mutations of it", "[fuzz]")
{
	replay_and_mutate("usdt_arg", 50000);
}

TEST_CASE("fuzz: the probe spec parser survives its corpus and 20,000 mutations of it", "[fuzz]")
{
	replay_and_mutate("probe_spec", 20000);
}
