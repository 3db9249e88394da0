// Where a writer puts its bytes, in order: a string, or a file written as it
// goes (output_file.h), so that a large output is never held whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace usdtprof {

class Sink {
public:
	virtual ~Sink() = default;
	virtual void write(const char *data, size_t size) = 0;
	void write(std::string_view s) { write(s.data(), s.size()); }
};

class StringSink : public Sink {
public:
	std::string text;
	void write(const char *data, size_t size) override { text.append(data, size); }
	using Sink::write;
};

} // namespace usdtprof
