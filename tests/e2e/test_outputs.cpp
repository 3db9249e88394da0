// Output paths (docs/security.md "Output files", docs/failure-modes.md) and
// text escaping ("Text output escaping") as a user and an attacker meet them,
// against the real binary: record, trace and export each write through a
// device or FIFO, follow our own symlinks, refuse another user's and refuse a
// directory, block device or socket; nobody's planted links never redirect
// root's write; a target's hostile names reach no output raw.
#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <grp.h>
#include <set>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness.h"

using namespace e2e;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;
const char *const kKinds[] = {"record", "trace", "export"};

std::string read_all(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct stat lstat_of(const std::string &path)
{
	struct stat st {};
	REQUIRE(lstat(path.c_str(), &st) == 0);
	return st;
}

std::set<std::string> entries(const std::string &dir)
{
	std::set<std::string> names;
	for (const auto &e : fs::directory_iterator(dir))
		names.insert(e.path().filename());
	return names;
}

size_t lines(const std::string &text) { return size_t(std::count(text.begin(), text.end(), '\n')); }

// A scratch directory of root's (0755; under /var/tmp, away from other runs'
// clean-up of /tmp), removed at the end, with a profile recorded into it.
struct Scratch {
	std::string dir, profile, trace_profile, folded;

	Scratch()
	{
		char tmpl[] = "/var/tmp/usdtprof-outputs-XXXXXX";
		REQUIRE(mkdtemp(tmpl) != nullptr);
		dir = tmpl;
		REQUIRE(chmod(dir.c_str(), 0755) == 0);
		profile = dir + "/in.data";
		trace_profile = dir + "/trace-profile.data";
		Output rec = run({e2e::usdtprof(), "record", "-o", profile, "--", target("names")});
		INFO(rec.err);
		REQUIRE(rec.status == 0);
		Output exp = run({e2e::usdtprof(), "export", profile, "--format", "folded"});
		REQUIRE(exp.status == 0);
		folded = exp.out;
		REQUIRE(!folded.empty());
	}
	~Scratch() { fs::remove_all(dir); }

	// The command of kind (record, trace or export) writing its output to out.
	std::vector<std::string> writer(const std::string &kind, const std::string &out) const
	{
		if (kind == "export")
			return {e2e::usdtprof(), "export", profile, "--format", "folded", "-o", out};
		if (kind == "trace")
			return {e2e::usdtprof(), "trace", "-o", out, "--profile", trace_profile, "--", target("names")};
		return {e2e::usdtprof(), "record", "-o", out, "--", target("names")};
	}

	// bytes is what kind writes: a profile report reads, a trace JSON parses
	// with events, export's folded stacks.
	void require_output_of(const std::string &kind, const std::string &bytes) const
	{
		if (kind == "export") {
			REQUIRE(bytes == folded);
		} else if (kind == "trace") {
			nlohmann::json trace = nlohmann::json::parse(bytes);
			REQUIRE(trace.at("traceEvents").size() > 2);
		} else {
			std::string copy = dir + "/copy.data";
			std::ofstream(copy, std::ios::binary) << bytes;
			Output o = run({e2e::usdtprof(), "report", copy});
			INFO(o.err);
			REQUIRE(o.status == 0);
			REQUIRE_THAT(o.out, Contains("abcdef"));
			fs::remove(copy);
		}
	}
};

// A child process running work as nobody (uid and gid 65534, no groups),
// killed at the end of the scope. work must not use Catch.
class AsNobody {
public:
	explicit AsNobody(const std::function<void()> &work)
	{
		pid_ = fork();
		REQUIRE(pid_ >= 0);
		if (pid_ == 0) {
			if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
			    setresuid(kNobody, kNobody, kNobody) != 0)
				_exit(126);
			work();
			_exit(0);
		}
	}
	~AsNobody()
	{
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
	}
	int wait()
	{
		int status;
		REQUIRE(waitpid(std::exchange(pid_, -1), &status, 0) > 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}

private:
	pid_t pid_ = -1;
};

// The offset of the first byte of text a terminal acts on or that is not
// UTF-8, else npos: a C0 control but LF, DEL, invalid UTF-8 (so a raw C1
// byte), and, encoded in UTF-8, a C1 control (U+0080-U+009F), U+200E, U+200F,
// U+2028-U+202E or U+2066-U+2069. json_text allows what JSON escapes anyway
// (only raw C0 bytes and invalid UTF-8 count).
size_t first_unsafe(const std::string &text, bool json_text)
{
	try {
		(void)nlohmann::json(text).dump(); // throws on invalid UTF-8
	} catch (const nlohmann::json::type_error &) {
		return 0;
	}
	for (size_t i = 0; i < text.size(); i++) {
		unsigned char a = text[i], b = i + 1 < text.size() ? text[i + 1] : 0, c = i + 2 < text.size() ? text[i + 2] : 0;
		if ((a < 0x20 && a != '\n') || a == 0x7f)
			return i;
		if (json_text)
			continue;
		if ((a == 0xc2 && b >= 0x80 && b <= 0x9f) ||
		    (a == 0xe2 && b == 0x80 && ((c >= 0x8e && c <= 0x8f) || (c >= 0xa8 && c <= 0xae))) ||
		    (a == 0xe2 && b == 0x81 && c >= 0xa6 && c <= 0xa9))
			return i;
	}
	return std::string::npos;
}

// text is safe on a terminal and has no line a name injected (the hostile
// names put "fake" after their CR LF).
void require_terminal_safe(const std::string &text)
{
	INFO(text);
	REQUIRE(first_unsafe(text, false) == std::string::npos);
	REQUIRE(text.rfind("fake", 0) != 0);
	REQUIRE(text.find("\nfake") == std::string::npos);
}

// JSON output keeps its own escaping: no raw C0 byte, valid UTF-8, parses.
nlohmann::json require_clean_json(const std::string &text)
{
	INFO(text);
	REQUIRE(first_unsafe(text, true) == std::string::npos);
	return nlohmann::json::parse(text);
}

} // namespace

TEST_CASE("outputs: -o to a character device is written through, never replaced", "[outputs][security]")
{
	Scratch s;
	std::string null = s.dir + "/null", full = s.dir + "/full";
	REQUIRE(mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
	REQUIRE(mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);
	struct stat null_before = lstat_of(null), full_before = lstat_of(full);
	for (std::string kind : kKinds) {
		INFO(kind);
		Output o = run(s.writer(kind, null));
		INFO(o.err);
		REQUIRE(o.status == 0);
		// /dev/full refuses every write: the error proves the write went
		// through the device (a file put in its place would take it).
		Output f = run(s.writer(kind, full));
		REQUIRE(f.status == 1);
		REQUIRE_THAT(f.err, Contains("usdtprof: cannot write " + full + ": No space left on device\n"));
		for (const auto &[dev, before, rdev] : {std::tuple{null, null_before, makedev(1, 3)},
							 std::tuple{full, full_before, makedev(1, 7)}}) {
			struct stat st = lstat_of(dev);
			REQUIRE(S_ISCHR(st.st_mode));
			REQUIRE(st.st_rdev == rdev);
			REQUIRE(st.st_mode == before.st_mode);
			REQUIRE(st.st_ino == before.st_ino);
			REQUIRE(st.st_uid == 0);
		}
	}
	REQUIRE(entries(s.dir) == std::set<std::string>{"full", "in.data", "null", "trace-profile.data"});
}

TEST_CASE("outputs: -o to a FIFO is written through to its reader; without one SIGTERM gives up",
	  "[outputs][security]")
{
	Scratch s;
	std::string fifo = s.dir + "/fifo", got = s.dir + "/got";
	REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
	for (std::string kind : kKinds) {
		INFO(kind);
		{
			Background reader({"dd", "if=" + fifo, "of=" + got, "status=none"});
			Output o = run(s.writer(kind, fifo));
			INFO(o.err);
			REQUIRE(o.status == 0);
			REQUIRE(reader.wait() == 0);
			s.require_output_of(kind, read_all(got));
		}
		{
			Background writer(s.writer(kind, fifo));
			writer.wait_for_line(fifo + ": waiting for a reader of the FIFO (Ctrl-C to give up)", true);
			REQUIRE(kill(writer.pid(), SIGTERM) == 0);
			REQUIRE(writer.wait() == 1);
			REQUIRE_THAT(writer.rest_of_stderr(),
				     Contains("usdtprof: cannot write " + fifo + ": no reader of the FIFO\n"));
		}
		struct stat st = lstat_of(fifo);
		REQUIRE(S_ISFIFO(st.st_mode));
		REQUIRE((st.st_mode & 07777) == 0600);
		for (const std::string &name : entries(s.dir)) // nothing beside: no temporary file
			REQUIRE(std::set<std::string>{"fifo", "got", "in.data", "trace-profile.data", "nobodys"}.count(name) == 1);
	}
	// Another user's FIFO at the output's name would hand root's output to
	// its reader: refused before anything is recorded, like its symlinks.
	std::string nobodys = s.dir + "/nobodys";
	REQUIRE(mkfifo(nobodys.c_str(), 0666) == 0);
	REQUIRE(chown(nobodys.c_str(), kNobody, kNobody) == 0);
	for (std::string kind : kKinds) {
		INFO(kind);
		fs::remove(s.trace_profile);
		Output refused = run(s.writer(kind, nobodys));
		REQUIRE(refused.status == 1);
		REQUIRE(refused.err == "usdtprof: cannot write " + nobodys + ": FIFO " + nobodys + " belongs to uid 65534, not written\n");
		REQUIRE(S_ISFIFO(lstat_of(nobodys).st_mode));
		REQUIRE(!fs::exists(s.trace_profile));
	}
}

TEST_CASE("outputs: -o follows our own symlinks, refuses another user's, writes /dev/stdout through",
	  "[outputs][security]")
{
	Scratch s;
	std::string real_dir = s.dir + "/real", real = real_dir + "/out";
	std::string absolute = s.dir + "/absolute", relative = s.dir + "/relative", nobodys = s.dir + "/nobodys";
	REQUIRE(mkdir(real_dir.c_str(), 0755) == 0);
	REQUIRE(symlink(real.c_str(), absolute.c_str()) == 0);
	REQUIRE(symlink("real/out", relative.c_str()) == 0);
	REQUIRE(symlink(real.c_str(), nobodys.c_str()) == 0);
	REQUIRE(lchown(nobodys.c_str(), kNobody, kNobody) == 0);
	for (std::string kind : kKinds) {
		INFO(kind);
		for (const std::string &link : {absolute, relative}) {
			INFO(link);
			// record and trace replace only a profile (or an empty file): never a program or a document.
			const std::string old = kind == "export" ? std::string("old") : read_all(s.profile);
			std::ofstream(real) << old;
			Output o = run(s.writer(kind, link));
			INFO(o.err);
			REQUIRE(o.status == 0);
			REQUIRE(S_ISLNK(lstat_of(link).st_mode));
			REQUIRE(fs::read_symlink(link) == (link == absolute ? real : "real/out"));
			REQUIRE(S_ISREG(lstat_of(real).st_mode));
			s.require_output_of(kind, read_all(real));
			REQUIRE(entries(real_dir) == std::set<std::string>{"out"}); // no temporary file left
		}
		// Another user's link would choose where root writes: refused before
		// anything is recorded, its target untouched.
		std::ofstream(real) << "old";
		fs::remove(s.trace_profile);
		Output refused = run(s.writer(kind, nobodys));
		REQUIRE(refused.status == 1);
		REQUIRE(refused.err == "usdtprof: cannot write " + nobodys + ": symlink " + nobodys +
					       " belongs to uid 65534, not followed (give its target instead)\n");
		REQUIRE(read_all(real) == "old");
		REQUIRE(lstat_of(nobodys).st_uid == kNobody);
		REQUIRE(!fs::exists(s.trace_profile));
		// /dev/stdout: the kernel's link to our pipe, written through.
		Output out = run(s.writer(kind, "/dev/stdout"));
		INFO(out.err);
		REQUIRE(out.status == 0);
		s.require_output_of(kind, out.out);
	}
	REQUIRE(S_ISLNK(lstat_of("/dev/stdout").st_mode));
}

TEST_CASE("outputs: -o - is stdout for report, export and diff, as without -o; no file named -", "[outputs]")
{
	Scratch s;
	const std::string dash = fs::current_path() / "-";
	REQUIRE(!fs::exists(dash));
	const std::vector<std::vector<std::string>> commands = {
		{e2e::usdtprof(), "report", s.profile},
		{e2e::usdtprof(), "report", s.profile, "--format", "json"},
		{e2e::usdtprof(), "export", s.profile, "--format", "folded"},
		{e2e::usdtprof(), "diff", s.profile, s.profile}};
	for (std::vector<std::string> args : commands) {
		INFO(args[1] << " " << args.back());
		Output plain = run(args);
		args.insert(args.end(), {"-o", "-"});
		Output o = run(args);
		INFO(o.err);
		REQUIRE(plain.status == 0);
		REQUIRE(o.status == 0);
		// Not empty (the folded stacks: a;b%c's line; the empty function's
		// self time, compensated, is ~0 and may be left out).
		REQUIRE(lines(o.out) >= 1);
		REQUIRE(o.out == plain.out);
		REQUIRE(!fs::exists(dash));
	}
}

TEST_CASE("outputs: -o naming a directory, a block device, a socket or a missing directory: one line, exit 1, "
	  "nothing changed",
	  "[outputs][security]")
{
	Scratch s;
	std::string dir = s.dir + "/d", blk = s.dir + "/blk", sock = s.dir + "/sock", missing = s.dir + "/no/x";
	REQUIRE(mkdir(dir.c_str(), 0755) == 0);
	std::ofstream(dir + "/kept") << "kept";
	REQUIRE(mknod(blk.c_str(), S_IFBLK | 0600, makedev(7, 255)) == 0);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	REQUIRE(fd >= 0);
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	REQUIRE(sock.size() < sizeof addr.sun_path);
	sock.copy(addr.sun_path, sock.size());
	REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0);
	close(fd);
	fs::remove(s.trace_profile);
	std::set<std::string> before = entries(s.dir);
	for (std::string kind : kKinds) {
		INFO(kind);
		for (const auto &[path, why] : std::vector<std::pair<std::string, std::string>>{
			     {dir, "is a directory"},
			     {blk, "is a block device: usdtprof does not write over one"},
			     {sock, "is a socket"},
			     {missing, "No such file or directory"}}) {
			Output o = run(s.writer(kind, path));
			INFO(o.err);
			REQUIRE(o.status == 1);
			REQUIRE(o.err == "usdtprof: cannot write " + path + ": " + why + "\n");
			REQUIRE(o.out.empty());
		}
		REQUIRE(entries(s.dir) == before); // no profile of the trace, no temporary file
		REQUIRE(entries(dir) == std::set<std::string>{"kept"});
		REQUIRE(read_all(dir + "/kept") == "kept");
		REQUIRE(S_ISBLK(lstat_of(blk).st_mode));
		REQUIRE(lstat_of(blk).st_rdev == makedev(7, 255));
		REQUIRE(S_ISSOCK(lstat_of(sock).st_mode));
	}
}

TEST_CASE("outputs: -o naming a profile the command reads (itself, a link, a monitor directory's file) is "
	  "refused: exit 2, the profile unchanged",
	  "[outputs][security]")
{
	Scratch s;
	std::string in = s.profile, link = s.dir + "/link.data", mon = s.dir + "/mon";
	REQUIRE(symlink("in.data", link.c_str()) == 0);
	REQUIRE(mkdir(mon.c_str(), 0755) == 0);
	std::string interval = mon + "/usdtprof-20261203-101500.data";
	fs::copy_file(in, interval);
	const std::string bytes = read_all(in);
	auto refused = [&](std::vector<std::string> args, const std::string &out, const std::string &named) {
		INFO(args[1] << " -o " << out);
		args.insert(args.end(), {"-o", out});
		Output o = run(args);
		REQUIRE(o.status == 2);
		REQUIRE(o.out.empty());
		REQUIRE(o.err == "usdtprof: -o " + out + " is the input " + named +
					 ": it would be replaced; write to another file\n");
	};
	std::string u = e2e::usdtprof();
	for (const std::string &out : {in, link, s.dir + "/./in.data"}) {
		refused({u, "report", in}, out, in);
		refused({u, "report", "--format", "json", link}, out, link);
		refused({u, "export", in, "--format", "pprof"}, out, in);
		refused({u, "diff", mon, in}, out, in);
	}
	refused({u, "report", mon}, interval, interval);
	REQUIRE(read_all(in) == bytes);
	REQUIRE(read_all(interval) == bytes);
	REQUIRE(S_ISLNK(lstat_of(link).st_mode));
	// Not an input: written as always.
	Output ok = run({u, "report", mon, "-o", mon + "/report.txt"});
	INFO(ok.err);
	REQUIRE(ok.status == 0);
	REQUIRE_THAT(read_all(mon + "/report.txt"), Contains("abcdef"));
}

TEST_CASE("outputs: record never replaces a file that is not a profile (the program it runs); trace's two "
	  "outputs never one file",
	  "[outputs][security]")
{
	Scratch s;
	std::string app = s.dir + "/app", doc = s.dir + "/notes.txt", same = s.dir + "/same";
	fs::copy_file(target("names"), app);
	std::ofstream(doc) << "notes";
	const std::string program = read_all(app);
	for (const std::string &out : {app, doc}) {
		Output o = run({e2e::usdtprof(), "record", "-o", out, "--", app});
		INFO(o.err);
		REQUIRE(o.status == 1);
		REQUIRE(o.err == "usdtprof: cannot write " + out +
					 ": it exists and is not a usdtprof profile (remove it first or choose another name)\n");
	}
	REQUIRE(read_all(app) == program);
	REQUIRE(read_all(doc) == "notes");
	Output t = run({e2e::usdtprof(), "trace", "-o", same, "--profile", s.dir + "/./same", "--", app});
	REQUIRE(t.status == 2);
	REQUIRE(t.err == "usdtprof: -o " + same + " and --profile " + s.dir +
				 "/./same name one file: the trace would replace the profile\n");
	REQUIRE(!fs::exists(same));
	// A symlink to a name not there yet: both writes would go through it
	// to that name, the trace over the profile.
	std::string dangling = s.dir + "/dangling";
	REQUIRE(symlink("same", dangling.c_str()) == 0);
	for (const auto &[trace_out, profile] : {std::pair{dangling, same}, std::pair{same, dangling}}) {
		Output d = run({e2e::usdtprof(), "trace", "-o", trace_out, "--profile", profile, "--", app});
		REQUIRE(d.status == 2);
		REQUIRE(d.err == "usdtprof: -o " + trace_out + " and --profile " + profile +
					 " name one file: the trace would replace the profile\n");
		REQUIRE(!fs::exists(same));
		REQUIRE(S_ISLNK(lstat_of(dangling).st_mode));
	}
	// A profile already there is replaced, as always.
	Output again = run({e2e::usdtprof(), "record", "-o", s.profile, "--", app});
	INFO(again.err);
	REQUIRE(again.status == 0);
}

TEST_CASE("outputs: an input that never ends (/dev/zero, a pipe of a profile then zeros) is refused at once",
	  "[outputs]")
{
	Scratch s;
	Output zero = run({e2e::usdtprof(), "report", "/dev/zero"});
	REQUIRE(zero.status == 1);
	REQUIRE(zero.err == "usdtprof: /dev/zero: not a usdtprof profile\n");
	// A valid profile followed by endless bytes: read to its announced end and one byte more.
	Output tail = run({"sh", "-c", "cat \"$1\" /dev/zero | \"$2\" report /dev/stdin", "sh", s.profile, e2e::usdtprof()});
	REQUIRE(tail.status == 1);
	REQUIRE_THAT(tail.err, Contains("usdtprof: /dev/stdin: corrupt: trailing data after the announced"));
	Output whole = run({"sh", "-c", "cat \"$1\" | \"$2\" report /dev/stdin", "sh", s.profile, e2e::usdtprof()});
	INFO(whole.err);
	REQUIRE(whole.status == 0);
	REQUIRE_THAT(whole.out, Contains("abcdef"));
}

TEST_CASE("outputs: nobody's planted links and racing swaps never redirect root's write", "[outputs][security]")
{
	// nobody owns the directory root exports into (a stronger position than
	// /tmp's sticky bit gives: it may unlink and rename root's files there)
	// and wants a root-only file overwritten.
	Scratch s;
	std::string drop = s.dir + "/drop", secret = s.dir + "/secret";
	REQUIRE(mkdir(drop.c_str(), 0755) == 0);
	REQUIRE(chown(drop.c_str(), kNobody, kNobody) == 0);
	std::ofstream(secret) << "root only";
	REQUIRE(chmod(secret.c_str(), 0600) == 0);
	auto export_to = [&](const std::string &name) {
		return run({e2e::usdtprof(), "export", s.profile, "--format", "folded", "-o", drop + "/" + name});
	};

	// Links at the old temporary names (OUT.tmp.PID) of the next 3000 pids,
	// a link at an output's own name, a file of nobody's at another's.
	int first_pid = getpid() + 1;
	AsNobody planter([&] {
		for (int pid = first_pid; pid < first_pid + 3000; pid++)
			for (int n = 1; n <= 5; n++) {
				std::string name = drop + "/out" + std::to_string(n) + ".tmp." + std::to_string(pid);
				if (symlink(secret.c_str(), name.c_str()) != 0)
					_exit(1);
			}
		if (symlink(secret.c_str(), (drop + "/named").c_str()) != 0)
			_exit(1);
		std::ofstream(drop + "/out2") << "planted";
	});
	REQUIRE(planter.wait() == 0);
	REQUIRE(lstat_of(drop + "/out2").st_uid == kNobody);
	for (int n = 1; n <= 5; n++) {
		std::string out = drop + "/out" + std::to_string(n);
		Output o = export_to("out" + std::to_string(n));
		INFO(o.err);
		REQUIRE(o.status == 0);
		struct stat st = lstat_of(out);
		REQUIRE(S_ISREG(st.st_mode));
		REQUIRE(st.st_uid == 0);
		REQUIRE(st.st_nlink == 1);
		REQUIRE(read_all(out) == s.folded);
	}
	Output named = export_to("named");
	REQUIRE(named.status == 1);
	REQUIRE_THAT(named.err, Contains("symlink " + drop + "/named belongs to uid 65534, not followed"));
	REQUIRE(S_ISLNK(lstat_of(drop + "/named").st_mode));

	// A racer swaps every temporary file root creates for a link to the
	// secret. Root's data then goes to the file it opened (now unlinked):
	// the output is lost or is nobody's link, never written through it.
	AsNobody racer([&] {
		for (;;) {
			DIR *d = opendir(drop.c_str());
			if (!d)
				_exit(1);
			while (dirent *e = readdir(d))
				if (strncmp(e->d_name, "race.tmp.", 9) == 0 && e->d_type != DT_LNK &&
				    unlinkat(dirfd(d), e->d_name, 0) == 0)
					symlinkat(secret.c_str(), dirfd(d), e->d_name);
			closedir(d);
		}
	});
	for (int i = 0; i < 20; i++) {
		Output o = export_to("race");
		INFO(o.err);
		REQUIRE((o.status == 0 || o.status == 1));
		if (o.status == 1) // the racer took the temporary name before the rename
			REQUIRE_THAT(o.err, StartsWith("usdtprof: cannot write " + drop + "/race: "));
		REQUIRE(lines(o.err) == size_t(o.status));
		// The export's own file, or (the racer won) nobody's link, or nothing.
		struct stat st {};
		if (lstat((drop + "/race").c_str(), &st) == 0) {
			if (S_ISREG(st.st_mode))
				REQUIRE(read_all(drop + "/race") == s.folded);
			else
				REQUIRE(fs::read_symlink(drop + "/race") == secret);
		} else {
			REQUIRE(o.status == 1);
		}
		REQUIRE(read_all(secret) == "root only");
		fs::remove(drop + "/race"); // root's to remove: nobody's link would refuse the next export
	}
	REQUIRE(read_all(secret) == "root only");
	struct stat st = lstat_of(secret);
	REQUIRE((st.st_mode & 07777) == 0600);
	REQUIRE(st.st_nlink == 1);
	for (const std::string &name : entries(drop)) // root never leaves a temporary file behind
		if (name.find(".tmp.") != std::string::npos)
			REQUIRE(S_ISLNK(lstat_of(drop + "/" + name).st_mode));
}

TEST_CASE("escaping: a target's hostile names and path reach no terminal raw", "[outputs][security][escape]")
{
	// hostile_names names its process, a thread and functions with ESC
	// sequences, CR, LF + a fake line, raw C1 bytes, a UTF-8 C1 control, a
	// bidi override and invalid UTF-8; it runs from a path that has some too.
	Scratch s;
	std::string bin = s.dir + "/bin\x1b[2J\r\nfake\xff", data = s.dir + "/h.data";
	fs::copy_file(target("hostile_names"), bin);
	const std::string comm = "p\\x1b[31m\\x0d\\x0afake\\x9b\\xff";
	const std::string evil = "evil\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\x0afake line";

	// Runs hostile_names from bin, held until `usdtprof SUBCOMMAND -p PID
	// ARGS...` logs started, then to its end; returns that command's log.
	auto log_of_profiling = [&](const std::string &subcommand, const std::vector<std::string> &args,
				    const std::string &started) {
		Background held({bin, "--wait"});
		held.wait_for_line("ready");
		std::vector<std::string> argv = {e2e::usdtprof(), subcommand, "-p", std::to_string(held.pid())};
		argv.insert(argv.end(), args.begin(), args.end());
		Background profiler(argv);
		profiler.wait_for_line(started, true);
		REQUIRE(kill(held.pid(), SIGUSR1) == 0);
		REQUIRE(held.wait() == 0);
		REQUIRE(profiler.wait() == 0);
		return profiler.rest_of_stderr();
	};

	{
		Background held({bin, "--wait"});
		held.wait_for_line("ready");
		std::string pid = std::to_string(held.pid());
		Output list = run({e2e::usdtprof(), "list", "-p", pid});
		INFO(list.err);
		REQUIRE(list.status == 0);
		require_terminal_safe(list.out);
		require_terminal_safe(list.err);
		REQUIRE_THAT(list.out, Contains("/bin\\x1b[2J\\x0d"));
		Output list_json = run({e2e::usdtprof(), "list", "--format", "json", "-p", pid});
		REQUIRE(list_json.status == 0);
		nlohmann::json listed = require_clean_json(list_json.out);
		REQUIRE_THAT(listed.at("binaries").at(0).at("path").get<std::string>(), Contains("/bin\x1b[2J\r"));
	}
	Output list_bin = run({e2e::usdtprof(), "list", bin});
	REQUIRE(list_bin.status == 0);
	require_terminal_safe(list_bin.out);
	REQUIRE_THAT(list_bin.out, Contains("/bin\\x1b[2J\\x0d\\x0afake\\xff\n"));

	std::string record_log = log_of_profiling("record", {"-o", data}, "recording");
	require_terminal_safe(record_log);
	REQUIRE_THAT(record_log, Contains("(" + comm + ")"));

	for (std::vector<std::string> opts : std::vector<std::vector<std::string>>{
		     {}, {"--tree"}, {"--per-process"}, {"--per-process", "--tree"}}) {
		std::vector<std::string> argv = {e2e::usdtprof(), "report", data};
		argv.insert(argv.end(), opts.begin(), opts.end());
		Output o = run(argv);
		INFO(o.err);
		REQUIRE(o.status == 0);
		require_terminal_safe(o.out);
		require_terminal_safe(o.err);
		// Invalid UTF-8 was made U+FFFD when the profile was saved (JSON).
		REQUIRE_THAT(o.out, Contains(evil + "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "31m"));
		REQUIRE_THAT(o.out, Contains("main\\x0d\\x0afake line\\u009b31m\\u202ereversed"));
		if (opts.size() == 2) // the process as the root of its tree
			REQUIRE_THAT(o.out, Contains("p\\x1b[31m\\x0d\\x0afake\xef\xbf\xbd\xef\xbf\xbd (pid "));
	}
	Output json = run({e2e::usdtprof(), "report", "--format", "json", data});
	REQUIRE(json.status == 0);
	require_clean_json(json.out);
	Output folded = run({e2e::usdtprof(), "export", data, "--format", "folded"});
	REQUIRE(folded.status == 0);
	require_terminal_safe(folded.out);
	REQUIRE_THAT(folded.out, Contains("main%0D%0Afake line%C2%9B31m%E2%80%AEreversed "));
	Output pprof = run({e2e::usdtprof(), "export", data, "--format", "pprof", "-o", s.dir + "/h.pb.gz"});
	REQUIRE(pprof.status == 0);
	REQUIRE(pprof.err.empty()); // no "libprotobuf ERROR ... invalid UTF-8"

	// The monitor's log lines, and trace's timeline of a launched hostile program.
	std::string monitor_log = log_of_profiling("monitor", {"-i", "1", "-o", s.dir + "/m"}, "monitoring");
	require_terminal_safe(monitor_log);
	REQUIRE_THAT(monitor_log, Contains("(" + comm + ")"));
	Output trace = run({e2e::usdtprof(), "trace", "-o", s.dir + "/t.json", "--profile", s.dir + "/t.data", "--", bin});
	INFO(trace.err);
	REQUIRE(trace.status == 0);
	require_terminal_safe(trace.err);
	nlohmann::json timeline = require_clean_json(read_all(s.dir + "/t.json"));
	// The names are kept, in JSON's own escaping: those the process and its
	// worker thread set after the launch (kept at their exit).
	std::set<std::string> named;
	for (const auto &e : timeline.at("traceEvents"))
		if (e.value("ph", "") == "M")
			named.insert(e.at("name").get<std::string>() + " " + e.at("args").at("name").get<std::string>());
	INFO(nlohmann::json(named).dump());
	REQUIRE(named.count("process_name p\x1b[31m\r\nfake\xef\xbf\xbd\xef\xbf\xbd") == 1);
	REQUIRE(named.count("thread_name p\x1b[31m\r\nfake\xef\xbf\xbd\xef\xbf\xbd") == 1);
	REQUIRE(named.count("thread_name w\x1b[2J\r\nfake\xef\xbf\xbd") == 1);

	// An error line naming a hostile path.
	std::string no_such = s.dir + "/no\x1b]0;t\x07such\r\nfake";
	Output missing = run({e2e::usdtprof(), "report", no_such});
	REQUIRE(missing.status == 1);
	require_terminal_safe(missing.err);
	REQUIRE_THAT(missing.err, Contains("no\\x1b]0;t\\x07such\\x0d\\x0afake"));
}

TEST_CASE("cli: --version, did you mean, usage names usdtprof, monitor takes no command, pid lists", "[cli]")
{
	Output v = run({e2e::usdtprof(), "--version"});
	REQUIRE(v.status == 0);
	REQUIRE_THAT(v.out, StartsWith("usdtprof "));
	REQUIRE(lines(v.out) == 2);
	REQUIRE_THAT(v.out, Contains("\nprofile format: writes version 2, reads versions 1 and 2\n"));
	Output typo = run({e2e::usdtprof(), "reprot", "x"});
	REQUIRE(typo.status == 2);
	REQUIRE(typo.out.empty());
	REQUIRE(typo.err == "usdtprof: unknown command 'reprot'; did you mean 'report'? (see usdtprof --help)\n");
	Output far = run({e2e::usdtprof(), "frobnicate"});
	REQUIRE(far.status == 2);
	REQUIRE(far.err == "usdtprof: unknown command 'frobnicate' (see usdtprof --help)\n");
	Output option = run({e2e::usdtprof(), "report", "--sotr", "self", "x"});
	REQUIRE(option.status == 2);
	REQUIRE(option.err ==
		"usdtprof: unknown option '--sotr'; did you mean '--sort'? (see usdtprof report --help)\n");
	// A rejected value keeps its own message; the command's "--" is no typo of "-h".
	Output value = run({e2e::usdtprof(), "record", "-d", "-1", "-o", "/nonexistent/x", "--", "true"});
	REQUIRE(value.status == 2);
	REQUIRE(value.err == "usdtprof: --duration: expected a positive number, got -1 (see usdtprof record --help)\n");
	// An empty pid list is that, not a pid taken from the next argument.
	Output no_pid = run({e2e::usdtprof(), "record", "-p", ",", "-d", "1"});
	REQUIRE(no_pid.status == 2);
	REQUIRE(no_pid.err == "usdtprof: --pid: expected a process id (a positive number), got '' in ',' (see usdtprof "
			      "record --help)\n");
	Output bad_pid = run({e2e::usdtprof(), "monitor", "-p", "1,2x"});
	REQUIRE(bad_pid.status == 2);
	REQUIRE(bad_pid.err == "usdtprof: --pid: expected a process id (a positive number), got '2x' in '1,2x' (see "
			       "usdtprof monitor --help)\n");
	Output range = run({e2e::usdtprof(), "record", "--max-paths", "0", "--", "true"});
	REQUIRE(range.status == 2);
	REQUIRE_THAT(range.err, StartsWith("usdtprof: --max-paths: "));
	Output help = run({e2e::usdtprof(), "monitor", "--help"});
	REQUIRE(help.status == 0);
	REQUIRE_THAT(help.out, Contains("Usage: usdtprof monitor [OPTIONS]\n"));
	REQUIRE(help.out.find("command") == std::string::npos);
	REQUIRE_THAT(run({e2e::usdtprof(), "record", "--help"}).out,
		     Contains("Usage: usdtprof record [OPTIONS] [command...]"));
	Output monitor_cmd = run({e2e::usdtprof(), "monitor", "-p", "1", "--", "true"});
	REQUIRE(monitor_cmd.status == 2);
	REQUIRE(lines(monitor_cmd.err) == 1);
	REQUIRE_THAT(monitor_cmd.err, StartsWith("usdtprof: "));
}
