// libFuzzer: parse_profile on arbitrary bytes must return a value or an Error,
// never crash, hang or trip a sanitizer; what it accepts must round-trip.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <zlib.h>

#include "profile/profile.h"

using namespace usdtprof;

namespace {

// Random bytes almost never carry a matching size and crc32: also parse the
// input as a body under a correct header, so the JSON checks get fuzzed too.
std::string with_header(const std::string &body)
{
	uint32_t crc = static_cast<uint32_t>(
		crc32(0, reinterpret_cast<const Bytef *>(body.data()), static_cast<uInt>(body.size())));
	char header[64];
	snprintf(header, sizeof header, "usdtprof-profile %d %zu %08x\n", kProfileVersion, body.size(), crc);
	return header + body;
}

void check(const std::string &bytes)
{
	Result<Profile> p = parse_profile(bytes);
	if (!p) {
		if (p.error().message.empty() || p.error().message.find('\n') != std::string::npos)
			abort(); // errors are one non-empty line
		return;
	}
	std::string once = serialize_profile(*p);
	Result<Profile> again = parse_profile(once);
	if (!again || serialize_profile(*again) != once)
		abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string bytes(reinterpret_cast<const char *>(data), size);
	check(bytes);
	check(with_header(bytes));
	return 0;
}
