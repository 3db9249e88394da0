// Where report, export and diff write: -o's file or stdout.
#include "cli/commands.h"

#include <cstdio>

#include "base/output_file.h"
#include "base/result.h"
#include "base/sink.h"

#include <unistd.h>

namespace usdtprof::cli {

void write_result(const std::string &output, const OutputProducer &produce)
{
	if (output.empty()) {
		// A large output (folded stacks of a million paths: 0.9 GB) into a
		// pipe in stdio's 4 KiB writes was a fifth of its time: 1 MiB ones.
		static char buffer[1 << 20];
		if (!isatty(fileno(stdout))) {
			fflush(stdout);
			setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
		}
		StdioSink out(stdout);
		produce(out);
		return;
	}
	if (auto r = write_output(output, produce); !r)
		throw UserError(r.error().message);
}

} // namespace usdtprof::cli
