#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <usdtprof/usdtprof.h>

#include "target/proc_maps.h"
#include "target/usdt.h"

using namespace usdtprof;

namespace {

// The probes read_usdt_sites must find in this very binary.
__attribute__((noinline)) void unit_probe_function() {
	USDTPROF_ENTER("unit_probe");
	USDTPROF_EXIT("unit_probe");
}

std::vector<unsigned char> read_bytes(const std::string &path, uint64_t offset, size_t n) {
	std::ifstream in(path, std::ios::binary);
	in.seekg(static_cast<std::streamoff>(offset));
	std::vector<unsigned char> bytes(n);
	in.read(reinterpret_cast<char *>(bytes.data()), static_cast<std::streamsize>(n));
	REQUIRE(in.gcount() == static_cast<std::streamsize>(n));
	return bytes;
}

usdtprof_arg_spec parse_ok(const std::string &spec) {
	INFO(spec);
	Result<usdtprof_arg_spec> arg = parse_usdt_arg(spec);
	if (!arg)
		FAIL(arg.error().message);
	return *arg;
}

} // namespace

TEST_CASE("parse_usdt_arg maps every register alias to its 64-bit register") {
	struct Case {
		const char *spec;
		usdtprof_reg reg;
		uint32_t size;
		bool is_signed;
	};
	const Case cases[] = {
		{"8@%rax", USDTPROF_REG_AX, 8, false},  {"-4@%eax", USDTPROF_REG_AX, 4, true},
		{"2@%ax", USDTPROF_REG_AX, 2, false},   {"-1@%al", USDTPROF_REG_AX, 1, true},
		{"8@%rbx", USDTPROF_REG_BX, 8, false},  {"1@%bl", USDTPROF_REG_BX, 1, false},
		{"4@%ecx", USDTPROF_REG_CX, 4, false},  {"1@%cl", USDTPROF_REG_CX, 1, false},
		{"2@%dx", USDTPROF_REG_DX, 2, false},   {"8@%rsi", USDTPROF_REG_SI, 8, false},
		{"1@%sil", USDTPROF_REG_SI, 1, false},  {"4@%edi", USDTPROF_REG_DI, 4, false},
		{"1@%dil", USDTPROF_REG_DI, 1, false},  {"8@%rbp", USDTPROF_REG_BP, 8, false},
		{"1@%bpl", USDTPROF_REG_BP, 1, false},  {"8@%rsp", USDTPROF_REG_SP, 8, false},
		{"2@%sp", USDTPROF_REG_SP, 2, false},   {"1@%spl", USDTPROF_REG_SP, 1, false},
		{"8@%r8", USDTPROF_REG_R8, 8, false},   {"-4@%r9d", USDTPROF_REG_R9, 4, true},
		{"2@%r10w", USDTPROF_REG_R10, 2, false}, {"1@%r11b", USDTPROF_REG_R11, 1, false},
		{"8@%r12", USDTPROF_REG_R12, 8, false}, {"8@%r13", USDTPROF_REG_R13, 8, false},
		{"4@%r14d", USDTPROF_REG_R14, 4, false}, {"+8@%r15", USDTPROF_REG_R15, 8, false},
		{"8@%rip", USDTPROF_REG_IP, 8, false},
	};
	for (const Case &c : cases) {
		INFO(c.spec);
		usdtprof_arg_spec arg = parse_ok(c.spec);
		CHECK(arg.kind == USDTPROF_ARG_REG);
		CHECK(arg.reg == static_cast<uint32_t>(c.reg));
		CHECK(arg.size == c.size);
		CHECK(arg.is_signed == c.is_signed);
		CHECK(arg.offset == 0);
	}
}

TEST_CASE("parse_usdt_arg decodes decimal and hex constants with either sign") {
	struct Case {
		const char *spec;
		int64_t value;
		uint32_t size;
		bool is_signed;
	};
	const Case cases[] = {
		{"4@$5", 5, 4, false},
		{"-4@$-5", -5, 4, true},
		{"8@$0", 0, 8, false},
		{"8@$0x1f", 31, 8, false},
		{"-8@$-0X10", -16, 8, true},
		{"2@$+7", 7, 2, false},
		{"8@$-9223372036854775808", INT64_MIN, 8, false},
	};
	for (const Case &c : cases) {
		INFO(c.spec);
		usdtprof_arg_spec arg = parse_ok(c.spec);
		CHECK(arg.kind == USDTPROF_ARG_CONST);
		CHECK(arg.offset == c.value);
		CHECK(arg.size == c.size);
		CHECK(arg.is_signed == c.is_signed);
		CHECK(arg.reg == 0);
	}
}

TEST_CASE("parse_usdt_arg decodes register-relative memory operands") {
	SECTION("negative displacement, signed") {
		usdtprof_arg_spec arg = parse_ok("-4@-16(%rbp)");
		CHECK(arg.kind == USDTPROF_ARG_REG_DEREF);
		CHECK(arg.reg == USDTPROF_REG_BP);
		CHECK(arg.offset == -16);
		CHECK(arg.size == 4);
		CHECK(arg.is_signed == 1);
	}
	SECTION("positive displacement via a 32-bit alias") {
		usdtprof_arg_spec arg = parse_ok("8@24(%esp)");
		CHECK(arg.kind == USDTPROF_ARG_REG_DEREF);
		CHECK(arg.reg == USDTPROF_REG_SP);
		CHECK(arg.offset == 24);
		CHECK(arg.is_signed == 0);
	}
	SECTION("hex displacement") {
		usdtprof_arg_spec arg = parse_ok("2@0x20(%r12)");
		CHECK(arg.reg == USDTPROF_REG_R12);
		CHECK(arg.offset == 32);
		CHECK(arg.size == 2);
	}
	SECTION("no displacement") {
		usdtprof_arg_spec arg = parse_ok("1@(%rdi)");
		CHECK(arg.kind == USDTPROF_ARG_REG_DEREF);
		CHECK(arg.reg == USDTPROF_REG_DI);
		CHECK(arg.offset == 0);
		CHECK(arg.size == 1);
	}
}

TEST_CASE("parse_usdt_arg rejects unsupported or malformed specs with a one-line error") {
	const char *bad[] = {
		"",                 "8",               "%rax",         "@%rax",
		"3@%rax",           "16@%rax",         "0@%rax",       "x@%rax",
		"--8@%rax",         "8@%xmm0",         "8@%rzz",       "8@rax",
		"1@%ah",            "8@(%rax,%rbx,8)", "8@8(,%rax,8)", "8@foo(%rip)",
		"8@-8(%rbp",        "8@-8()",          "8@$",          "8@$abc",
		"8@$0x",            "8@$--1",          "8@%rax ",      "8@%rax)",
	};
	for (const char *spec : bad) {
		INFO(spec);
		Result<usdtprof_arg_spec> arg = parse_usdt_arg(spec);
		REQUIRE_FALSE(arg);
		CHECK(arg.error().message.find('"' + std::string(spec) + '"') != std::string::npos);
		CHECK(arg.error().message.find('\n') == std::string::npos);
	}
}

TEST_CASE("read_usdt_sites finds this binary's usdtprof enter and exit probes at the right offsets") {
	unit_probe_function();
	const std::string exe = std::filesystem::read_symlink("/proc/self/exe");
	Result<std::vector<UsdtSite>> sites = read_usdt_sites("/proc/self/exe");
	REQUIRE(sites);
	Result<std::vector<Mapping>> maps = read_proc_maps(getpid());
	REQUIRE(maps);

	int enters = 0, exits = 0;
	for (const UsdtSite &site : *sites) {
		INFO(site.provider << ":" << site.name << " args \"" << site.args_text << "\"");
		for (const std::string &spec : site.args)
			CHECK(parse_usdt_arg(spec).ok());
		if (site.provider != "usdtprof")
			continue;
		REQUIRE((site.name == "enter" || site.name == "exit"));
		(site.name == "enter" ? enters : exits)++;
		// sys/sdt.h puts a one-byte nop at each probe site; our header adds a
		// 5-byte nop after it, where the probe is attached.
		CHECK(site.pc_offset != 0);
		CHECK(site.nop5_follows);
		CHECK(read_bytes(exe, site.pc_offset - 1, 6) == std::vector<unsigned char>{0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00});
		// The name, then the clock reads (usdtprof.h): each an 8-byte register.
		REQUIRE(site.args.size() == 5);
		for (const std::string &spec : site.args) {
			usdtprof_arg_spec arg = parse_ok(spec);
			CHECK(arg.kind == USDTPROF_ARG_REG);
			CHECK(arg.size == 8);
		}

		// The semaphore is a zero-initialised unsigned short stored in the file...
		REQUIRE(site.semaphore != 0);
		REQUIRE(site.semaphore_offset != 0);
		CHECK(read_bytes(exe, site.semaphore_offset, 2) == std::vector<unsigned char>{0, 0});
		// ...and the offset maps back to the variable's runtime address.
		const volatile unsigned short *sem =
			site.name == "enter" ? &usdtprof_enter_semaphore : &usdtprof_exit_semaphore;
		const auto addr = reinterpret_cast<uintptr_t>(sem);
		std::optional<Mapping> m = mapping_for(*maps, addr);
		REQUIRE(m);
		CHECK(m->path == exe);
		CHECK(m->offset + (addr - m->start) == site.semaphore_offset);
	}
	CHECK(enters >= 1);
	CHECK(exits >= 1);
}

TEST_CASE("read_usdt_sites reads every library mapped here: probe sites are nops, args parse") {
	Result<std::vector<Mapping>> maps = read_proc_maps(getpid());
	REQUIRE(maps);
	for (const std::string &file : executable_files(*maps)) {
		INFO(file);
		Result<std::vector<UsdtSite>> sites = read_usdt_sites(file);
		if (!sites)
			FAIL(sites.error().message);
		for (const UsdtSite &site : *sites) {
			INFO(site.provider << ":" << site.name << " args \"" << site.args_text << "\"");
			if (site.nop5_follows)
				CHECK(read_bytes(file, site.pc_offset - 1, 6) ==
				      std::vector<unsigned char>{0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00});
			else
				CHECK(read_bytes(file, site.pc_offset, 1)[0] == 0x90);
			for (const std::string &spec : site.args)
				CHECK(parse_usdt_arg(spec).ok());
		}
	}
}

TEST_CASE("read_usdt_sites attaches sys/sdt.h's plain sites (libstdc++'s) at their one-byte nop") {
	Result<std::vector<UsdtSite>> sites = read_usdt_sites("/lib/x86_64-linux-gnu/libstdc++.so.6");
	REQUIRE(sites);
	REQUIRE(!sites->empty()); // Debian's libstdc++ has probes (throw, rethrow, catch)
	for (const UsdtSite &site : *sites) {
		INFO(site.provider << ":" << site.name);
		CHECK_FALSE(site.nop5_follows);
		CHECK(read_bytes("/lib/x86_64-linux-gnu/libstdc++.so.6", site.pc_offset, 1)[0] == 0x90);
	}
}

TEST_CASE("read_usdt_sites on a binary without probes gives no sites") {
	Result<std::vector<UsdtSite>> sites = read_usdt_sites("/bin/true");
	REQUIRE(sites);
	CHECK(sites->empty());
}

TEST_CASE("read_usdt_sites reports non-ELF and missing files") {
	SECTION("text file") {
		char path[] = "/tmp/usdtprof_unit_XXXXXX";
		const int fd = mkstemp(path);
		REQUIRE(fd >= 0);
		const char text[] = "not an ELF file, just text\n";
		REQUIRE(write(fd, text, sizeof text - 1) == static_cast<ssize_t>(sizeof text - 1));
		close(fd);
		Result<std::vector<UsdtSite>> sites = read_usdt_sites(path);
		unlink(path);
		REQUIRE_FALSE(sites);
		CHECK(sites.error().message == std::string(path) + ": not an ELF file");
	}
	SECTION("missing file") {
		Result<std::vector<UsdtSite>> sites = read_usdt_sites("/nonexistent/usdtprof");
		REQUIRE_FALSE(sites);
		CHECK(sites.error().message == "/nonexistent/usdtprof: No such file or directory");
	}
}
