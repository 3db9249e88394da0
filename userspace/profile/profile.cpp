// Profile file: a one-line header (magic, version, body size, crc32) and a
// body. The header lets us tell truncation and corruption apart from "not a
// profile" before reading the body, which is read once, in chunks, through its
// version's codec (profile_body.h) while its checksum is computed.
#include "profile/profile.h"

#include "base/output_file.h"
#include "profile/profile_body.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/unique_fd.h"

namespace usdtprof {

void corrupt(const std::string &message) { throw Corrupt{message}; }

size_t ByteSource::read(char *buf, size_t n)
{
	if (fd_ < 0) {
		n = std::min(n, mem_.size());
		memcpy(buf, mem_.data(), n);
		mem_.remove_prefix(n);
		return n;
	}
	for (;;) {
		ssize_t got = ::read(fd_, buf, n);
		if (got >= 0)
			return static_cast<size_t>(got);
		if (errno != EINTR)
			throw ReadFailed{errno};
	}
}

BodyReader::BodyReader(ByteSource &source, std::string prefix, uint64_t size)
	: source_(source), prefix_(std::move(prefix)), left_(size), crc_(crc32(0, nullptr, 0))
{
}

size_t BodyReader::read(char *buf, size_t n)
{
	n = static_cast<size_t>(std::min<uint64_t>({n, left_, 1u << 30}));
	if (n == 0)
		return 0;
	size_t got;
	if (prefix_at_ < prefix_.size()) {
		got = std::min(n, prefix_.size() - prefix_at_);
		memcpy(buf, prefix_.data() + prefix_at_, got);
		prefix_at_ += got;
	} else {
		got = source_.read(buf, n);
	}
	if (got == 0) { // the file shrank under us: the checksum will not match
		left_ = 0;
		crc_ = ~crc_;
		return 0;
	}
	left_ -= got;
	crc_ = crc32(crc_, reinterpret_cast<const Bytef *>(buf), static_cast<uInt>(got));
	return got;
}

void BodyReader::drain()
{
	char buf[1 << 16];
	while (read(buf, sizeof buf))
		;
}

namespace {

const std::string kMagic = "usdtprof-profile ";

uint32_t crc_of(const std::string &body)
{
	// zlib's crc32 takes a uInt length: feed large bodies in chunks.
	uLong crc = crc32(0, nullptr, 0);
	for (size_t off = 0; off < body.size();) {
		size_t n = std::min<size_t>(body.size() - off, 1u << 30);
		crc = crc32(crc, reinterpret_cast<const Bytef *>(body.data() + off), static_cast<uInt>(n));
		off += n;
	}
	return static_cast<uint32_t>(crc);
}

// Counts what is written into it and its CRC-32.
class CrcSink : public Sink {
public:
	uint64_t bytes = 0;
	uint32_t crc() const { return static_cast<uint32_t>(crc_); }
	void write(const char *data, size_t size) override
	{
		bytes += size;
		crc_ = crc32(crc_, reinterpret_cast<const Bytef *>(data), static_cast<uInt>(size));
	}

private:
	uLong crc_ = crc32(0, nullptr, 0);
};

bool all_digits(const std::string &s, size_t max_len)
{
	return !s.empty() && s.size() <= max_len && s.find_first_not_of("0123456789") == std::string::npos;
}

bool supported(int version) { return version == kProfileVersionJson || version == kProfileVersionBinary; }

std::string supported_versions()
{
	return "versions " + std::to_string(kProfileVersionJson) + " and " + std::to_string(kProfileVersionBinary);
}

// The start of a file, read up to the end of its first line.
struct HeaderScan {
	static constexpr size_t kKept = 256; // far more than a valid header line
	std::string start;      // the file's first bytes, at most kKept
	bool newline = false;   // the first line ends within the file
	uint64_t line_bytes = 0; // with its newline
	std::string after;      // what the last chunk read held past the newline
	uint64_t read = 0;      // bytes read in all
};

HeaderScan scan_header(ByteSource &source)
{
	HeaderScan s;
	char buf[1 << 16];
	// A header line is far shorter than kKept: past it, no line ends a header
	// (never read /dev/zero or a huge file without a newline to its end).
	while (!s.newline && s.read < HeaderScan::kKept) {
		size_t n = source.read(buf, sizeof buf);
		if (n == 0)
			break;
		const char *nl = static_cast<const char *>(memchr(buf, '\n', n));
		if (s.start.size() < HeaderScan::kKept)
			s.start.append(buf, std::min(n, HeaderScan::kKept - s.start.size()));
		if (nl) {
			s.newline = true;
			s.line_bytes = s.read + static_cast<uint64_t>(nl - buf) + 1;
			s.after.assign(nl + 1, static_cast<size_t>(buf + n - (nl + 1)));
		}
		s.read += n;
	}
	return s;
}

struct Header {
	int version = 0;
	uint64_t body_bytes = 0;
	uint32_t crc = 0;
};

// "<magic><version> <body-bytes> <crc32-hex8>": the line alone.
Result<Header> parse_header_line(const HeaderScan &s)
{
	const std::string &bytes = s.start;
	if (bytes.empty())
		return Error{"empty file"};
	if (bytes.compare(0, kMagic.size(), kMagic) != 0)
		return Error{kMagic.compare(0, bytes.size(), bytes) == 0 ? "truncated: incomplete header line"
			: "not a usdtprof profile"};
	if (!s.newline)
		return Error{bytes.size() < HeaderScan::kKept ? "truncated: incomplete header line"
							       : "corrupt: malformed header line"};
	bool whole = s.line_bytes <= bytes.size();
	size_t nl = whole ? static_cast<size_t>(s.line_bytes - 1) : bytes.size();
	std::vector<std::string> tok;
	for (size_t pos = kMagic.size();;) {
		size_t sp = bytes.find(' ', pos);
		if (sp == std::string::npos || sp > nl) {
			tok.push_back(bytes.substr(pos, nl - pos));
			break;
		}
		tok.push_back(bytes.substr(pos, sp - pos));
		pos = sp + 1;
	}
	// The version comes first so that a future header layout is still reported as such.
	if (!all_digits(tok[0], 9))
		return Error{"corrupt: malformed header line"};
	if (int version = std::stoi(tok[0]); !supported(version))
		return Error{"unsupported profile version " + std::to_string(version) + " (this usdtprof reads " +
			supported_versions() + ")"};
	if (!whole || tok.size() != 3 || !all_digits(tok[1], 19) || tok[2].size() != 8 ||
	    tok[2].find_first_not_of("0123456789abcdef") != std::string::npos)
		return Error{"corrupt: malformed header line"};
	return Header{std::stoi(tok[0]), std::stoull(tok[1]), static_cast<uint32_t>(std::stoul(tok[2], nullptr, 16))};
}

// The header line, and the file's size against the body it announces.
Result<Header> parse_header(const HeaderScan &s, uint64_t file_size)
{
	auto header = parse_header_line(s);
	if (!header)
		return header;
	std::string announced = std::to_string(header->body_bytes);
	uint64_t present = file_size - s.line_bytes;
	if (present < header->body_bytes)
		return Error{"truncated: header announces " + announced + " bytes, " + std::to_string(present) + " present"};
	if (present > header->body_bytes)
		return Error{"corrupt: trailing data after the announced " + announced + "-byte body"};
	return header;
}

// A pipe's or a device's bytes, read no further than its header announces
// (and one byte more, to tell trailing data): /dev/zero or an endless pipe
// is refused at its first line, never read into memory without end.
std::string read_stream(ByteSource &source)
{
	std::string bytes;
	char buf[1 << 16];
	uint64_t limit = HeaderScan::kKept; // until the header line is known
	bool header_seen = false;
	while (bytes.size() <= limit) {
		size_t n = source.read(buf, static_cast<size_t>(std::min<uint64_t>(sizeof buf, limit + 1 - bytes.size())));
		if (n == 0)
			break;
		bytes.append(buf, n);
		if (header_seen)
			continue;
		ByteSource start{std::string_view(bytes)};
		HeaderScan scan = scan_header(start);
		if (!scan.newline && bytes.size() < HeaderScan::kKept)
			continue;
		auto header = scan.newline ? parse_header_line(scan) : Result<Header>{Error{}};
		if (!header)
			break; // parse_profile says what is wrong with the line
		header_seen = true;
		limit = scan.line_bytes + header->body_bytes;
	}
	return bytes;
}

// The body through its version's codec. A checksum mismatch is reported
// before anything the codec found: a damaged body says so, whatever it parses to.
Result<Profile> read_body(ByteSource &source, HeaderScan &scan, const Header &header)
{
	BodyReader body(source, std::move(scan.after), header.body_bytes);
	std::optional<Profile> profile;
	std::string problem;
	try {
		profile = header.version == kProfileVersionJson ? read_json_body(body) : read_binary_body(body);
	} catch (const Corrupt &c) {
		problem = "corrupt: " + c.message;
	}
	body.drain();
	if (body.crc() != header.crc)
		return Error{"corrupt: checksum mismatch"};
	if (!profile)
		return Error{problem};
	return std::move(*profile);
}

Result<Profile> parse_from(ByteSource &source, uint64_t size)
{
	HeaderScan scan = scan_header(source);
	auto header = parse_header(scan, size);
	if (!header)
		return header.error();
	return read_body(source, scan, *header);
}

} // namespace

const Distribution &node_dist(const Profile &profile, size_t i)
{
	static const Distribution none{};
	return i < profile.dists.size() ? profile.dists[i] : none;
}

void add_node(Profile &profile, const PathNode &node, Distribution dist)
{
	profile.nodes.push_back(node);
	if (profile.distributions)
		profile.dists.push_back(std::move(dist));
}

bool has_probe_time(const Profile &profile)
{
	for (const PathNode &n : profile.nodes)
		if (n.probe_ns)
			return true;
	return false;
}

void drop_distributions(Profile &profile)
{
	profile.distributions = false;
	profile.dists = {};
}

Profile copy_without_distributions(Profile &profile)
{
	// Set aside while the rest is copied, given back whatever happens.
	struct Aside {
		Profile &p;
		std::vector<Distribution> dists = std::move(p.dists);
		~Aside() { p.dists = std::move(dists); }
	} aside{profile};
	Profile copy = profile;
	copy.distributions = false;
	return copy;
}

void fit_dists(Profile &profile)
{
	if (profile.distributions)
		profile.dists.resize(profile.nodes.size());
	else
		profile.dists.clear();
}

std::string profile_format_versions()
{
	return "writes version " + std::to_string(kProfileVersion) + ", reads " + supported_versions();
}

namespace {

// The header line: the magic, the version, the body's size and checksum
// (always 8 hex digits).
std::string header_line(int version, uint64_t size, uint32_t crc)
{
	char line[96];
	snprintf(line, sizeof line, "%s%d %llu %08x\n", kMagic.c_str(), version, (unsigned long long)size, crc);
	return line;
}

} // namespace

uint64_t profile_file_size(const Profile &profile)
{
	ByteCounter count;
	write_binary_body(profile, count);
	return header_line(kProfileVersion, count.bytes, 0).size() + count.bytes;
}

void write_profile(const Profile &profile, Sink &out, int version)
{
	auto header = [&](uint64_t size, uint32_t crc) { out.write(header_line(version, size, crc)); };
	if (version == kProfileVersionJson) {
		std::string text = json_body(profile);
		header(text.size(), crc_of(text));
		out.write(text);
		return;
	}
	// The header comes first and holds the body's size and checksum: the
	// body is made twice, once into a counter, once into the output.
	CrcSink count;
	write_binary_body(profile, count);
	header(count.bytes, count.crc());
	write_binary_body(profile, out);
}

std::string serialize_profile(const Profile &profile, int version)
{
	StringSink out;
	write_profile(profile, out, version);
	return std::move(out.text);
}

uint64_t span_bucket_low(uint32_t bucket)
{
	if (bucket < 4)
		return bucket;
	unsigned m = bucket >> 2; // the highest set bit; the two below it are bucket & 3
	return (uint64_t(4 + (bucket & 3))) << (m - 2);
}

uint64_t span_bucket_high(uint32_t bucket)
{
	if (bucket < 4)
		return bucket + 1;
	uint64_t low = span_bucket_low(bucket), width = uint64_t(1) << ((bucket >> 2) - 2);
	return low + width < low ? UINT64_MAX : low + width;
}

std::vector<uint32_t> moved_thread_nodes(const std::vector<uint32_t> &thread_nodes, const std::vector<uint32_t> &moved)
{
	std::vector<uint32_t> out;
	for (uint32_t t : thread_nodes)
		if (t < moved.size() && moved[t] != kNoParent)
			out.push_back(moved[t]);
	return out;
}

Result<Profile> parse_profile(const std::string &bytes)
{
	ByteSource source{std::string_view(bytes)};
	return parse_from(source, bytes.size());
}

Result<void> save_profile(const Profile &profile, const std::string &path)
{
	return write_output(path, [&](Sink &out) { write_profile(profile, out, kProfileVersion); });
}

Result<void> check_profile_output(const std::string &path)
{
	if (auto r = check_output(path); !r)
		return r;
	// Never blocks: a FIFO or device is written through and not looked at.
	UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	struct stat st;
	if (fd.get() < 0 || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return {};
	char start[32] = {};
	ssize_t n = pread(fd.get(), start, kMagic.size(), 0);
	if (n == ssize_t(kMagic.size()) && kMagic.compare(0, kMagic.size(), start, kMagic.size()) == 0)
		return {};
	return Error{"cannot write " + path + ": it exists and is not a usdtprof profile (remove it first or choose another name)"};
}

Result<Profile> load_profile(const std::string &path)
{
	UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
	struct stat st;
	if (fd.get() < 0 || fstat(fd.get(), &st) != 0)
		return Error{path + ": " + strerror(errno)};
	try {
		Result<Profile> r = Error{};
		if (S_ISREG(st.st_mode)) {
			ByteSource source(fd.get());
			r = parse_from(source, static_cast<uint64_t>(st.st_size));
		} else { // a pipe or a device: its size is what it gives, up to what it announces
			ByteSource source(fd.get());
			r = parse_profile(read_stream(source));
		}
		if (!r)
			return Error{path + ": " + r.error().message};
		return r;
	} catch (const ReadFailed &f) {
		return Error{path + ": " + strerror(f.err)};
	}
}

} // namespace usdtprof
