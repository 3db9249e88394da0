#include <catch2/catch.hpp>

#include "target/probe_roles.h"

using namespace usdtprof;

TEST_CASE("probe specs: pairs and task triples with an optional argument")
{
	auto pair = parse_pair_spec("myapp:request__start/request__done:arg1");
	REQUIRE(pair.ok());
	REQUIRE(pair->size() == 2);
	CHECK((*pair)[0].provider == "myapp");
	CHECK((*pair)[0].name == "request__start");
	CHECK((*pair)[0].role == USDTPROF_ROLE_ENTRY);
	CHECK((*pair)[1].name == "request__done");
	CHECK((*pair)[1].role == USDTPROF_ROLE_EXIT);
	CHECK((*pair)[1].arg == 1);
	CHECK(parse_pair_spec("p:a/b")->at(0).arg == 0);
	// The exit closes its pair's frame, its arguments unread, unless :match says otherwise.
	CHECK((*pair)[1].ident == USDTPROF_IDENT_PAIR);
	CHECK((*pair)[0].ident == USDTPROF_IDENT_NATIVE);
	CHECK((*pair)[0].pair != 0);
	CHECK((*pair)[0].pair == (*pair)[1].pair);
	auto counted = parse_pair_spec("python:gc__start/gc__done:arg0:int");
	REQUIRE(counted.ok());
	CHECK((*counted)[0].ident == USDTPROF_IDENT_PTRS);
	CHECK((*counted)[1].ident == USDTPROF_IDENT_PAIR);
	CHECK((*counted)[1].parts.empty());
	CHECK((*counted)[0].pair != (*pair)[0].pair);
	auto matched = parse_pair_spec("python:gc__start/gc__done:arg0:int:match");
	REQUIRE(matched.ok());
	CHECK((*matched)[1].ident == USDTPROF_IDENT_PTRS);
	CHECK((*matched)[1].ident_args == std::vector<unsigned>{0});
	CHECK((*matched)[0].spec == "python:gc__start/gc__done:arg0:int:match");
	CHECK(parse_pair_spec("p:a/b:match")->at(1).ident == USDTPROF_IDENT_NATIVE);

	auto task = parse_task_spec("eng:queued/start/done:arg11");
	REQUIRE(task.ok());
	REQUIRE(task->size() == 3);
	CHECK((*task)[2].role == USDTPROF_ROLE_TASK_END);
	CHECK((*task)[2].arg == 11);
}

TEST_CASE("probe specs: malformed specs are one-line errors")
{
	for (const char *spec : {"", "nocolon", ":a/b", "p:", "p:a", "p:a/", "p:/b", "p:a/b/c", "p:a/b:", "p:a/b:arg",
				 "p:a/b:arg12", "p:a/b:argx", "p:a/b:1", "p:a-b/c", "1p:a/b", "p:a/b:arg1:arg2"}) {
		INFO(spec);
		auto r = parse_pair_spec(spec);
		REQUIRE_FALSE(r.ok());
		CHECK(r.error().message.find('\n') == std::string::npos);
		CHECK(r.error().message.find("invalid probe spec") == 0);
	}
	// Whatever was typed, the message stays one line.
	auto r = parse_pair_spec(std::string_view("p:a\nb/c\0", 9));
	REQUIRE_FALSE(r.ok());
	CHECK(r.error().message.find('\n') == std::string::npos);
	CHECK_FALSE(parse_task_spec("p:a/b").ok());
	CHECK_FALSE(parse_task_spec("p:a/b/c/d").ok());
}

TEST_CASE("probe specs: a span is a start and up to four ends, no argument read")
{
	auto span = parse_span_spec("postgresql:transaction__start/transaction__commit/transaction__abort", 3);
	REQUIRE(span.ok());
	REQUIRE(span->size() == 3);
	CHECK((*span)[0].role == USDTPROF_ROLE_SPAN_START);
	CHECK((*span)[1].role == USDTPROF_ROLE_SPAN_END);
	CHECK((*span)[2].name == "transaction__abort");
	CHECK((*span)[2].role == USDTPROF_ROLE_SPAN_END);
	for (const ProbeRole &r : *span) {
		CHECK(r.pair == 3);
		CHECK(r.ident == USDTPROF_IDENT_PAIR);
		CHECK(r.spec == "postgresql:transaction__start/transaction__commit/transaction__abort");
	}
	for (const char *bad : {"", "p:a", "p:a/", "p:/b", "p:a/b:arg0", "p:a/b/c/d/e/f", "1p:a/b", "nocolon", "p:a/b\n"}) {
		INFO(bad);
		auto r = parse_span_spec(bad, 1);
		REQUIRE_FALSE(r.ok());
		CHECK(r.error().message.find('\n') == std::string::npos);
		CHECK(r.error().message.find("PROVIDER:START/END") != std::string::npos);
	}
}
