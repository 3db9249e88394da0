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

// A PHP without php:request__startup would never say when it frees the names a thread pinned.
TEST_CASE("names are pinned only in a file with the probe at which they are freed", "[probes]")
{
	ProbeRole entry;
	entry.provider = "php";
	entry.name = "function__entry";
	entry.content_mask = 0b111 | USDTPROF_CONTENT_CACHED | USDTPROF_CONTENT_PINNED;
	entry.names_freed_at = "request__startup";
	auto site = [](const char *provider, const char *name) {
		UsdtSite s;
		s.provider = provider;
		s.name = name;
		return s;
	};
	CHECK(site_content_mask(entry, {site("php", "function__entry"), site("php", "request__startup")}) ==
	      entry.content_mask);
	CHECK(site_content_mask(entry, {site("php", "function__entry")}) == (0b111 | USDTPROF_CONTENT_CACHED));
	CHECK(site_content_mask(entry, {site("php", "function__entry"), site("other", "request__startup")}) ==
	      (0b111 | USDTPROF_CONTENT_CACHED));
	entry.content_mask = 0b11;
	CHECK(site_content_mask(entry, {}) == 0b11);
}
