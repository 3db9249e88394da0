// The content hash that keys names a runtime passes as fresh copies (Ruby's
// class names, PHP's names, --pair ...:str) takes several characters a
// bpf_loop step (bpf/content.bpf.h). Here it is compiled into a test program
// (tests/bpf/content_hash.bpf.c) and run by the kernel with
// BPF_PROG_TEST_RUN: each hash must be the one a character at a time gives,
// FNV-1a of the text, for a Ruby name of a class without one ("#<Class:0x...>")
// without the hex digits after each ":0x".
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bpf_text_program.h"
#include "usdtprof/bpf_shared.h"
#include "tests/bpf/content_hash.skel.h"

namespace {

using namespace usdtprof::test;
using Skeleton = OwnedSkeleton<content_hash_bpf, content_hash_bpf__destroy>;

Skeleton load_hash()
{
	return require_loaded<content_hash_bpf__destroy>(content_hash_bpf__open_and_load());
}

bool hex_digit(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// The hash a character at a time, as the engine took it before its steps
// took several.
uint64_t one_at_a_time(std::string_view text, bool anon)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int seen = 0; // how much of ":0x" was just seen
	anon = anon && !text.empty() && text[0] == '#';
	for (unsigned char c : text) {
		if (anon) {
			if (seen == 3 && hex_digit(c))
				continue;
			seen = c == ':' ? 1 : seen == 1 && c == '0' ? 2 : seen == 2 && c == 'x' ? 3 : 0;
		}
		h = (h ^ c) * 0x100000001b3ULL;
	}
	return h;
}

// The kernel's hash of text, as the engine hashes a string it read (its
// length counting the NUL).
uint64_t bpf_hash(content_hash_bpf &skel, std::string_view text, bool anon)
{
	REQUIRE(text.size() < USDTPROF_CONTENT_MAX);
	put_text(*skel.bss, text);
	skel.bss->anon = anon;
	skel.bss->content_hash = 0;
	run_once(skel.progs.content_hash_of_text);
	return skel.bss->content_hash;
}

// The kernel's hash of a class without a name known without the loop:
// whether it took text, and the hash.
std::pair<bool, uint64_t> bpf_anonymous_hash(content_hash_bpf &skel, std::string_view text)
{
	put_text(*skel.bss, text);
	run_once(skel.progs.anonymous_hash_of_text);
	return {skel.bss->anonymous_found != 0, skel.bss->anonymous_hash};
}

} // namespace

TEST_CASE("content hash: Ruby's names of classes without one are keyed without their addresses", "[names]")
{
	Skeleton skel = load_hash();
	std::string a = "#<Class:0x00007f3a1c2b4e58>", b = "#<Class:0x00007f3a1c2b9f10>";
	CHECK(bpf_hash(*skel, a, true) == bpf_hash(*skel, b, true));
	CHECK(bpf_hash(*skel, a, true) == one_at_a_time("#<Class:0x>", false));
	CHECK(bpf_hash(*skel, a, false) != bpf_hash(*skel, b, false));
	// Only a name starting with '#' is such a name.
	CHECK(bpf_hash(*skel, "Foo:0x12", true) == one_at_a_time("Foo:0x12", false));
	CHECK(bpf_hash(*skel, "", true) == 0xcbf29ce484222325ULL);
}

TEST_CASE("content hash: texts of every length to the longest read, an address anywhere in a loop step", "[names]")
{
	Skeleton skel = load_hash();
	// The characters the anonymous names' rule tells apart, and others.
	static const std::string alphabet = std::string("#:0x0123456789abcdefABz<>_ ") + "\xc3\xa9\x80\xff";
	std::mt19937 random(19);
	std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
	for (size_t length = 0; length < USDTPROF_CONTENT_MAX; length++)
		for (int round = 0; round < 4; round++) {
			std::string text(length, ' ');
			for (char &c : text)
				c = alphabet[pick(random)];
			if (round % 2 == 0 && length > 0)
				text[0] = '#';
			for (bool anon : {false, true}) {
				CAPTURE(text, anon);
				REQUIRE(bpf_hash(*skel, text, anon) == one_at_a_time(text, anon));
			}
		}
	// ":0x" and its digits starting at every offset of a loop step and across its end.
	for (size_t at = 1; at < 40; at++) {
		std::string text = "#<Class" + std::string(at, 'k') + ":0x00007fab>#m";
		CAPTURE(text);
		REQUIRE(bpf_hash(*skel, text, true) == one_at_a_time(text, true));
		REQUIRE(bpf_hash(*skel, text, true) == one_at_a_time("#<Class" + std::string(at, 'k') + ":0x>#m", false));
	}
}

TEST_CASE("content hash: a class's or module's name without one is known without the loop, and only such a name",
	  "[names]")
{
	Skeleton skel = load_hash();
	std::mt19937 random(23);
	const std::string hex = "0123456789abcdef";
	std::uniform_int_distribution<size_t> digit(0, hex.size() - 1);
	auto address = [&] {
		std::string a(16, '0');
		for (char &c : a)
			c = hex[digit(random)];
		return a;
	};
	for (int round = 0; round < 200; round++)
		for (const char *kind : {"#<Class:0x", "#<Module:0x"}) {
			std::string name = kind + address() + ">";
			CAPTURE(name);
			auto [taken, hash] = bpf_anonymous_hash(*skel, name);
			REQUIRE(taken);
			REQUIRE(hash == bpf_hash(*skel, name, true));
			REQUIRE(hash == one_at_a_time(name, true));
		}
	// Anything else is left to the loop: names inside such a class, a
	// singleton class's, other lengths and digits, other kinds of objects.
	const std::string a = address();
	for (const std::string &other : std::vector<std::string>{"#<Class:0x" + a + ">::Inner", "#<Class:#<Class:0x" + a + ">>", "#<Class:0x" + a.substr(1) + ">",
	      "#<Class:0x" + a + "0>", "#<Class:0x" + a.substr(0, 15) + "A>", "#<Class:0x" + a + ")",
	      "#<Module:0x" + a + ">x", "#<Struct:0x" + a + ">", "#<Class:0X" + a + ">", "Foo", "", "#<Class:0x"}) {
		CAPTURE(other);
		REQUIRE_FALSE(bpf_anonymous_hash(*skel, other).first);
	}
}
