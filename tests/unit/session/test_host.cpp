// monitor --all's pure logic: the cap on processes, the presets looked for.
#include <catch2/catch.hpp>

#include "base/result.h"
#include "session/host.h"

using usdtprof::ProcessCap;

TEST_CASE("ProcessCap: admits up to max, refuses beyond, the first refusal said once; an exit frees a slot")
{
	ProcessCap cap(2);
	REQUIRE(cap.admit(10) == ProcessCap::Admit::Yes);
	REQUIRE(cap.admit(11) == ProcessCap::Admit::Yes);
	REQUIRE(cap.admit(10) == ProcessCap::Admit::Yes); // admitted already: no slot taken
	REQUIRE(cap.count() == 2);
	REQUIRE(cap.admit(12) == ProcessCap::Admit::RefusedFirst);
	REQUIRE(cap.admit(13) == ProcessCap::Admit::Refused);
	REQUIRE(cap.refused() == 2);
	cap.release(10);
	REQUIRE(cap.count() == 1);
	REQUIRE(cap.admit(13) == ProcessCap::Admit::Yes);
	REQUIRE(cap.admit(14) == ProcessCap::Admit::Refused); // said once per run, not once per time it fills
	REQUIRE(cap.refused() == 3);
}

TEST_CASE("host_presets: default every preset but ruby's; --runtime several, each once; unknown refused")
{
	std::string names;
	for (const usdtprof::Preset *p : usdtprof::host_presets({}))
		names += std::string(p->name) + " ";
	REQUIRE(names == "native php java python postgres ");
	auto two = usdtprof::host_presets({"php", "native", "php"});
	REQUIRE(two.size() == 2);
	REQUIRE(std::string(two[0]->name) == "php");
	REQUIRE(std::string(two[1]->name) == "native");
	REQUIRE(usdtprof::host_presets({"ruby"}).size() == 1);
	REQUIRE_THROWS_AS(usdtprof::host_presets({"cobol"}), usdtprof::UserError);
}
