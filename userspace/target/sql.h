// Statement shapes: SQL text with its literals replaced, as
// pg_stat_statements shows statements.
#pragma once

#include <string>
#include <string_view>

namespace usdtprof {

// Numeric and quoted literals (with a leading unary minus) become $1, $2,
// ...; runs of white space become one space, leading and trailing ones and
// a final semicolon go.
// The same rules as the BPF side's sql_hash() (bpf/usdtprof.bpf.c), which
// groups a query's calls by shape: both must agree.
std::string normalize_sql(std::string_view text);

} // namespace usdtprof
