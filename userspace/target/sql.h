// Statement shapes: SQL text with its literals replaced, as
// pg_stat_statements shows statements.
#pragma once

#include <string>
#include <string_view>

namespace usdtprof {

// Numeric and quoted literals (with a leading unary minus) become $1, $2,
// ...; runs of white space become one space, leading and trailing ones and
// a final semicolon go.
// The same rules as the BPF side's sql_shape_hash() (bpf/sql.bpf.h, which walks
// tables that tools/gen_sql_table.c writes from its own copy of the rules), which
// groups a query's calls by shape: both must agree (tests/e2e/test_sql_shape.cpp
// runs the BPF copy on this one's cases).
std::string normalize_sql(std::string_view text);

// What the BPF side hashes (FNV-1a) into a query's function id: the shape
// with each literal as one '?', its end as written (a final semicolon stays,
// trailing white space goes). Statements with the same key share an id.
std::string sql_shape_key(std::string_view text);

} // namespace usdtprof
