#include <catch2/catch.hpp>

#include "engine/probes.h"

using namespace usdtprof;

namespace {

// A site of provider `usdtprof` passing args, as sys/sdt.h's note lists them.
FoundSite header_site(std::vector<std::string> args, const std::string &provider = "usdtprof")
{
	FoundSite f;
	f.probe.provider = provider;
	f.probe.name = "enter";
	f.site.provider = provider;
	f.site.name = "enter";
	f.site.args = std::move(args);
	return f;
}

} // namespace

TEST_CASE("our header's sites: four clock reads, three from older headers, none from the oldest", "[probes]")
{
	usdtprof_probe_spec spec{};
	place_clock_args(header_site({"8@%rdi", "8@%rax", "8@%rdx", "8@%rcx", "8@%rsi"}), spec);
	REQUIRE(spec.inband == USDTPROF_INBAND);
	CHECK(spec.clock_args[0].reg == USDTPROF_REG_AX);
	CHECK(spec.clock_args[3].reg == USDTPROF_REG_SI);
	CHECK(spec.clock_args[3].kind == USDTPROF_ARG_REG);

	usdtprof_probe_spec old{};
	place_clock_args(header_site({"8@%rdi", "8@%rax", "8@%rdx", "8@%rcx"}), old);
	REQUIRE(old.inband == USDTPROF_INBAND_OLD);
	CHECK(old.clock_args[2].reg == USDTPROF_REG_CX);
	CHECK(old.clock_args[3].kind == 0);

	usdtprof_probe_spec oldest{};
	place_clock_args(header_site({"8@%rdi"}), oldest);
	CHECK(oldest.inband == 0);
}

TEST_CASE("clock reads are taken only from our provider's sites, in 8-byte registers", "[probes]")
{
	usdtprof_probe_spec other{};
	place_clock_args(header_site({"8@%rdi", "8@%rax", "8@%rdx", "8@%rcx", "8@%rsi"}, "php"), other);
	CHECK(other.inband == 0);
	usdtprof_probe_spec in_memory{};
	place_clock_args(header_site({"8@%rdi", "8@%rax", "8@-8(%rbp)", "8@%rcx", "8@%rsi"}), in_memory);
	CHECK(in_memory.inband == 0);
	usdtprof_probe_spec narrow{};
	place_clock_args(header_site({"8@%rdi", "8@%rax", "4@%edx", "8@%rcx"}), narrow);
	CHECK(narrow.inband == 0);
	usdtprof_probe_spec none{};
	place_clock_args(header_site({}), none);
	CHECK(none.inband == 0);
}
