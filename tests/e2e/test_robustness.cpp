// Failure modes (docs/failure-modes.md): signals, SIGKILL, bad input, unwritable
// outputs, concurrent instances, targets exiting during attach. The target must
// never be harmed, and usdtprof must fail with one line or save a loadable profile.
// Times are checked against the targets' own clocks as measured (report --raw):
// the probes' cost included, as the kernel's bookkeeping recorded it.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <zlib.h>

#include "harness.h"
#include "target/proc_maps.h"
#include "profile/profile.h"
#include "target/usdt.h"

extern char **environ;

namespace {

constexpr int kProfileVersion = usdtprof::kProfileVersion;
constexpr int kProfileVersionJson = usdtprof::kProfileVersionJson;
constexpr int kProfileVersionBinary = usdtprof::kProfileVersionBinary;
using usdtprof::parse_profile;
using usdtprof::serialize_profile;

// The values of the USDT semaphores of binary in a live process, read through
// /proc/PID/mem at the address where the kernel's ref_ctr_offset lands.
std::vector<uint16_t> semaphores(int pid, const std::string &binary)
{
	auto sites = usdtprof::read_usdt_sites(binary);
	REQUIRE(sites);
	std::set<uint64_t> offsets;
	for (const auto &s : *sites)
		if (s.semaphore)
			offsets.insert(s.semaphore_offset);
	auto maps = usdtprof::read_proc_maps(pid);
	REQUIRE(maps);
	std::string path = std::filesystem::canonical(binary);
	int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	std::vector<uint16_t> values;
	for (uint64_t off : offsets)
		for (const auto &m : *maps)
			if (m.path == path && off >= m.offset && off - m.offset < m.end - m.start) {
				uint16_t v = 0;
				REQUIRE(pread(fd, &v, sizeof v, off64_t(m.start + off - m.offset)) == sizeof v);
				values.push_back(v);
			}
	close(fd);
	REQUIRE(values.size() == 2); // usdtprof:enter and usdtprof:exit
	return values;
}

} // namespace

// In e2e, whose usdtprof() (the binary) would be ambiguous with the library's namespace outside it.
namespace e2e {

using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kMs = 1e6;

double seconds_since(Clock::time_point t)
{
	return std::chrono::duration<double>(Clock::now() - t).count();
}

void sleep_s(double s)
{
	std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

bool eventually(const std::function<bool()> &cond, double timeout_s = 5)
{
	for (auto start = Clock::now(); seconds_since(start) < timeout_s; sleep_s(0.02))
		if (cond())
			return true;
	return cond();
}

// State letter of /proc/PID/stat (R, S, T, Z...), 0 if there is no such process.
char proc_state(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	size_t paren = stat.rfind(')');
	return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// Neither gone, nor a zombie, nor stopped (as a leftover ptrace or SIGSTOP would leave it).
bool running(int pid)
{
	char s = proc_state(pid);
	return s == 'R' || s == 'S';
}

bool all_semaphores(int pid, bool raised)
{
	for (uint16_t v : semaphores(pid, target("nested")))
		if ((v > 0) != raised)
			return false;
	return true;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string> &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

// `nested --wait N`: held until start(), then N outer calls of 10 ms, exit 7.
// launcher (e.g. taskset) runs it.
class HeldTarget {
public:
	explicit HeldTarget(int outer_calls, const std::vector<std::string> &launcher = {})
		: proc_(launcher + std::vector<std::string>{target("nested"), "--wait", std::to_string(outer_calls)})
	{
		proc_.wait_for_line("ready");
	}
	int pid() const { return proc_.pid(); }
	std::string pid_text() const { return std::to_string(pid()); }
	// Releases the target and returns once it says when its work started,
	// on its own clock: the test may be preempted around the signal, and the
	// target may wait for a CPU after it.
	void start()
	{
		REQUIRE(kill(pid(), SIGUSR1) == 0);
		std::string go = proc_.wait_for_line("go ");
		started_ = Clock::time_point(std::chrono::nanoseconds(std::stoll(go.substr(go.find("go ") + 3))));
	}
	Clock::time_point started() const { return started_; }
	int wait() { return proc_.wait(); }
	std::string all_stdout() const { return proc_.all_stdout(); }

private:
	Background proc_;
	Clock::time_point started_;
};

std::string read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Waits until usdtprof's launched command is held at its entry point, under
// ptrace with its libraries mapped, that is while usdtprof attaches. Returns its pid.
int held_at_entry(int usdtprof_pid)
{
	// The command is the child of the thread that launched it (a tracer thread when it is followed).
	std::string tasks = "/proc/" + std::to_string(usdtprof_pid) + "/task";
	for (auto start = Clock::now(); seconds_since(start) < 10; sleep_s(0.0001)) {
		std::error_code ec;
		for (const auto &task : std::filesystem::directory_iterator(tasks, ec)) {
			int child = 0;
			std::ifstream(task.path() / "children") >> child;
			if (child && proc_state(child) == 't' &&
			    read_file("/proc/" + std::to_string(child) + "/maps").find("libc.so") != std::string::npos)
				return child;
		}
	}
	FAIL("usdtprof never held its command");
	return 0;
}

std::vector<std::string> entries(const std::string &dir)
{
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	REQUIRE(d);
	while (dirent *e = readdir(d))
		if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
			out.push_back(e->d_name);
	closedir(d);
	return out;
}

std::string joined(const std::vector<std::string> &argv)
{
	std::string s;
	for (const auto &a : argv)
		s += (s.empty() ? "" : " ") + a;
	return s;
}

// A failure as documented: one short "usdtprof: ..." line on stderr naming
// what went wrong, nothing on stdout, the given status.
void require_one_line(const std::string &err, const std::string &what)
{
	INFO("stderr: " << err);
	REQUIRE(err.rfind("usdtprof: ", 0) == 0);
	REQUIRE(std::count(err.begin(), err.end(), '\n') == 1);
	REQUIRE(err.back() == '\n');
	REQUIRE(err.size() < 200);
	REQUIRE_THAT(err, Contains(what));
}

void require_failure(const std::vector<std::string> &argv, int status, const std::string &what)
{
	Output o = run(argv);
	INFO(joined(argv));
	require_one_line(o.err, what);
	REQUIRE(o.out.empty());
	REQUIRE(o.status == status);
}

// A file system for the test: root ignores permission bits, not these.
class Tmpfs {
public:
	Tmpfs(unsigned long flags, const std::string &options) : dir_(temp_dir())
	{
		REQUIRE(mount("tmpfs", dir_.c_str(), "tmpfs", flags, options.c_str()) == 0);
	}
	~Tmpfs()
	{
		umount2(dir_.c_str(), MNT_DETACH);
		rmdir(dir_.c_str());
	}
	Tmpfs(const Tmpfs &) = delete;
	Tmpfs &operator=(const Tmpfs &) = delete;
	const std::string &dir() const { return dir_; }

private:
	std::string dir_;
};

// Takes the one block of a 4k tmpfs: creating a file still works, writing to it fails.
void fill(const Tmpfs &fs)
{
	std::ofstream(fs.dir() + "/filler") << std::string(4096, 'x');
	REQUIRE(std::filesystem::file_size(fs.dir() + "/filler") == 4096);
}

// The bytes of a real profile of `nested 2`, recorded once per test run.
const std::string &valid_profile()
{
	static const std::string bytes = [] {
		std::string data = temp_dir() + "/valid.data";
		Output o = run({usdtprof(), "record", "-o", data, "--", target("nested"), "2"});
		REQUIRE(o.status == 7);
		return read_file(data);
	}();
	return bytes;
}

} // namespace

TEST_CASE("SIGINT and SIGTERM stop recording: exit 0, profile saved up to the signal, target keeps running",
	  "[robustness]")
{
	int sig = GENERATE(SIGINT, SIGTERM);
	INFO("signal " << strsignal(sig));
	std::string data = temp_dir() + "/sig.data";
	HeldTarget t(1000);
	Background rec({usdtprof(), "record", "-p", t.pid_text(), "-o", data});
	rec.wait_for_line("recording", true);
	REQUIRE(all_semaphores(t.pid(), true));
	t.start();
	sleep_s(0.3);
	// main ran from the target's start to usdtprof's stop, which comes after the kill.
	double recorded_min_s = seconds_since(t.started());
	REQUIRE(kill(rec.pid(), sig) == 0);
	double recorded_max_s = seconds_since(t.started());
	REQUIRE(rec.wait() == 0);
	REQUIRE_THAT(rec.rest_of_stderr(), Contains("stopped by signal"));

	auto report = report_json(data, true);
	REQUIRE(run({usdtprof(), "report", data}).status == 0);
	auto main_fn = function(report, "main");
	REQUIRE(main_fn["calls"] == 1);
	REQUIRE(main_fn["open"] == 1);
	// What the test measured, plus the latencies of the signals.
	REQUIRE(main_fn["total_ns"].get<double>() >= recorded_min_s * 1e9 - 20 * kMs);
	REQUIRE(main_fn["total_ns"].get<double>() <= recorded_max_s * 1e9 + 200 * kMs);
	// Every completed outer call took at least 10 ms; the open one is charged up to the stop.
	auto outer = function(report, "outer");
	REQUIRE(outer["open"] == 1);
	REQUIRE(outer["total_ns"].get<double>() >= (outer["calls"].get<double>() - 1) * 10 * kMs);
	auto root = path(report, "main"), child = path(report, "main;outer");
	REQUIRE(root["total_ns"].get<uint64_t>() == root["self_ns"].get<uint64_t>() + child["total_ns"].get<uint64_t>());

	// Probes gone, target still working.
	REQUIRE(eventually([&] { return all_semaphores(t.pid(), false); }));
	sleep_s(0.1);
	REQUIRE(running(t.pid()));
}

TEST_CASE("SIGKILL of usdtprof: semaphores return to 0, the target finishes at full speed", "[robustness]")
{
	std::string dir = temp_dir();
	HeldTarget t(100);
	Background rec({usdtprof(), "record", "-p", t.pid_text(), "-o", dir + "/killed.data"});
	rec.wait_for_line("recording", true);
	REQUIRE(all_semaphores(t.pid(), true));
	t.start();
	sleep_s(0.2);
	REQUIRE(kill(rec.pid(), SIGKILL) == 0);
	REQUIRE(rec.wait() == 128 + SIGKILL);
	// The kernel drops the links with usdtprof's file descriptors.
	REQUIRE(eventually([&] { return all_semaphores(t.pid(), false); }));
	REQUIRE(running(t.pid()));
	REQUIRE(t.wait() == 7);
	// 100 outer calls of 10 ms: never held up, never stopped. A loaded
	// machine delays the target's spins by its measured slack.
	INFO("target's slack " << slack_ns(t.all_stdout()) << " ns");
	double took = seconds_since(t.started());
	REQUIRE(took >= 1.0);
	REQUIRE(took < 1.5 + slack_ns(t.all_stdout()) / 1e9);
	REQUIRE(entries(dir).empty());
}

TEST_CASE("SIGTERM while attaching to a launched command: recording starts and stops at once, profile saved",
	  "[robustness]")
{
	std::string data = temp_dir() + "/term.data";
	Background rec({usdtprof(), "record", "-o", data, "--", target("nested"), "30"});
	held_at_entry(rec.pid());
	REQUIRE(kill(rec.pid(), SIGTERM) == 0);
	// usdtprof then waits for the command and passes its status on.
	REQUIRE(rec.wait() == 7);
	REQUIRE_THAT(rec.rest_of_stderr(), Contains("stopped by signal"));
	// Stopped well before the command's work was over, by the command's own
	// progress (not the test's clock, which load stretches): main not
	// returned (most often not yet entered: the profile is empty), fewer than
	// half of its 30 outer calls made.
	auto report = report_json(data, true);
	uint64_t outer_calls = 0, main_returned = 0;
	for (const auto &f : report["functions"]) {
		if (f["name"] == "outer")
			outer_calls = f["calls"].get<uint64_t>();
		if (f["name"] == "main")
			main_returned = f["calls"].get<uint64_t>() - f["open"].get<uint64_t>();
	}
	INFO(report.dump());
	REQUIRE(main_returned == 0);
	REQUIRE(outer_calls < 15);
}

TEST_CASE("SIGKILL while a launched command is held: the command dies too, it never runs unprofiled",
	  "[robustness]")
{
	std::string dir = temp_dir();
	Background rec({usdtprof(), "record", "-o", dir + "/killed.data", "--", target("nested"), "30"});
	int child = held_at_entry(rec.pid());
	REQUIRE(kill(rec.pid(), SIGKILL) == 0);
	REQUIRE(rec.wait() == 128 + SIGKILL);
	REQUIRE(eventually([&] {
		char s = proc_state(child);
		return s == 0 || s == 'Z';
	}));
	REQUIRE(entries(dir).empty());
}

TEST_CASE("a target switched out across the stop: its off-CPU time ends at the stop too, the profile loads",
	  "[robustness]")
{
	// A busy loop shares the target's CPU, so the target is often off-CPU when recording stops.
	// Its 10 ms calls share the CPU with the hog: enough of them to outlive
	// five recordings' starts on a loaded machine (1,000, ~20 s, ran out once
	// in a full suite beside other builds); killed at the end.
	Background hog({"taskset", "-c", "0", "sh", "-c", "while :; do :; done"});
	HeldTarget t(100000, {"taskset", "-c", "0"});
	t.start();
	uint64_t offcpu = 0;
	for (int i = 0; i < 5; i++) {
		std::string data = temp_dir() + "/preempted.data";
		Output o = run({usdtprof(), "record", "-p", t.pid_text(), "-d", "0.05", "-o", data});
		INFO(o.err);
		REQUIRE(o.status == 0);
		auto report = report_json(data, true);
		for (const auto &f : report["functions"]) {
			INFO(f.dump());
			REQUIRE(f["self_offcpu_ns"].get<uint64_t>() <= f["self_ns"].get<uint64_t>());
			offcpu += f["self_offcpu_ns"].get<uint64_t>();
		}
	}
	REQUIRE(offcpu > 0);
	REQUIRE(running(t.pid()));
}

TEST_CASE("two usdtprof instances on one target: both profiles exact and equal", "[robustness]")
{
	std::string dir = temp_dir();
	HeldTarget t(20);
	Background a({usdtprof(), "record", "-p", t.pid_text(), "-o", dir + "/a.data"});
	Background b({usdtprof(), "record", "-p", t.pid_text(), "-o", dir + "/b.data"});
	a.wait_for_line("recording", true);
	b.wait_for_line("recording", true);
	t.start();
	REQUIRE(t.wait() == 7);
	REQUIRE(a.wait() == 0);
	REQUIRE(b.wait() == 0);
	std::vector<nlohmann::json> reports;
	for (const char *name : {"a.data", "b.data"}) {
		INFO(name);
		auto report = report_json(dir + "/" + name, true);
		require_no_anomalies(report);
		REQUIRE(function(report, "main")["calls"] == 1);
		REQUIRE(function(report, "outer")["calls"] == 20);
		REQUIRE(function(report, "inner")["calls"] == 60);
		REQUIRE(function(report, "outer")["total_ns"].get<double>() >= 20 * 10 * kMs);
		reports.push_back(report);
	}
	// Both timed the same probe hits, back to back: their times agree to well under a millisecond.
	for (const char *name : {"main", "outer", "inner"})
		for (const char *field : {"self_ns", "total_ns"}) {
			INFO(name << " " << field);
			double a_ns = function(reports[0], name)[field].get<double>();
			double b_ns = function(reports[1], name)[field].get<double>();
			REQUIRE(std::abs(a_ns - b_ns) < 0.5 * kMs);
		}
}

TEST_CASE("one of two instances stopping early: the other's probes and semaphores stay, its profile exact",
	  "[robustness]")
{
	std::string dir = temp_dir();
	HeldTarget t(50);
	Background early({usdtprof(), "record", "-p", t.pid_text(), "-o", dir + "/early.data"});
	Background full({usdtprof(), "record", "-p", t.pid_text(), "-o", dir + "/full.data"});
	early.wait_for_line("recording", true);
	full.wait_for_line("recording", true);
	t.start();
	sleep_s(0.1);
	REQUIRE(kill(early.pid(), SIGINT) == 0);
	REQUIRE(early.wait() == 0);
	REQUIRE(all_semaphores(t.pid(), true));
	REQUIRE(t.wait() == 7);
	REQUIRE(full.wait() == 0);
	auto report = report_json(dir + "/full.data", true);
	REQUIRE(function(report, "outer")["calls"] == 50);
	REQUIRE(function(report, "inner")["calls"] == 150);
	REQUIRE(function(report, "outer")["open"] == 0);
	REQUIRE(function(report_json(dir + "/early.data", true), "outer")["open"] == 1);
}

TEST_CASE("bad record input: one line, documented status, nothing written, target untouched", "[robustness]")
{
	std::string dir = temp_dir(), out = dir + "/x.data";
	HeldTarget t(5);
	SECTION("nonexistent pid")
	{
		pid_t gone = fork();
		if (gone == 0)
			_exit(0);
		REQUIRE(waitpid(gone, nullptr, 0) == gone);
		std::string pid = std::to_string(gone);
		require_failure({usdtprof(), "record", "-p", pid, "-o", out}, 1, "no process with pid " + pid);
	}
	SECTION("a probed process that exited, not yet reaped")
	{
		Background zombie({target("nested"), "0"});
		REQUIRE(eventually([&] { return proc_state(zombie.pid()) == 'Z'; }));
		require_failure({usdtprof(), "record", "-p", std::to_string(zombie.pid()), "-o", out}, 1,
				"exited before its probes could be attached");
		REQUIRE(zombie.wait() == 7);
	}
	SECTION("a process without probes")
	{
		Background sleeper({"sleep", "30"});
		require_failure({usdtprof(), "record", "-p", std::to_string(sleeper.pid()), "-o", out}, 1,
				"no probes of any preset");
		REQUIRE(running(sleeper.pid()));
	}
	SECTION("not root: no libbpf noise, one line naming the cause")
	{
		REQUIRE(chmod(dir.c_str(), 0777) == 0);
		require_failure({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
				 usdtprof(), "record", "-p", t.pid_text(), "-o", out},
				1, "must run as root");
	}
	SECTION("no kernel BTF: hidden from usdtprof in a private mount namespace")
	{
		require_failure({"unshare", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /sys/kernel/btf && exec \"$0\" \"$@\"",
				 usdtprof(), "record", "-p", t.pid_text(), "-o", out},
				1, "cannot load BPF programs: the kernel has no BTF");
	}
	SECTION("invalid flags exit 2")
	{
		require_failure({usdtprof(), "record", "-p", "abc", "-o", out}, 2, "abc");
		require_failure({usdtprof(), "record", "-d", "-1", "-p", t.pid_text(), "-o", out}, 2, "-1");
		require_failure({usdtprof(), "report", "--format", "xml", out}, 2, "xml");
		require_failure({usdtprof(), "export", "--format", "nope", out}, 2, "nope");
		require_failure({usdtprof(), "record", "-p", t.pid_text(), "-o", out, "--", target("nested"), "1"}, 2,
				"exactly one of -p PID, --binary PATH or -- CMD");
	}
	SECTION("output in a missing directory")
	{
		require_failure({usdtprof(), "record", "-p", t.pid_text(), "-o", dir + "/missing/x.data"}, 1,
				"cannot write " + dir + "/missing/x.data: No such file or directory");
	}
	SECTION("output in a read-only directory")
	{
		Tmpfs ro(MS_RDONLY, "");
		require_failure({usdtprof(), "record", "-p", t.pid_text(), "-o", ro.dir() + "/x.data"}, 1,
				"Read-only file system");
		REQUIRE(entries(ro.dir()).empty());
	}
	REQUIRE(entries(dir).empty());
	REQUIRE(running(t.pid()));
	REQUIRE(all_semaphores(t.pid(), false));
	t.start();
	REQUIRE(t.wait() == 7);
}

TEST_CASE("an output that cannot be written at the end: exit 1, the error last, no partial file", "[robustness]")
{
	Tmpfs full(0, "size=4k");
	fill(full);
	SECTION("record")
	{
		HeldTarget t(3);
		Background rec({usdtprof(), "record", "-p", t.pid_text(), "-o", full.dir() + "/x.data"});
		rec.wait_for_line("recording", true);
		t.start();
		REQUIRE(t.wait() == 7);
		REQUIRE(rec.wait() == 1);
		std::string err = rec.rest_of_stderr();
		require_one_line(err.substr(err.find('\n') + 1), "No space left on device");
	}
	SECTION("export -o")
	{
		std::string data = temp_dir() + "/valid.data";
		std::ofstream(data) << valid_profile();
		require_failure({usdtprof(), "export", data, "--format", "folded", "-o", full.dir() + "/out.folded"},
				1, "No space left on device");
	}
	REQUIRE(entries(full.dir()) == std::vector<std::string>{"filler"});
}

TEST_CASE("export -o into a missing or read-only directory: exit 1, one line, no file", "[robustness]")
{
	std::string dir = temp_dir(), data = dir + "/valid.data";
	std::ofstream(data) << valid_profile();
	Tmpfs ro(MS_RDONLY, "");
	require_failure({usdtprof(), "export", data, "--format", "folded", "-o", ro.dir() + "/out.folded"}, 1,
			"Read-only file system");
	require_failure({usdtprof(), "export", data, "--format", "folded", "-o", dir + "/missing/out.folded"}, 1,
			"No such file or directory");
	REQUIRE(entries(ro.dir()).empty());
	REQUIRE(entries(dir) == std::vector<std::string>{"valid.data"});
}

TEST_CASE("unreadable profiles: report and export fail with one line, print and write nothing", "[robustness]")
{
	// What record writes (version 2), and the same profile in version 1.
	const int file_version = GENERATE(kProfileVersionBinary, kProfileVersionJson);
	INFO("version " << file_version);
	const std::string valid = file_version == kProfileVersion
		? valid_profile() : serialize_profile(*parse_profile(valid_profile()), file_version);
	REQUIRE(valid.rfind("usdtprof-profile " + std::to_string(file_version) + " ", 0) == 0);
	std::string header = valid.substr(0, valid.find('\n') + 1);
	// Header with a matching size and crc32 over a JSON body that is not a profile.
	const int version = kProfileVersionJson;
	std::string body = "{\"format\":\"usdtprof\",\"version\":" + std::to_string(version) + "}\n";
	char wrapped[64];
	snprintf(wrapped, sizeof wrapped, "usdtprof-profile %d %zu %08lx\n", version, body.size(),
		 crc32(0, reinterpret_cast<const Bytef *>(body.data()), uInt(body.size())));
	std::string flipped = valid;
	flipped[header.size() + (valid.size() - header.size()) / 2] ^= 0x20;
	std::string magic = "usdtprof-profile ", next = std::to_string(kProfileVersion + 1);
	std::string newer = magic + next + valid.substr(valid.find(' ', magic.size()));

	struct Case {
		const char *name;
		std::string bytes;
		std::string error;
	};
	auto c = GENERATE_COPY(values<Case>({
		{"valid (control)", valid, ""},
		{"empty", "", "empty file"},
		{"not a profile", "hello\n", "not a usdtprof profile"},
		{"truncated header", valid.substr(0, 10), "truncated: incomplete header line"},
		{"truncated body", valid.substr(0, valid.size() / 2), "truncated: header announces"},
		{"corrupt body", flipped, "corrupt: checksum mismatch"},
		{"newer version", newer, "unsupported profile version " + next},
		{"valid header, incomplete body", wrapped + body, "corrupt: units: missing"},
	}));
	INFO(c.name);
	std::string dir = temp_dir(), file = dir + "/p.data", folded = dir + "/out.folded";
	std::ofstream(file) << c.bytes;
	std::vector<std::vector<std::string>> commands = {
		{usdtprof(), "report", file},
		{usdtprof(), "report", "--tree", "--format", "json", file},
		{usdtprof(), "export", file, "--format", "folded"},
		{usdtprof(), "export", file, "--format", "folded", "-o", folded},
	};
	for (const auto &argv : commands) {
		if (c.error.empty()) {
			REQUIRE(run(argv).status == 0);
			continue;
		}
		require_failure(argv, 1, file + ": " + c.error);
	}
	if (!c.error.empty())
		REQUIRE(entries(dir) == std::vector<std::string>{"p.data"});
}

TEST_CASE("targets exiting while probes are attached: a profile or one line, never a crash or a temp file",
	  "[robustness]")
{
	// How long usdtprof takes from its start to attached, on this machine and build.
	double attach_s;
	{
		HeldTarget t(1);
		auto start = Clock::now();
		Background rec({usdtprof(), "record", "-p", t.pid_text(), "-o", temp_dir() + "/timing.data"});
		rec.wait_for_line("recording", true);
		attach_s = seconds_since(start);
		t.start();
		REQUIRE(t.wait() == 7);
		REQUIRE(rec.wait() == 0);
	}
	std::string dir = temp_dir(), path = target("nested");
	int saved = 0, refused = 0;
	for (int i = 0; i < 20; i++) {
		// Target lifetimes (outer calls of 10 ms) sweep 0 to 2.5 times the attach time.
		int outer_calls = int(i * 2.5 * attach_s / 20 / 0.01);
		std::string data = dir + "/" + std::to_string(i) + ".data", calls = std::to_string(outer_calls);
		std::vector<char *> argv = {path.data(), calls.data(), nullptr};
		pid_t pid;
		// Its "measured slack" line is not the test's output.
		posix_spawn_file_actions_t quiet;
		posix_spawn_file_actions_init(&quiet);
		posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
		REQUIRE(posix_spawn(&pid, path.c_str(), &quiet, nullptr, argv.data(), environ) == 0);
		posix_spawn_file_actions_destroy(&quiet);
		// Reaped at once, as a shell would, so the pid really disappears.
		int target_status = -1;
		std::thread reaper([&] { waitpid(pid, &target_status, 0); });
		Output o = run({usdtprof(), "record", "-p", std::to_string(pid), "-o", data});
		reaper.join();
		INFO("run " << i << ", " << outer_calls << " outer calls, status " << o.status << ", stderr: " << o.err);
		REQUIRE(WIFEXITED(target_status));
		REQUIRE(WEXITSTATUS(target_status) == 7);
		if (o.status == 0) {
			saved++;
			REQUIRE_THAT(o.err, Contains("target exited"));
			auto report = report_json(data, true);
			for (const auto &f : report["functions"])
				REQUIRE(f["calls"].get<int>() <= 3 * outer_calls + 1);
			REQUIRE(entries(dir) == std::vector<std::string>{std::to_string(i) + ".data"});
			REQUIRE(unlink(data.c_str()) == 0);
		} else {
			refused++;
			REQUIRE(o.status == 1);
			// Says that the target is gone, not that it had no probes.
			require_one_line(o.err, "");
			REQUIRE_THAT(o.err, Contains("no process with pid") || Contains("exited before its probes") ||
						    Contains("the process is gone"));
			REQUIRE(entries(dir).empty());
		}
	}
	// Both outcomes seen: the sweep did cover the attach window.
	INFO(saved << " saved, " << refused << " refused");
	CHECK(saved > 0);
	CHECK(refused > 0);
}

} // namespace e2e
