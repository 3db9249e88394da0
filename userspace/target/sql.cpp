#include "target/sql.h"

namespace usdtprof {

namespace {

bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

bool is_ident(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}

bool unary_before(unsigned char p)
{
	return p == 0 || std::string_view("(,=<>+-*/%^|").find(char(p)) != std::string_view::npos;
}

// The shape of text: literals as "$1", "$2", ... (numbered), or each as '?'
// as the engine hashes them.
std::string shape(std::string_view text, bool numbered)
{
	std::string out;
	int placeholders = 0;
	unsigned char prev = 0, prev_sig = 0; // prev_sig: the last character out, not a space
	bool in_quote = false, quote_closed = false, in_number = false, minus_pending = false, space_pending = false;
	auto emit = [&](unsigned char c) {
		out += char(c);
		if (c != ' ')
			prev_sig = c;
	};
	auto placeholder = [&] {
		out += numbered ? "$" + std::to_string(++placeholders) : "?";
		prev_sig = '?';
	};
	for (unsigned char c : text) {
		if (c == 0)
			break;
		if (in_quote) {
			if (c == '\'')
				in_quote = false, quote_closed = true;
			prev = c;
			continue;
		}
		if (quote_closed) {
			quote_closed = false;
			if (c == '\'') { // '' inside a literal
				in_quote = true;
				prev = c;
				continue;
			}
			placeholder();
		}
		if (in_number) {
			if (is_digit(c) || c == '.') {
				prev = c;
				continue;
			}
			in_number = false;
		}
		if (minus_pending) {
			minus_pending = false;
			if (is_digit(c)) {
				placeholder();
				in_number = true;
				prev = c;
				continue;
			}
			emit('-');
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			space_pending = prev_sig != 0;
			prev = c;
			continue;
		}
		if (space_pending) {
			space_pending = false;
			emit(' ');
		}
		if (c == '\'')
			in_quote = true;
		else if (is_digit(c) && !is_ident(prev))
			placeholder(), in_number = true;
		else if (c == '-' && unary_before(prev_sig))
			minus_pending = true;
		else
			emit(c);
		prev = c;
	}
	if (quote_closed)
		placeholder();
	if (minus_pending)
		emit('-');
	return out;
}

} // namespace

std::string normalize_sql(std::string_view text)
{
	std::string out = shape(text, true);
	// pg_stat_statements shows a statement without its terminating semicolon.
	while (!out.empty() && (out.back() == ';' || out.back() == ' '))
		out.pop_back();
	return out;
}

std::string sql_shape_key(std::string_view text)
{
	return shape(text, false);
}

} // namespace usdtprof
