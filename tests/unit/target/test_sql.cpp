#include <catch2/catch.hpp>

#include <string>

#include "target/sql.h"
#include "sql_cases.h"

using usdtprof::normalize_sql;
using usdtprof::sql_shape_key;

TEST_CASE("normalize_sql: pgbench's statements become their shapes")
{
	for (const SqlCase &c : kPgbenchSqlCases) {
		CAPTURE(c.text);
		CHECK(normalize_sql(c.text) == c.shape);
	}
}

TEST_CASE("normalize_sql: literals, identifiers, minus and white space")
{
	for (const SqlCase &c : kSqlLiteralCases) {
		CAPTURE(c.text);
		CHECK(normalize_sql(c.text) == c.shape);
	}
}

TEST_CASE("sql_shape_key: what the BPF side hashes, literals as '?', the end as written")
{
	CHECK(sql_shape_key("UPDATE t SET a = a + -4211 WHERE aid = 77;") == "UPDATE t SET a = a + ? WHERE aid = ?;");
	CHECK(sql_shape_key("END ; ") == "END ;");
	CHECK(sql_shape_key("select 'it''s', -2.5, x -") == "select ?, ?, x -");
	// Its placeholders are normalize_sql's, numbered there.
	for (const SqlCase &c : all_sql_cases()) {
		CAPTURE(c.text);
		std::string numbered;
		int n = 0;
		for (char ch : sql_shape_key(c.text))
			numbered += ch == '?' ? "$" + std::to_string(++n) : std::string(1, ch);
		while (!numbered.empty() && (numbered.back() == ';' || numbered.back() == ' '))
			numbered.pop_back();
		CHECK(numbered == c.shape);
	}
}
