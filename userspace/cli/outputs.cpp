// Where report, export and diff write: -o's file or stdout.
#include "cli/commands.h"

#include <cstdio>
#include <filesystem>

#include "base/output_file.h"
#include "base/result.h"
#include "base/sink.h"
#include "base/text_escape.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace usdtprof::cli {

namespace {

// The input (or, for a monitor directory, a file in it) that -o names, or "".
// A symlink in the directory is not read as a profile (nor counted here).
std::string input_named_by(const std::string &output, const std::string &input)
{
	std::error_code ec;
	if (!std::filesystem::is_directory(input, ec))
		return same_file(input, output) ? input : "";
	for (const auto &e : std::filesystem::directory_iterator(input, ec))
		if (!e.is_symlink(ec) && same_file(e.path(), output))
			return e.path();
	return "";
}

} // namespace

void refuse_output_over_inputs(const std::string &output, const std::vector<std::string> &inputs)
{
	struct stat target;
	// Only a regular file is replaced (write_output); a device or FIFO is written through.
	if (output_is_stdout(output) || stat(output.c_str(), &target) != 0 || !S_ISREG(target.st_mode))
		return;
	for (const std::string &input : inputs)
		if (std::string named = input_named_by(output, input); !named.empty())
			throw UserError("-o " + escape_text(output) + " is the input " + escape_text(named) +
						": it would be replaced; write to another file",
					2);
}

void write_result(const std::string &output, const OutputProducer &produce)
{
	if (output_is_stdout(output)) {
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
