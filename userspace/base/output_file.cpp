#include "base/output_file.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text_escape.h"
#include "base/unique_fd.h"

namespace usdtprof {

namespace {

std::string dir_of(const std::string &path)
{
	size_t slash = path.rfind('/');
	return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string &path)
{
	size_t slash = path.rfind('/');
	return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "NAME.tmp.<16 random hex digits>": unpredictable, so nobody can plant a link
// there in advance, and O_EXCL refuses one planted anyway.
std::string temp_name(const std::string &base)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof r, 0) != sizeof r)
		r = uint64_t(getpid()) << 32 ^ uint64_t(time(nullptr)) ^ uint64_t(reinterpret_cast<uintptr_t>(&r));
	char suffix[32];
	snprintf(suffix, sizeof suffix, ".tmp.%016llx", static_cast<unsigned long long>(r));
	return base.substr(0, NAME_MAX - strlen(suffix)) + suffix;
}

Error cannot_write(const std::string &path, const std::string &why) { return Error{"cannot write " + path + ": " + why}; }

bool write_all_blocking(int fd, const std::string &contents)
{
	for (size_t done = 0; done < contents.size();) {
		ssize_t n = write(fd, contents.data() + done, contents.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		done += size_t(n);
	}
	return true;
}

// Creates the temporary file in dir (an open directory): O_EXCL never opens
// what is already there, a symlink included.
Result<std::pair<UniqueFd, std::string>> create_temp(int dir, const std::string &base)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		std::string name = temp_name(base);
		int fd = openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			return std::pair{UniqueFd(fd), name};
		if (errno != EEXIST)
			return Error{strerror(errno)};
	}
	return Error{"no unused temporary name"};
}

// A file descriptor as a Sink, through a 64 KiB buffer. The first failed
// write is kept (its errno) and ends the writing; ok() says whether all went.
class FdSink : public Sink {
public:
	FdSink(int fd, bool (*write_all)(int, const std::string &)) : fd_(fd), write_all_(write_all)
	{
		buf_.reserve(kChunk);
	}
	void write(const char *data, size_t size) override
	{
		if (buf_.size() + size > kChunk)
			flush();
		if (size >= kChunk)
			put(std::string(data, size));
		else
			buf_.append(data, size);
	}
	using Sink::write;
	// Writes what is buffered; false (errno set) if anything failed.
	bool flush()
	{
		put(buf_);
		buf_.clear();
		errno = err_;
		return err_ == 0;
	}

private:
	static constexpr size_t kChunk = 1 << 16;
	void put(const std::string &bytes)
	{
		if (err_ == 0 && !bytes.empty() && !write_all_(fd_, bytes))
			err_ = errno ? errno : EIO;
	}
	int fd_;
	bool (*write_all_)(int, const std::string &);
	std::string buf_;
	int err_ = 0;
};

// Writes base in dir (an open directory) by a temporary file renamed over it.
// If produce throws, the temporary file is removed and the exception goes on.
Result<void> replace_in(int dir, const std::string &base, const OutputProducer &produce)
{
	auto temp = create_temp(dir, base);
	if (!temp)
		return temp.error();
	auto &[fd, name] = *temp;
	bool written;
	try {
		FdSink sink(fd.get(), write_all_blocking);
		produce(sink);
		written = sink.flush() && fsync(fd.get()) == 0;
	} catch (...) {
		unlinkat(dir, name.c_str(), 0);
		throw;
	}
	int err = errno;
	if (close(std::exchange(fd, UniqueFd()).get()) != 0 && written)
		written = false, err = errno;
	if (written && renameat(dir, name.c_str(), dir, base.c_str()) == 0) {
		fsync(dir); // makes the rename durable; best effort, the data is in place
		return {};
	}
	if (written)
		err = errno;
	unlinkat(dir, name.c_str(), 0);
	return Error{strerror(err)};
}

// Only our own or root's symlinks are followed: another user's link would
// choose where root writes (a confused deputy), wherever it was planted.
Result<void> check_symlink_owner(const std::string &link, const struct stat &st)
{
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return Error{"symlink " + link + " belongs to uid " + std::to_string(st.st_uid) +
			     ", not followed (give its target instead)"};
	return {};
}

// Only our own or root's FIFOs are written through: another user's FIFO,
// planted at the output's name, would hand root's output to its reader.
// (Character devices can only be made by root.)
Result<void> check_fifo_owner(const std::string &fifo, const struct stat &st)
{
	if (S_ISFIFO(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0)
		return Error{"FIFO " + fifo + " belongs to uid " + std::to_string(st.st_uid) + ", not written"};
	return {};
}

// /proc/self/fd/N and the like (/dev/stdout) are the kernel's links to open
// files, pipes and sockets: written through whatever they are, as a shell does.
bool is_proc_link(const std::string &path) { return path.rfind("/proc/", 0) == 0; }

enum class Kind { File, Stream };
struct Destination {
	Kind kind;
	std::string path; // symlinks followed
};

const char *refused_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "is a directory";
	if (S_ISBLK(mode))
		return "is a block device: usdtprof does not write over one";
	if (S_ISSOCK(mode))
		return "is a socket";
	return nullptr;
}

// What the user's path names once its symlinks are followed.
Result<Destination> resolve(const std::string &path)
{
	std::string p = path;
	for (int hops = 0;; hops++) {
		struct stat st;
		if (lstat(p.c_str(), &st) != 0)
			return errno == ENOENT ? Result<Destination>(Destination{Kind::File, p}) : Error{strerror(errno)};
		std::string shown = p == path ? "" : " (" + p + ")";
		if (const char *refused = refused_kind(st.st_mode))
			return Error{refused + shown};
		if (auto r = check_fifo_owner(p, st); !r)
			return r.error();
		if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
			return Destination{Kind::Stream, p};
		if (!S_ISLNK(st.st_mode))
			return Destination{Kind::File, p};
		if (hops == 40)
			return Error{strerror(ELOOP)};
		if (auto r = check_symlink_owner(p, st); !r)
			return r.error();
		if (is_proc_link(p))
			return Destination{Kind::Stream, p};
		char target[PATH_MAX];
		ssize_t n = readlink(p.c_str(), target, sizeof target - 1);
		if (n < 0)
			return Error{strerror(errno)};
		std::string next(target, size_t(n));
		p = next[0] == '/' ? next : dir_of(p) + "/" + next;
	}
}

bool stop_signal_pending()
{
	sigset_t pending;
	sigpending(&pending);
	return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM);
}

// Opens a FIFO or device without blocking. A FIFO without a reader is waited
// for (saying so once) until one comes or SIGINT/SIGTERM is pending: usdtprof
// may have them blocked while it writes, and must not hang deaf.
Result<UniqueFd> open_stream(const std::string &path, const std::string &shown)
{
	for (bool said = false;;) {
		int follow = is_proc_link(path) ? 0 : O_NOFOLLOW;
		int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | follow | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0)
			return UniqueFd(fd);
		if (errno != ENXIO)
			return Error{strerror(errno)};
		if (!said)
			log_line("%s: waiting for a reader of the FIFO (Ctrl-C to give up)", shown.c_str());
		said = true;
		if (stop_signal_pending())
			return Error{"no reader of the FIFO"};
		poll(nullptr, 0, 100);
	}
}

// Writes through O_NONBLOCK, waiting in poll so that a pending SIGINT/SIGTERM
// still ends a write a reader does not take; EPIPE, not SIGPIPE, if the reader goes.
bool write_all_nonblocking(int fd, const std::string &contents)
{
	sigset_t pipe, old;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	bool ok = true;
	for (size_t done = 0; ok && done < contents.size();) {
		ssize_t n = write(fd, contents.data() + done, contents.size() - done);
		if (n >= 0)
			done += size_t(n);
		else if (errno == EAGAIN) {
			pollfd p{fd, POLLOUT, 0};
			ok = !stop_signal_pending() && (poll(&p, 1, 100) >= 0 || errno == EINTR);
			errno = ok ? 0 : ECANCELED;
		} else
			ok = errno == EINTR;
	}
	int err = errno;
	static const timespec now{};
	while (sigtimedwait(&pipe, nullptr, &now) == SIGPIPE) // the one our write raised
		;
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	errno = err;
	return ok;
}

// SIGINT and SIGTERM held blocked while a stream is written, so that
// stop_signal_pending() sees them end the wait (record and trace block them
// already). For a caller that had them unblocked (export), one that came is
// taken here: the write ends with its error line and exit 1 rather than death.
class StopSignalsHeld {
public:
	StopSignalsHeld()
	{
		sigset_t stop;
		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &stop, &old_);
	}
	~StopSignalsHeld()
	{
		sigset_t taken;
		sigemptyset(&taken);
		for (int sig : {SIGINT, SIGTERM})
			if (!sigismember(&old_, sig))
				sigaddset(&taken, sig);
		static const timespec now{};
		while (sigtimedwait(&taken, nullptr, &now) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &old_, nullptr);
	}
	StopSignalsHeld(const StopSignalsHeld &) = delete;
	StopSignalsHeld &operator=(const StopSignalsHeld &) = delete;

private:
	sigset_t old_;
};

Result<void> write_stream(const std::string &path, const std::string &shown, const OutputProducer &produce)
{
	StopSignalsHeld held;
	auto fd = open_stream(path, shown);
	if (!fd)
		return fd.error();
	// Swapped for something else between lstat and open: refuse it.
	struct stat st;
	if (fstat(fd->get(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || is_proc_link(path)))
		return Error{"changed while being opened"};
	if (!is_proc_link(path))
		if (auto r = check_fifo_owner(path, st); !r)
			return r.error();
	if (S_ISREG(st.st_mode) && ftruncate(fd->get(), 0) != 0) // > /dev/stdout on a file
		return Error{strerror(errno)};
	FdSink sink(fd->get(), write_all_nonblocking);
	produce(sink);
	if (!sink.flush())
		return Error{strerror(errno)};
	return {};
}

Result<void> replace_file(const std::string &path, const OutputProducer &produce)
{
	UniqueFd dir(open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (dir.get() < 0)
		return Error{strerror(errno)};
	return replace_in(dir.get(), base_of(path), produce);
}

} // namespace

Result<void> write_file_atomically(const std::string &path, const std::string &contents)
{
	return write_file_atomically(path, [&](Sink &out) { out.write(contents); });
}

Result<void> write_file_atomically(const std::string &path, const OutputProducer &produce)
{
	if (auto r = replace_file(path, produce); !r)
		return cannot_write(path, r.error().message);
	return {};
}

Result<void> write_output(const std::string &path, const std::string &contents)
{
	return write_output(path, [&](Sink &out) { out.write(contents); });
}

Result<void> write_output(const std::string &path, const OutputProducer &produce)
{
	auto dest = resolve(path);
	if (!dest)
		return cannot_write(path, dest.error().message);
	std::string shown = dest->path == path ? path : path + " (" + dest->path + ")";
	auto r = dest->kind == Kind::Stream ? write_stream(dest->path, shown, produce) : replace_file(dest->path, produce);
	if (!r)
		return cannot_write(shown, r.error().message);
	return {};
}

Result<void> check_output(const std::string &path)
{
	auto dest = resolve(path);
	if (!dest)
		return cannot_write(path, dest.error().message);
	if (dest->kind == Kind::File && access(dir_of(dest->path).c_str(), W_OK) != 0)
		return cannot_write(dest->path == path ? path : path + " (" + dest->path + ")", strerror(errno));
	return {};
}

namespace {

// The name that writing path creates when it is not there yet: a dangling
// symlink (a chain of them) is followed to the name it points to, as resolve()
// follows it for write_output, then "." and ".." and the directories' symlinks
// are resolved (weakly_canonical). Empty if that fails.
std::filesystem::path name_written(const std::string &path)
{
	std::string p = path;
	struct stat st;
	for (int hops = 0; hops < 40 && lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode); hops++) {
		char target[PATH_MAX];
		ssize_t n = readlink(p.c_str(), target, sizeof target - 1);
		if (n <= 0)
			return {};
		std::string next(target, size_t(n));
		p = next[0] == '/' ? next : dir_of(p) + "/" + next;
	}
	std::error_code ec;
	auto canonical = std::filesystem::weakly_canonical(p, ec);
	return ec ? std::filesystem::path() : canonical;
}

} // namespace

bool same_file(const std::string &a, const std::string &b)
{
	struct stat sa, sb;
	if (stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	auto ca = name_written(a), cb = name_written(b);
	return !ca.empty() && ca == cb;
}

} // namespace usdtprof
