#pragma once

#include <string>

#include "result.h"

namespace usdtprof {

// Writes a temporary file beside path, fsyncs it and renames it over path, so
// readers never see a partial file; on failure nothing is left behind.
Result<void> write_file_atomically(const std::string &path, const std::string &contents);

} // namespace usdtprof
