// Issue 10's attacks on a root `usdtprof monitor`'s /metrics server, pusher,
// retention and caps, each re-enacted by an unprivileged user (setpriv, uid
// 65534) with tests/targets/http_attack.c, and shown to fail: the monitor's
// memory stays bounded (its own VmHWM), scrapes go on, it keeps profiling.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <thread>

#include "harness.h"
#include "intervals.h"
#include "serve/http.h"
#include "profile/profile.h"

using namespace e2e;

namespace {

namespace fs = std::filesystem;

// Fresh directories of this file's own (others' clean-ups of /tmp/usdtprof-e2e-*
// must not pull them away mid-test), removed when the tests exit.
struct ScratchDirs {
	std::vector<std::string> made;
	~ScratchDirs()
	{
		std::error_code ec;
		for (const std::string &d : made)
			fs::remove_all(d, ec);
	}
} scratch_dirs;

std::string scratch_dir()
{
	char tmpl[] = "/var/tmp/usdtprof-security-http-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != nullptr);
	scratch_dirs.made.push_back(tmpl);
	return tmpl;
}

std::vector<std::string> as_nobody(std::vector<std::string> argv)
{
	std::vector<std::string> out = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"};
	out.insert(out.end(), argv.begin(), argv.end());
	return out;
}

// A field of /proc/PID/status in kB (VmHWM: the peak resident set).
long status_kb(int pid, const std::string &field)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/status");
	for (std::string line; std::getline(in, line);)
		if (line.rfind(field + ":", 0) == 0)
			return std::stol(line.substr(field.size() + 1));
	FAIL("no " << field << " in /proc/" << pid << "/status");
	return 0;
}

// GET /metrics, waiting at most the server's own deadline (MetricsServerLimits: 5 s).
httplib::Result scrape(int port)
{
	httplib::Client http("127.0.0.1", port);
	http.set_connection_timeout(5, 0);
	http.set_read_timeout(5, 0);
	return http.Get("/metrics");
}

// A monitor of every process of `nested`, started as root, listening on a free port.
std::vector<std::string> monitor_args(const std::string &dir, std::vector<std::string> more = {})
{
	std::vector<std::string> argv = {e2e::usdtprof(), "monitor", "--binary", target("nested"), "-i", "0.3",
					 "--budget", "1", "-o", dir, "--listen", "127.0.0.1:0"};
	argv.insert(argv.end(), more.begin(), more.end());
	return argv;
}

// The port the monitor says it serves /metrics on (metrics_port), once it has started.
int serving_port(Background &mon)
{
	int port = metrics_port(mon);
	mon.wait_for_line("monitoring", true);
	return port;
}

// The monitor still profiles: a new process of the binary, run by the
// attacker, is counted (named while it runs: 100 outer calls, 1 s of spinning
// over several intervals), and the monitor stops cleanly. Returns its stderr.
std::string require_still_profiling(Background &mon, const std::string &dir)
{
	Background t(as_nobody({target("nested"), "--wait", "100"}));
	t.wait_for_line("ready");
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	REQUIRE(t.wait() == 7);
	std::this_thread::sleep_for(std::chrono::milliseconds(800)); // two intervals after
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	REQUIRE(err.find("cannot") == std::string::npos);
	REQUIRE(calls_of(interval_profiles(dir), "outer") >= 1);
	return err;
}

} // namespace

TEST_CASE("security: endless headers and an endless POST body to /metrics leave the monitor's memory bounded",
	  "[security-http]")
{
	std::string dir = scratch_dir() + "/out";
	Background mon(monitor_args(dir));
	int port = serving_port(mon);
	auto res = scrape(port);
	REQUIRE(res);
	REQUIRE(res->status == 200);
	long before = status_kb(mon.pid(), "VmHWM");
	// Before the fix: 3.9 GB in 15 s of headers, 7 GB of body.
	Output headers = run(as_nobody({target("http_attack"), "headers", std::to_string(port), "3"}));
	Output body = run(as_nobody({target("http_attack"), "post", std::to_string(port), "3"}));
	INFO("headers: " << headers.out << "body: " << body.out);
	REQUIRE(headers.out.rfind("sent ", 0) == 0);
	REQUIRE(body.out.rfind("sent ", 0) == 0);
	long after = status_kb(mon.pid(), "VmHWM");
	INFO("VmHWM " << before << " kB before, " << after << " kB after");
	REQUIRE(after - before < 32 * 1024);
	res = scrape(port);
	REQUIRE(res);
	REQUIRE(res->status == 200);
	require_still_profiling(mon, dir);
}

TEST_CASE("security: slow /metrics clients do not stall a scrape", "[security-http]")
{
	std::string dir = scratch_dir() + "/out";
	Background mon(monitor_args(dir));
	int port = serving_port(mon);
	// More trickling connections than the server's cap (64): before the fix
	// two of them held both worker threads and every scrape waited.
	Background slow(as_nobody({target("http_attack"), "slow", std::to_string(port), "200", "8"}));
	std::string ready = slow.wait_for_line("ready");
	INFO(ready);
	REQUIRE(std::stoi(ready.substr(6)) > 64);
	for (int i = 0; i < 3; i++) {
		auto t0 = std::chrono::steady_clock::now();
		auto res = scrape(port);
		INFO("scrape " << i << ": " << (res ? "answered" : httplib::to_string(res.error())) << " after "
			       << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		REQUIRE(res->body.find("usdtprof_intervals_total") != std::string::npos);
	}
	std::string err = require_still_profiling(mon, dir);
	REQUIRE_THAT(err, Catch::Matchers::Contains("connections cut since the last interval"));
}

TEST_CASE("security: idle /metrics connections past the descriptor limit: the monitor keeps attaching and scraping",
	  "[security-http]")
{
	std::string dir = scratch_dir() + "/out";
	// 256 descriptors: before the fix the idle connections took them all and
	// the monitor exited, "cannot attach".
	std::vector<std::string> argv = {"prlimit", "--nofile=256:256"};
	for (const std::string &a : monitor_args(dir))
		argv.push_back(a);
	Background mon(argv);
	int port = serving_port(mon);
	Background idle(as_nobody({target("http_attack"), "idle", std::to_string(port), "1000", "8"}));
	std::string ready = idle.wait_for_line("ready");
	INFO(ready);
	REQUIRE(std::stoi(ready.substr(6)) > 256);
	auto res = scrape(port);
	REQUIRE(res);
	REQUIRE(res->status == 200);
	require_still_profiling(mon, dir);
}

TEST_CASE("security: a push endpoint answering an endless chunked body leaves the monitor's memory bounded",
	  "[security-http]")
{
	std::string push_port = std::to_string(free_port());
	Background endpoint(as_nobody({target("http_attack"), "endpoint", push_port, "20"}));
	endpoint.wait_for_line("listening");
	std::string dir = scratch_dir() + "/out";
	Background mon(monitor_args(dir, {"--push", "http://127.0.0.1:" + push_port}));
	serving_port(mon);
	endpoint.wait_for_line("request 1");
	long before = status_kb(mon.pid(), "VmHWM");
	// Each push reads 1 KiB of the body and hangs up; the next interval's
	// push is the next request. Before the fix: 4 GB in 12 s.
	for (const char *line : {"closed after", "request 2", "closed after", "request 3", "closed after"})
		endpoint.wait_for_line(line);
	long after = status_kb(mon.pid(), "VmHWM");
	INFO("VmHWM " << before << " kB before, " << after << " kB after");
	REQUIRE(after - before < 32 * 1024);
	require_still_profiling(mon, dir);
}

TEST_CASE("security: files planted in the output directory do not steer retention", "[security-http]")
{
	// A directory anyone may write, without the sticky bit.
	std::string parent = scratch_dir(), dir = parent + "/shared";
	fs::create_directories(dir);
	REQUIRE(chmod(parent.c_str(), 0755) == 0);
	REQUIRE(chmod(dir.c_str(), 0777) == 0);
	// Stamped in the future, they would sort after every real interval;
	// stamped in the past, before: neither is counted nor removed.
	std::string plant = "for d in 01 02 03 04 05 06 07 08 09 10; do echo x > \"$0/usdtprof-20990101T0000${d}000Z.data\"; "
			    "done; echo x > \"$0/usdtprof-20000101T000000000Z.data\"";
	REQUIRE(run(as_nobody({"sh", "-c", plant, dir})).status == 0);
	Background mon({e2e::usdtprof(), "monitor", "--binary", target("nested"), "-i", "0.2", "--budget", "1", "--keep",
			"3", "-o", dir});
	mon.wait_for_line("monitoring", true);
	REQUIRE(run(as_nobody({target("nested"), "3"})).status == 7);
	std::this_thread::sleep_for(std::chrono::milliseconds(1500)); // intervals well past --keep
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	size_t real = 0, planted = 0;
	for (const auto &e : fs::directory_iterator(dir)) {
		struct stat st;
		REQUIRE(lstat(e.path().c_str(), &st) == 0);
		if (e.path().extension() == ".data")
			(st.st_uid == 0 ? real : planted)++;
	}
	REQUIRE(planted == 11);
	// Before the fix the ten future ones made retention remove every real interval.
	REQUIRE(real == 3);
}

TEST_CASE("security: a target's flood of names and paths is capped per interval, with a log line",
	  "[security-http]")
{
	std::string dir = scratch_dir() + "/out";
	Background mon({e2e::usdtprof(), "monitor", "--binary", target("many_paths"), "-i", "0.3", "--budget", "1",
			"--max-interval-bytes", "4000", "-o", dir});
	mon.wait_for_line("monitoring", true);
	// 8 + 64 + 512 paths below main: far more than 4000 bytes.
	Output o = run(as_nobody({target("many_paths")}));
	REQUIRE(o.status == 0);
	std::string cut = mon.wait_for_line("over --max-interval-bytes 4000", true, 10);
	REQUIRE_THAT(cut, Catch::Matchers::Contains("heaviest of"));
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	bool any = false;
	for (const auto &e : fs::directory_iterator(dir))
		if (e.path().extension() == ".data") {
			INFO(e.path());
			REQUIRE(fs::file_size(e.path()) <= 4000);
			any = true;
		}
	REQUIRE(any);
	// What is kept is whole paths: every node's parent is kept before it.
	size_t nodes = 0;
	for (const usdtprof::Profile &p : interval_profiles(dir))
		for (size_t i = 0; i < p.nodes.size(); i++, nodes++)
			REQUIRE((p.nodes[i].parent == usdtprof::kNoParent || p.nodes[i].parent < i));
	REQUIRE(nodes > 0);
}
