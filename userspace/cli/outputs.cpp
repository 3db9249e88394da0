// Where report, export and diff write: -o's file or stdout.
#include "cli/commands.h"

#include <cstdio>

#include "base/output_file.h"
#include "base/result.h"
#include "base/sink.h"

namespace usdtprof::cli {

void write_result(const std::string &output, const OutputProducer &produce)
{
	if (output.empty()) {
		StdioSink out(stdout);
		produce(out);
		return;
	}
	if (auto r = write_output(output, produce); !r)
		throw UserError(r.error().message);
}

} // namespace usdtprof::cli
