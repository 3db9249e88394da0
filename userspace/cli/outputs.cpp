// Where report, export and diff write: -o's file or stdout.
#include "cli/commands.h"

#include <cstdio>

#include "base/output_file.h"
#include "base/result.h"
#include "base/sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace usdtprof::cli {

void write_result(const std::string &output, const OutputProducer &produce)
{
	if (output.empty()) {
		// A large output (folded stacks of a million paths: 0.9 GB) into a
		// pipe in stdio's 4 KiB writes was a fifth of its time: 1 MiB ones.
		// A pipe's default 64 KiB made each of them 16 writes, each waking
		// the reader and waiting for it (at 2.6 GB, 0.2 s of system time):
		// the pipe is made 1 MiB (the unprivileged maximum by default) where
		// the kernel allows it, which the reader's side shares.
		static char buffer[1 << 20];
		if (!isatty(fileno(stdout))) {
			fflush(stdout);
			setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
			struct stat st;
			if (fstat(fileno(stdout), &st) == 0 && S_ISFIFO(st.st_mode) &&
			    fcntl(fileno(stdout), F_GETPIPE_SZ) < int(sizeof buffer))
				fcntl(fileno(stdout), F_SETPIPE_SZ, int(sizeof buffer)); // best effort
		}
		StdioSink out(stdout);
		produce(out);
		return;
	}
	if (auto r = write_output(output, produce); !r)
		throw UserError(r.error().message);
}

} // namespace usdtprof::cli
