// A report in a format of the table (formats.h), as `usdtprof report --format` renders it.
#pragma once

#include <string>

#include "report/formats.h"

inline std::string render_as(const char *format, const usdtprof::Profile &measured,
			     const usdtprof::ReportOptions &options)
{
	return usdtprof::render_profile(*usdtprof::find_format(format, usdtprof::kUseReport), measured, options);
}
