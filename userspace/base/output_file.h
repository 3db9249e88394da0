// Writing outputs without ever following another user's symlink or destroying a
// special file. See docs/security.md ("Output files") for the rules.
#pragma once

#include <functional>
#include <string>

#include "base/result.h"
#include "base/sink.h"

namespace usdtprof {

// Writes an output's bytes into the sink it is given, as it makes them: a large
// output is never held whole. If it throws, nothing is left at the path.
using OutputProducer = std::function<void(Sink &)>;

// A file usdtprof names itself (monitor intervals): written to a new temporary
// file beside path (O_CREAT|O_EXCL|O_NOFOLLOW, a random name), fsynced and
// renamed over path, whatever path is; on failure nothing is left behind.
Result<void> write_file_atomically(const std::string &path, const std::string &contents);
Result<void> write_file_atomically(const std::string &path, const OutputProducer &produce);

// A path the user gave (-o): a symlink is followed (unless it sits in a sticky
// world-writable directory and belongs to someone else, as fs.protected_symlinks
// rules) and what it names is written; a regular file or a new name is written
// atomically as above, in its own directory; a character device or a FIFO is
// written through and never replaced; a directory, a block device or a socket
// is refused. Errors read "cannot write PATH: REASON".
Result<void> write_output(const std::string &path, const std::string &contents);
Result<void> write_output(const std::string &path, const OutputProducer &produce);

// write_output's checks, made before a recording starts so that a long
// recording is not lost at the end: the path's kind and, for a file, that its
// directory exists and is writable. Opens and creates nothing.
Result<void> check_output(const std::string &path);

// Whether paths a and b name one file, so that writing one replaces the other:
// the same device and inode (symlinks followed) where both exist; where one is
// not there yet, the same name once symlinks and "." and ".." are resolved
// (std::filesystem::weakly_canonical), a dangling symlink followed to the name
// it points to, which write_output creates.
bool same_file(const std::string &a, const std::string &b);

} // namespace usdtprof
