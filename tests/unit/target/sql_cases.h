// Statements and their shapes (normalize_sql), shared by the C++ lexer's
// unit test (test_sql.cpp) and the BPF lexer's (tests/e2e/test_sql_shape.cpp):
// both copies are tested on the same cases.
#pragma once

#include <iterator>
#include <vector>

struct SqlCase {
	const char *text;
	const char *shape;
};

inline constexpr SqlCase kPgbenchSqlCases[] = {
	{"UPDATE pgbench_accounts SET abalance = abalance + -4211 WHERE aid = 77;",
	 "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"},
	{"UPDATE pgbench_accounts SET abalance = abalance + 4211 WHERE aid = 77;",
	 "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"},
	{"SELECT abalance FROM pgbench_accounts WHERE aid = 12345;",
	 "SELECT abalance FROM pgbench_accounts WHERE aid = $1"},
	{"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 40, -17, CURRENT_TIMESTAMP);",
	 "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"},
	{"BEGIN;", "BEGIN"},
	{"END ; ", "END"},
};

inline constexpr SqlCase kSqlLiteralCases[] = {
	{"select 'it''s', 'x' from t1 where a = 1.5e", "select $1, $2 from t1 where a = $3e"},
	{"select a -1, a - 1, (-2), $1 from t2", "select a -$1, a - $2, ($3), $1 from t2"},
	{"  select\n\t 1  ", "select $1"},
	{"select 'unterminated", "select"},
	{"x -", "x -"},
	{"", ""},
	// Identifiers keep their digits.
	{"select col2 from tab_3", "select col2 from tab_3"},
};

inline std::vector<SqlCase> all_sql_cases()
{
	std::vector<SqlCase> all(std::begin(kPgbenchSqlCases), std::end(kPgbenchSqlCases));
	all.insert(all.end(), std::begin(kSqlLiteralCases), std::end(kSqlLiteralCases));
	return all;
}
