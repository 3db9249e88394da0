#include <catch2/catch.hpp>

#include <random>

#include <nlohmann/json.hpp>

#include "base/text_escape.h"

using namespace usdtprof;

namespace {

// No byte a terminal acts on: no C0 control, no DEL, no raw C1 byte outside a
// valid multi-byte sequence, and valid UTF-8 throughout.
bool terminal_safe(const std::string &s)
{
	for (unsigned char c : s)
		if (c < 0x20 || c == 0x7f)
			return false;
	return valid_utf8(s) == s && s.find("\xc2\x9b") == std::string::npos && s.find("\xc2\x85") == std::string::npos;
}

} // namespace

TEST_CASE("escape_text keeps printable UTF-8 as it is", "[escape]")
{
	CHECK(escape_text("main") == "main");
	CHECK(escape_text("App\\Controller\\Home::index") == "App\\Controller\\Home::index");
	CHECK(escape_text("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
	CHECK(escape_text("") == "");
}

TEST_CASE("escape_text escapes C0 controls and DEL as \\xNN", "[escape]")
{
	CHECK(escape_text("a\x1b]0;pwned\x07z") == "a\\x1b]0;pwned\\x07z");
	CHECK(escape_text("line\r\nfake") == "line\\x0d\\x0afake");
	CHECK(escape_text(std::string("nul\0tab\t", 8)) == "nul\\x00tab\\x09");
	CHECK(escape_text("del\x7f") == "del\\x7f");
}

TEST_CASE("escape_text escapes C1 controls, line separators and bidi overrides", "[escape]")
{
	CHECK(escape_text("csi\xc2\x9b" "2J") == "csi\\u009b2J");
	CHECK(escape_text("nel\xc2\x85") == "nel\\u0085");
	CHECK(escape_text("ls\xe2\x80\xa8ps\xe2\x80\xa9") == "ls\\u2028ps\\u2029");
	CHECK(escape_text("rlo\xe2\x80\xae" "cba") == "rlo\\u202ecba");
	CHECK(escape_text("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");
	// U+00A0 (no-break space) is the first code point past C1: printable.
	CHECK(escape_text("\xc2\xa0") == "\xc2\xa0");
}

TEST_CASE("escape_text escapes each byte of invalid UTF-8", "[escape]")
{
	CHECK(escape_text("raw\x9b" "c1") == "raw\\x9bc1");         // lone C1 byte: CSI on 8-bit terminals
	CHECK(escape_text("\xff\xfe") == "\\xff\\xfe");
	CHECK(escape_text("\xc0\xaf") == "\\xc0\\xaf");             // overlong '/'
	CHECK(escape_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");     // surrogate
	CHECK(escape_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80"); // above U+10FFFF
	CHECK(escape_text("cut\xe6\x97") == "cut\\xe6\\x97");       // truncated at the end
	CHECK(escape_text("\xe6\x97" "a") == "\\xe6\\x97a");         // truncated before ASCII: 'a' kept
}

TEST_CASE("escape_text output is terminal safe for any bytes", "[escape]")
{
	std::mt19937 rng(42);
	for (int round = 0; round < 20000; round++) {
		std::string s(rng() % 12, '\0');
		for (char &c : s)
			c = static_cast<char>(rng());
		std::string e = escape_text(s);
		INFO(e);
		REQUIRE(terminal_safe(e));
	}
}

TEST_CASE("valid_utf8 replaces ill-formed sequences as nlohmann::json's replace does", "[escape]")
{
	CHECK(valid_utf8("ok \xc3\xa9") == "ok \xc3\xa9");
	CHECK(valid_utf8("a\xff" "b") == "a\xef\xbf\xbd" "b");
	CHECK(valid_utf8("\xe6\x97" "a") == "\xef\xbf\xbd" "a");
	std::mt19937 rng(7);
	for (int round = 0; round < 20000; round++) {
		std::string s(rng() % 10, '\0');
		for (char &c : s)
			c = static_cast<char>(0x7f + rng() % 0x81); // mostly non-ASCII: many ill-formed cases
		std::string ours = valid_utf8(s);
		std::string theirs = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
		INFO(nlohmann::json(ours).dump(-1, ' ', true));
		REQUIRE(nlohmann::json(ours).dump() == theirs);
		REQUIRE(valid_utf8(ours) == ours);
	}
}
