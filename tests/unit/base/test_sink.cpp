#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "base/sink.h"

using namespace usdtprof;

TEST_CASE("StringSink keeps every byte in order, NUL and all", "[sink]")
{
	StringSink s;
	s.write("ab", 2);
	s.write(std::string_view("\0c", 2));
	s.write("");
	REQUIRE(s.text == std::string("ab\0c", 4));
}

TEST_CASE("ByteCounter counts what it is given and keeps nothing", "[sink]")
{
	ByteCounter c;
	c.write("hello", 5);
	c.write(std::string(70000, 'x'));
	c.write("", 0);
	REQUIRE(c.bytes == 70005);
}

TEST_CASE("CountingSink passes every byte on and counts them", "[sink]")
{
	StringSink next;
	CountingSink counting(next);
	counting.write("one ", 4);
	counting.write(std::string_view("two"));
	REQUIRE(next.text == "one two");
	REQUIRE(counting.bytes == 7);

	// Chained: each counts what passed through it.
	ByteCounter total;
	CountingSink outer(total);
	outer.write("12345");
	REQUIRE(outer.bytes == 5);
	REQUIRE(total.bytes == 5);
}

TEST_CASE("StdioSink writes into its stream, in order", "[sink]")
{
	FILE *f = tmpfile();
	REQUIRE(f);
	{
		StdioSink s(f);
		s.write("first,", 6);
		s.write(std::string_view("second"));
	}
	fflush(f);
	rewind(f);
	char buf[32] = {};
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	REQUIRE(std::string(buf, n) == "first,second");
}
