#include "base/text_escape.h"

#include <cstdarg>
#include <cstdio>

namespace usdtprof {

namespace {

struct Decoded {
	char32_t code_point;
	size_t length; // bytes used; for an ill-formed sequence, its maximal subpart (>= 1)
	bool valid;
};

// One UTF-8 sequence at s[i], by the well-formed byte ranges of Unicode's Table 3-7
// (no overlong forms, no surrogates, nothing above U+10FFFF).
Decoded decode_utf8(std::string_view s, size_t i)
{
	unsigned char lead = static_cast<unsigned char>(s[i]);
	if (lead < 0x80)
		return {lead, 1, true};
	size_t length;
	char32_t cp;
	unsigned char low = 0x80, high = 0xBF; // range of the second byte
	if (lead >= 0xC2 && lead <= 0xDF) {
		length = 2, cp = lead & 0x1F;
	} else if (lead >= 0xE0 && lead <= 0xEF) {
		length = 3, cp = lead & 0x0F;
		low = lead == 0xE0 ? 0xA0 : 0x80;
		high = lead == 0xED ? 0x9F : 0xBF;
	} else if (lead >= 0xF0 && lead <= 0xF4) {
		length = 4, cp = lead & 0x07;
		low = lead == 0xF0 ? 0x90 : 0x80;
		high = lead == 0xF4 ? 0x8F : 0xBF;
	} else {
		return {0, 1, false};
	}
	for (size_t k = 1; k < length; k++) {
		if (i + k >= s.size())
			return {0, k, false};
		unsigned char c = static_cast<unsigned char>(s[i + k]);
		if (c < low || c > high)
			return {0, k, false};
		low = 0x80, high = 0xBF;
		cp = cp << 6 | (c & 0x3F);
	}
	return {cp, length, true};
}

// Code points a terminal acts on or that reorder or break the line.
bool is_format_control(char32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || cp == 0x2028 || cp == 0x2029 ||
		(cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void append_hex(std::string &out, const char *format, unsigned value)
{
	char buf[16];
	snprintf(buf, sizeof buf, format, value);
	out += buf;
}

} // namespace

std::string escape_text(std::string_view s)
{
	std::string out;
	out.reserve(s.size());
	for (size_t i = 0; i < s.size();) {
		Decoded d = decode_utf8(s, i);
		if (!d.valid || d.code_point < 0x20 || d.code_point == 0x7F) {
			for (size_t k = 0; k < d.length; k++)
				append_hex(out, "\\x%02x", static_cast<unsigned char>(s[i + k]));
		} else if (is_format_control(d.code_point)) {
			append_hex(out, "\\u%04x", static_cast<unsigned>(d.code_point));
		} else {
			out.append(s.substr(i, d.length));
		}
		i += d.length;
	}
	return out;
}

TextUnit text_unit_at(std::string_view s, size_t i)
{
	Decoded d = decode_utf8(s, i);
	return {d.length, !d.valid || d.code_point < 0x20 || d.code_point == 0x7F || is_format_control(d.code_point)};
}

std::string valid_utf8(std::string_view s)
{
	std::string out;
	out.reserve(s.size());
	for (size_t i = 0; i < s.size();) {
		Decoded d = decode_utf8(s, i);
		out.append(d.valid ? s.substr(i, d.length) : "\xEF\xBF\xBD");
		i += d.length;
	}
	return out;
}

void log_line(const char *format, ...)
{
	va_list ap, again;
	va_start(ap, format);
	va_copy(again, ap);
	int n = vsnprintf(nullptr, 0, format, ap);
	va_end(ap);
	std::string message(n > 0 ? size_t(n) : 0, '\0');
	if (n > 0)
		vsnprintf(message.data(), message.size() + 1, format, again);
	va_end(again);
	std::string line = "usdtprof: " + escape_text(message) + "\n";
	fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace usdtprof
