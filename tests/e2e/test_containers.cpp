// Issue 18, part 1: processes in containers. The tests make their own
// "container" as an unprivileged user (nobody) would: a user, mount and pid
// namespace (unshare), a tmpfs on a directory it owns holding the program at
// a path that exists only inside, and no container runtime.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "local_server.h"
#include "profile_calls.h"
#include "profile/profile.h"

using namespace e2e;

namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

// A root-owned scratch directory (0755, not under /tmp, which other runs
// clean up) with ctr/, nobody's: the container mounts its tmpfs there.
struct Scratch {
	std::string dir, ctr;

	Scratch()
	{
		char tmpl[] = "/var/tmp/usdtprof-ctr-XXXXXX";
		REQUIRE(mkdtemp(tmpl) != nullptr);
		dir = tmpl;
		ctr = dir + "/ctr";
		REQUIRE(chmod(dir.c_str(), 0755) == 0);
		REQUIRE(mkdir(ctr.c_str(), 0755) == 0);
		REQUIRE(chown(ctr.c_str(), kNobody, kNobody) == 0);
	}
	~Scratch() { fs::remove_all(dir); }
};

// The pid (in usdtprof's namespace) of the process named comm among the
// descendants of ancestor, 0 if none.
int descendant(int ancestor, const std::string &comm)
{
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/proc", ec)) {
		int pid = atoi(e.path().filename().c_str());
		if (pid <= 0)
			continue;
		std::ifstream c(e.path() / "comm");
		std::string name;
		std::getline(c, name);
		if (name != comm)
			continue;
		for (int p = pid; p > 1;) {
			std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
			std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
			size_t paren = all.rfind(')');
			if (paren == std::string::npos)
				break;
			p = atoi(all.c_str() + paren + 4); // ") S PPID"
			if (p == ancestor)
				return pid;
		}
	}
	return 0;
}

// nobody's container: script runs as its pid 1 (sh -c script sh ARGS...);
// it mounts a tmpfs on ctr, sets up what it likes there and starts srv (a
// copy of a test target, held by --wait) in the background, so that srv's
// pid inside is not 1. Its "ready N" line gives that pid.
struct Container {
	Background proc;
	int host_pid = 0, ns_pid = 0;

	Container(const std::string &script, const std::vector<std::string> &args)
		: proc(command(script, args))
	{
		std::string ready = proc.wait_for_line("ready ");
		ns_pid = atoi(ready.c_str() + ready.find("ready ") + 6);
		for (int i = 0; i < 500 && !host_pid; i++, usleep(10000))
			host_pid = descendant(proc.pid(), "srv");
		REQUIRE(host_pid > 0);
		REQUIRE(ns_pid > 1);
		REQUIRE(ns_pid != host_pid);
	}
	void go() { REQUIRE(kill(host_pid, SIGUSR1) == 0); }
	std::string pid() const { return std::to_string(host_pid); }

	static std::vector<std::string> command(const std::string &script, const std::vector<std::string> &args)
	{
		std::vector<std::string> argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
						 "unshare", "-Urm", "--pid", "--fork", "--kill-child", "--mount-proc",
						 "sh", "-c", script + " & wait", "sh"};
		argv.insert(argv.end(), args.begin(), args.end());
		return argv;
	}
};

usdtprof::Profile load(const std::string &path)
{
	auto p = usdtprof::load_profile(path);
	INFO(path);
	REQUIRE(p);
	return std::move(*p);
}

// The profile's process pid, which must be there.
usdtprof::ProfileProcess process_of(const usdtprof::Profile &p, int pid)
{
	for (const usdtprof::ProfileProcess &proc : p.processes)
		if (proc.pid == pid)
			return proc;
	FAIL("pid " << pid << " not among the profile's processes");
	return {};
}

// A hot loop (the native target `hot`) at CTR/bin/srv, inside only.
const char *kHotInside = "mount -t tmpfs none \"$1\" && mkdir \"$1/bin\" && cp \"$2\" \"$1/bin/srv\" && "
			 "\"$1/bin/srv\" --wait 600";

} // namespace

TEST_CASE("containers: record, trace, list and monitor -p, and --binary /proc/PID/root/..., profile a process "
	  "in its own mount and pid namespace, named by both its pids",
	  "[containers]")
{
	Scratch s;
	Container c(kHotInside, {s.ctr, target("hot")});
	REQUIRE(!fs::exists(s.ctr + "/bin/srv")); // on the host: not there
	c.go();

	Output list = run({e2e::usdtprof(), "list", "-p", c.pid()});
	INFO(list.err);
	REQUIRE(list.status == 0);
	REQUIRE(list.out.find(s.ctr + "/bin/srv") != std::string::npos);
	REQUIRE(list.out.find("usdtprof:enter") != std::string::npos);

	std::string data = s.dir + "/p.data";
	Output rec = run({e2e::usdtprof(), "record", "-p", c.pid(), "-d", "0.5", "-o", data});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	usdtprof::Profile profile = load(data);
	REQUIRE(calls_of(profile, "work") > 0);
	usdtprof::ProfileProcess proc = process_of(profile, c.host_pid);
	REQUIRE(proc.ns_pid == c.ns_pid);
	REQUIRE(proc.comm == "srv");
	Output report = run({e2e::usdtprof(), "report", data});
	REQUIRE(report.status == 0);
	REQUIRE(report.out.find("process srv (pid " + c.pid() + "): pid " + std::to_string(c.ns_pid) +
				" in its pid namespace") != std::string::npos);
	nlohmann::json json = report_json(data);
	REQUIRE(json["processes"][0]["pid"] == c.host_pid);
	REQUIRE(json["processes"][0]["ns_pid"] == c.ns_pid);

	std::string trace = s.dir + "/t.json", traced = s.dir + "/t.data";
	Output tr = run({e2e::usdtprof(), "trace", "-p", c.pid(), "-d", "0.3", "-o", trace, "--profile", traced});
	INFO(tr.err);
	REQUIRE(tr.status == 0);
	usdtprof::Profile trace_profile = load(traced);
	REQUIRE(calls_of(trace_profile, "work") > 0);
	REQUIRE(process_of(trace_profile, c.host_pid).ns_pid == c.ns_pid);
	std::ifstream t(trace);
	nlohmann::json events = nlohmann::json::parse(t);
	REQUIRE(events["traceEvents"].size() > 0);

	std::string dir = s.dir + "/monitor";
	Output mon = run({e2e::usdtprof(), "monitor", "-p", c.pid(), "-d", "1", "-i", "0.3", "-o", dir});
	INFO(mon.err);
	REQUIRE(mon.status == 0);
	uint64_t monitored = 0;
	for (const auto &e : fs::directory_iterator(dir))
		if (e.path().extension() == ".data") {
			usdtprof::Profile interval = load(e.path());
			monitored += calls_of(interval, "work");
			if (calls_of(interval, "work"))
				REQUIRE(process_of(interval, c.host_pid).ns_pid == c.ns_pid);
		}
	REQUIRE(monitored > 0);

	// The container's path, named through its process's root.
	std::string inside = "/proc/" + c.pid() + "/root" + s.ctr + "/bin/srv";
	std::string bin = s.dir + "/b.data";
	Output by_binary = run({e2e::usdtprof(), "record", "--binary", inside, "-d", "0.5", "-o", bin});
	INFO(by_binary.err);
	REQUIRE(by_binary.status == 0);
	usdtprof::Profile binary_profile = load(bin);
	REQUIRE(calls_of(binary_profile, "work") > 0);
	REQUIRE(process_of(binary_profile, c.host_pid).ns_pid == c.ns_pid);
}

// The attack: nobody's container plants absolute symlinks. Opened through
// /proc/PID/root/..., the kernel resolves them against the opener's root: a
// root usdtprof would read the host's file. Here the host has its own file
// (a marker: the myapp probes of custom_probes) at the paths the symlinks
// name; inside, one holds the container's program (usdtprof:enter), the
// other nothing at all.
TEST_CASE("security: a symlink planted in a container never leads usdtprof to a host file", "[security][containers]")
{
	Scratch s;
	std::string host_file = s.dir + "/shared/srv", host_only = s.dir + "/shared/hostonly";
	fs::create_directories(s.dir + "/shared");
	fs::copy_file(target("custom_probes"), host_file);
	fs::copy_file(target("custom_probes"), host_only);
	REQUIRE(run({e2e::usdtprof(), "list", host_file}).out.find("myapp:") != std::string::npos);
	// Inside: a tmpfs over shared/ holds the program and no hostonly; bin/srv
	// and bin/shadow are absolute symlinks to shared/srv and shared/hostonly.
	Container c("mount -t tmpfs none \"$1\" && mount -t tmpfs none \"$2\" && cp \"$3\" \"$2/srv\" && "
		    "mkdir \"$1/bin\" && ln -s \"$2/srv\" \"$1/bin/srv\" && ln -s \"$4\" \"$1/bin/shadow\" && "
		    "\"$1/bin/srv\" --wait 600",
		    {s.ctr, s.dir + "/shared", target("hot"), host_only});
	c.go();
	std::string root = "/proc/" + c.pid() + "/root";

	Output list = run({e2e::usdtprof(), "list", root + s.ctr + "/bin/srv"});
	INFO(list.out << list.err);
	REQUIRE(list.status == 0);
	REQUIRE(list.out.find("myapp:") == std::string::npos);
	REQUIRE(list.out.find("usdtprof:enter") != std::string::npos);

	Output shadow = run({e2e::usdtprof(), "list", root + s.ctr + "/bin/shadow"});
	INFO(shadow.out << shadow.err);
	REQUIRE(shadow.status != 0);
	REQUIRE(shadow.err.find("No such file or directory") != std::string::npos);
	REQUIRE(shadow.out.find("myapp:") == std::string::npos);

	Output listed = run({e2e::usdtprof(), "list", "-p", c.pid()});
	INFO(listed.out << listed.err);
	REQUIRE(listed.status == 0);
	REQUIRE(listed.out.find("myapp:") == std::string::npos);
	REQUIRE(listed.out.find("usdtprof:enter") != std::string::npos);

	std::string data = s.dir + "/b.data";
	Output rec = run({e2e::usdtprof(), "record", "--binary", root + s.ctr + "/bin/srv", "-d", "0.5", "-o", data});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	usdtprof::Profile profile = load(data);
	REQUIRE(calls_of(profile, "work") > 0);
	for (const usdtprof::ProfileProbe &p : profile.probes)
		REQUIRE(p.provider != "myapp");
	Output bad = run({e2e::usdtprof(), "record", "--binary", root + s.ctr + "/bin/shadow", "-d", "0.5", "-o", data});
	REQUIRE(bad.status != 0);
	REQUIRE(bad.err.find("No such file or directory") != std::string::npos);
}

namespace {

// A cgroup named as Docker names a container's (docker-ID.scope), holding a
// process of the host: what usdtprof reads of a container in production. On
// a host without a writable cgroup2 hierarchy the test cannot run.
struct DockerCgroup {
	std::string id, dir;

	DockerCgroup()
	{
		static const char *roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
		char hex[65];
		for (int i = 0; i < 64; i++)
			hex[i] = "0123456789abcdef"[(getpid() * 7919 + i * 104729 + time(nullptr)) % 16 ^ (i % 16)];
		hex[64] = 0;
		id = hex;
		for (const char *root : roots)
			if (fs::exists(std::string(root) + "/cgroup.procs") &&
			    mkdir((std::string(root) + "/docker-" + id + ".scope").c_str(), 0755) == 0) {
				dir = std::string(root) + "/docker-" + id + ".scope";
				break;
			}
		REQUIRE(!dir.empty());
	}
	void add(int pid)
	{
		std::ofstream procs(dir + "/cgroup.procs");
		procs << pid << "\n";
		procs.flush();
		REQUIRE(procs.good());
	}
	~DockerCgroup() { rmdir(dir.c_str()); } // empty once its process is gone
};

} // namespace

TEST_CASE("containers: a process in a container's cgroup carries its container id in interval profiles, /metrics "
	  "(promtool-clean) and pushed names; a process on the host none",
	  "[containers]")
{
	std::mutex mutex;
	std::vector<std::string> names; // the pushes' name parameters
	LocalServer receiver;
	receiver.server().Post(".*", [&](const httplib::Request &req, httplib::Response &res) {
		std::lock_guard<std::mutex> lock(mutex);
		names.push_back(req.get_param_value("name"));
		res.status = 200;
	});
	receiver.start();
	const int port = receiver.port();

	DockerCgroup cgroup;
	{
		Background boxed({target("nested"), "--wait", "600"});
		boxed.wait_for_line("ready");
		const int pid = boxed.pid();
		cgroup.add(pid);
		const std::string outdir = temp_dir();
		const int metrics_port = free_port();
		const std::string listen = "127.0.0.1:" + std::to_string(metrics_port);
		Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(pid), "-i", "0.3", "--budget", "1", "-o",
				outdir + "/iv", "--listen", listen, "--push", "http://127.0.0.1:" + std::to_string(port)});
		mon.wait_for_line("monitoring", true);
		REQUIRE(kill(pid, SIGUSR1) == 0);
		// Until an interval with the target's calls is written and pushed.
		std::string short_id = cgroup.id.substr(0, 12), metrics;
		httplib::Client http("127.0.0.1", metrics_port);
		for (int i = 0; i < 300; i++, usleep(50000)) {
			auto res = http.Get("/metrics");
			std::lock_guard<std::mutex> lock(mutex);
			if (res && res->body.find("function=\"outer\"") != std::string::npos && !names.empty()) {
				metrics = res->body;
				break;
			}
		}
		INFO(metrics);
		REQUIRE(metrics.find("usdtprof_function_calls_total{process=\"nested\",container_id=\"" + short_id +
				     "\",function=\"outer\"}") != std::string::npos);
		std::string file = outdir + "/metrics.txt";
		std::ofstream(file) << metrics;
		Output lint = run({"sh", "-c", "promtool check metrics < \"$0\"", file});
		INFO(lint.out << lint.err);
		REQUIRE(lint.status == 0);
		REQUIRE(lint.out.empty());
		{
			std::lock_guard<std::mutex> lock(mutex);
			for (const std::string &name : names) {
				INFO(name);
				REQUIRE(name.find(",pid=" + std::to_string(pid) + ",container_id=" + short_id + "}") !=
					std::string::npos);
			}
		}
		REQUIRE(kill(mon.pid(), SIGTERM) == 0);
		REQUIRE(mon.wait() == 0);
		bool seen = false;
		for (const auto &e : fs::directory_iterator(outdir + "/iv"))
			if (e.path().extension() == ".data" && calls_of(load(e.path()), "outer")) {
				// (an interval after the target's exit describes no process)
				usdtprof::ProfileProcess proc = process_of(load(e.path()), pid);
				REQUIRE(proc.container_runtime == "docker");
				REQUIRE(proc.container_id == cgroup.id);
				seen = true;
			}
		REQUIRE(seen);
		kill(pid, SIGKILL);
		boxed.wait();
	}

	// Its namesake on the host: no container_id label at all.
	Background host({target("nested"), "--wait", "600"});
	host.wait_for_line("ready");
	const int host_pid = host.pid();
	const std::string outdir = temp_dir();
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(host_pid), "-i", "0.3", "--budget", "1", "-o",
			outdir + "/iv"});
	mon.wait_for_line("monitoring", true);
	REQUIRE(kill(host_pid, SIGUSR1) == 0);
	REQUIRE(host.wait() == 7);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	bool seen = false;
	for (const auto &e : fs::directory_iterator(outdir + "/iv"))
		if (e.path().extension() == ".data" && calls_of(load(e.path()), "outer")) {
			REQUIRE(process_of(load(e.path()), host_pid).container_id.empty());
			seen = true;
		}
	REQUIRE(seen);
}
