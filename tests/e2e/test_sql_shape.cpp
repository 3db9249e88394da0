// The SQL-shape lexer is written twice: in C++ (userspace/target/sql.cpp,
// naming a query) and for BPF (tools/gen_sql_table.c, whose rules become the
// tables bpf/sql.bpf.h walks, hashing a query into its function id). Here the
// BPF copy, compiled into a test program
// (tests/bpf/sql_shape.bpf.c) and run by the kernel with BPF_PROG_TEST_RUN,
// hashes the C++ copy's test cases and random statements; each hash must be
// FNV-1a of the C++ copy's key (sql_shape_key) for the same text.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../unit/target/sql_cases.h"
#include "bpf_text_program.h"
#include "target/sql.h"
#include "tests/bpf/sql_shape.skel.h"

namespace {

using namespace usdtprof::test;
using Skeleton = OwnedSkeleton<sql_shape_bpf, sql_shape_bpf__destroy>;

Skeleton load_lexer()
{
	return require_loaded<sql_shape_bpf__destroy>(sql_shape_bpf__open_and_load());
}

uint64_t fnv1a(std::string_view s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned char c : s)
		h = (h ^ c) * 0x100000001b3ULL;
	return h;
}

// The function id the engine gives a query of this text: the BPF lexer run by
// the kernel on it, as the engine runs it on a string read from the target
// (its length counting the NUL).
uint64_t bpf_shape_hash(sql_shape_bpf &skel, std::string_view text)
{
	put_text(*skel.bss, text);
	skel.bss->shape_hash = 0;
	run_once(skel.progs.sql_shape);
	return skel.bss->shape_hash;
}

} // namespace

TEST_CASE("sql shape: the BPF lexer hashes the C++ lexer's cases as the C++ lexer shapes them", "[sql]")
{
	Skeleton skel = load_lexer();
	for (const SqlCase &c : all_sql_cases()) {
		CAPTURE(c.text, usdtprof::sql_shape_key(c.text));
		CHECK(bpf_shape_hash(*skel, c.text) == fnv1a(usdtprof::sql_shape_key(c.text)));
	}
	// pgbench's two UPDATEs differ only in a literal (one with a minus): one id.
	CHECK(bpf_shape_hash(*skel, kPgbenchSqlCases[0].text) == bpf_shape_hash(*skel, kPgbenchSqlCases[1].text));
	CHECK(bpf_shape_hash(*skel, kPgbenchSqlCases[0].text) != bpf_shape_hash(*skel, kPgbenchSqlCases[2].text));
}

TEST_CASE("sql shape: the BPF and C++ lexers agree on random statements", "[sql]")
{
	Skeleton skel = load_lexer();
	// Every character class the lexers tell apart: quotes, digits, minus,
	// the operators before a unary minus, white space, identifiers (bytes
	// from 0x80 too), a NUL that ends the text, and the rest.
	static const std::string alphabet = std::string("''--0123456789.. \t\n\r(),=<>+*/%^|;xyZ_$") + "\xc3\xa9" + '\0';
	std::mt19937 random(15);
	std::uniform_int_distribution<size_t> length(0, 40), pick(0, alphabet.size() - 1);
	for (int i = 0; i < 3000; i++) {
		std::string text(length(random), ' ');
		for (char &c : text)
			c = alphabet[pick(random)];
		CAPTURE(text, usdtprof::sql_shape_key(text));
		REQUIRE(bpf_shape_hash(*skel, text) == fnv1a(usdtprof::sql_shape_key(text)));
	}
}

TEST_CASE("sql shape: the lexers agree on statements up to the longest read, a loop step's characters and the text's end apart", "[sql]")
{
	// The BPF lexer takes several characters a loop step (SQL_STEP): a
	// literal, a minus or white space across a step's end, the text's end
	// anywhere in a step, and texts of every length up to what the engine
	// reads (the buffer's size less the NUL).
	Skeleton skel = load_lexer();
	const size_t max = sizeof(skel->bss->text);
	static const std::string alphabet = std::string("''--0123456789.. \t\n(),=<+*;xyZ_$") + "\xc3\xa9" + "SELECT ";
	std::mt19937 random(16);
	std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
	std::vector<size_t> lengths;
	for (size_t n = 0; n <= 80; n++)
		lengths.push_back(n);
	for (size_t n = max - 40; n < max; n++)
		lengths.push_back(n);
	std::uniform_int_distribution<size_t> any(0, max - 1);
	for (int i = 0; i < 200; i++)
		lengths.push_back(any(random));
	for (size_t n : lengths) {
		std::string text(n, ' ');
		for (char &c : text)
			c = alphabet[pick(random)];
		CAPTURE(n, text, usdtprof::sql_shape_key(text));
		REQUIRE(bpf_shape_hash(*skel, text) == fnv1a(usdtprof::sql_shape_key(text)));
	}
}
