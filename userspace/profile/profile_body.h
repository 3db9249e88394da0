// Inside the profile file (profile.cpp): the body's bytes, read once in order
// and counted into the checksum, and each version's body codec. Internal to
// profile*.cpp; everyone else uses profile.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "profile/profile.h"
#include "base/sink.h"

namespace usdtprof {

// Thrown by the body readers, turned into "corrupt: <message>" by the caller.
struct Corrupt {
	std::string message;
};
[[noreturn]] void corrupt(const std::string &message);

// A read(2) failure while reading the file: reported with the system's message.
struct ReadFailed {
	int err;
};

// The bytes of a file from its start: from memory, or from a file descriptor in
// chunks (a large profile is never held whole).
class ByteSource {
public:
	explicit ByteSource(std::string_view bytes) : mem_(bytes) {}
	explicit ByteSource(int fd) : fd_(fd) {}
	// Up to n bytes into buf; 0 at the end. Throws ReadFailed.
	size_t read(char *buf, size_t n);

private:
	int fd_ = -1;
	std::string_view mem_;
};

// The announced body: what the header line's chunk held past its newline, then
// the source, up to `size` bytes in all, every byte added to the CRC-32.
class BodyReader {
public:
	BodyReader(ByteSource &source, std::string prefix, uint64_t size);
	// Up to n bytes into buf; 0 at the end of the body.
	size_t read(char *buf, size_t n);
	// Reads whatever the codec left unread, so that crc() covers the whole body.
	void drain();
	uint64_t left() const { return left_; }
	uint32_t crc() const { return static_cast<uint32_t>(crc_); }

private:
	ByteSource &source_;
	std::string prefix_;
	size_t prefix_at_ = 0;
	uint64_t left_;
	unsigned long crc_;
};

// Version 1: one JSON object (docs/profile-format.md). Read through a
// streaming parser: the call paths go straight into Profile::nodes, never
// into a document tree.
Profile read_json_body(BodyReader &body);
std::string json_body(const Profile &profile);

// Version 2 (profile_binary.cpp): what it keeps as JSON, every field but
// functions, locations, nodes and calibration.function_kinds; probe_time
// announces the nodes' probe time after their durations. The profile read
// has p.locations holding one "" when the function table has locations.
std::string meta_json(const Profile &profile, bool probe_time);
struct ProfileMeta {
	Profile profile;
	bool probe_time = false; // the probe time section follows the durations
};
ProfileMeta profile_from_meta(const std::string &text);
// Profile::thread_nodes name nodes the profile has.
void check_thread_nodes(const Profile &p);
void write_binary_body(const Profile &profile, Sink &out);
Profile read_binary_body(BodyReader &body);

} // namespace usdtprof
