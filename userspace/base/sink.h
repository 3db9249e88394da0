// Where a writer puts its bytes, in order: a string, or a file written as it
// goes (output_file.h), so that a large output is never held whole.
#pragma once

#include <cstddef>
#include <cstdio>
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

// A stdio stream (stdout), buffered by stdio; one thread writes it, so without
// stdio's lock (folded stacks of a million paths make four writes a line).
class StdioSink : public Sink {
public:
	explicit StdioSink(FILE *stream) : stream_(stream) {}
	void write(const char *data, size_t size) override { fwrite_unlocked(data, 1, size, stream_); }
	using Sink::write;

private:
	FILE *stream_;
};

// Counts the bytes and keeps none: an output's size without holding it.
class ByteCounter : public Sink {
public:
	void write(const char *, size_t size) override { bytes += size; }
	using Sink::write;
	size_t bytes = 0;
};

// Passes everything on to another sink, counting the bytes.
class CountingSink : public Sink {
public:
	explicit CountingSink(Sink &next) : next_(next) {}
	void write(const char *data, size_t size) override
	{
		bytes += size;
		next_.write(data, size);
	}
	using Sink::write;
	size_t bytes = 0;

private:
	Sink &next_;
};

// Writes everything to two sinks, in turn.
class TeeSink : public Sink {
public:
	TeeSink(Sink &first, Sink &second) : first_(first), second_(second) {}
	void write(const char *data, size_t size) override
	{
		first_.write(data, size);
		second_.write(data, size);
	}
	using Sink::write;

private:
	Sink &first_, &second_;
};

} // namespace usdtprof
