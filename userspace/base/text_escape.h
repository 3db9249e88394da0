// Text that came from a profiled process (function, thread and process names,
// ELF probe strings, paths from its maps) is untrusted: any user may choose it.
// Every writer of text for a terminal passes it through escape_text; every
// writer of a format that must be UTF-8 (pprof, JSON) through valid_utf8.
#pragma once

#include <string>
#include <string_view>

namespace usdtprof {

// Printable as is: valid UTF-8 without control characters. Escaped:
//   C0 controls (U+0000-U+001F) and DEL           -> \xNN   (ESC -> \x1b)
//   bytes that are not valid UTF-8                -> \xNN, one per byte
//   C1 controls (U+0080-U+009F), line separators
//   (U+2028, U+2029) and bidirectional overrides
//   (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) -> \uNNNN
// A backslash is kept (PHP namespaces are full of them), so "\x1b" in a report
// may also be those four characters in the name itself.
std::string escape_text(std::string_view s);

// The text unit at s[i]: a UTF-8 sequence, or an ill-formed run of bytes; unsafe
// when escape_text escapes it. For writers with an escaping of their own
// (folded stacks), so that they escape what escape_text does.
struct TextUnit {
	size_t length; // >= 1
	bool unsafe;
};
TextUnit text_unit_at(std::string_view s, size_t i);

// s with each ill-formed UTF-8 sequence (its maximal subpart, as Unicode
// recommends and nlohmann::json's error_handler_t::replace does) replaced by
// U+FFFD; valid UTF-8 is returned unchanged.
std::string valid_utf8(std::string_view s);

// Writes "usdtprof: <message>\n" to stderr with the formatted message passed
// through escape_text: the one way to log a line that may hold a target's text.
void log_line(const char *format, ...) __attribute__((format(printf, 1, 2)));

} // namespace usdtprof
