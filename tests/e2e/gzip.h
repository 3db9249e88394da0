// gunzip for the e2e tests that read usdtprof's gzipped output (pprof).
#pragma once

#include <string>
#include <zlib.h>

namespace e2e {

// gzip (not zlib, not raw deflate) -> bytes; false if not a whole gzip stream.
inline bool gunzip(const std::string &in, std::string &out)
{
	z_stream zs{};
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return false;
	zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
	zs.avail_in = uInt(in.size());
	int rc;
	char buf[65536];
	do {
		zs.next_out = reinterpret_cast<Bytef *>(buf);
		zs.avail_out = sizeof buf;
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END)
			break;
		out.append(buf, sizeof buf - zs.avail_out);
	} while (rc != Z_STREAM_END);
	bool whole = rc == Z_STREAM_END && zs.avail_in == 0;
	inflateEnd(&zs);
	return whole;
}

} // namespace e2e
