#include <catch2/catch.hpp>

#include "target/sql.h"

using usdtprof::normalize_sql;

TEST_CASE("normalize_sql: pgbench's statements become their shapes")
{
	CHECK(normalize_sql("UPDATE pgbench_accounts SET abalance = abalance + -4211 WHERE aid = 77;") ==
	      "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2");
	CHECK(normalize_sql("UPDATE pgbench_accounts SET abalance = abalance + 4211 WHERE aid = 77;") ==
	      "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2");
	CHECK(normalize_sql("SELECT abalance FROM pgbench_accounts WHERE aid = 12345;") ==
	      "SELECT abalance FROM pgbench_accounts WHERE aid = $1");
	CHECK(normalize_sql("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 40, -17, CURRENT_TIMESTAMP);") ==
	      "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)");
	CHECK(normalize_sql("BEGIN;") == "BEGIN");
	CHECK(normalize_sql("END ; ") == "END");
}

TEST_CASE("normalize_sql: literals, identifiers, minus and white space")
{
	CHECK(normalize_sql("select 'it''s', 'x' from t1 where a = 1.5e") == "select $1, $2 from t1 where a = $3e");
	CHECK(normalize_sql("select a -1, a - 1, (-2), $1 from t2") == "select a -$1, a - $2, ($3), $1 from t2");
	CHECK(normalize_sql("  select\n\t 1  ") == "select $1");
	CHECK(normalize_sql("select 'unterminated") == "select");
	CHECK(normalize_sql("x -") == "x -");
	CHECK(normalize_sql("") == "");
	// Identifiers keep their digits.
	CHECK(normalize_sql("select col2 from tab_3") == "select col2 from tab_3");
}
