// Issue 10's attacks on the files of targets, re-enacted by an unprivileged
// user (nobody) against a root usdtprof: each must fail.
//
// The attacker's process runs in a user and mount namespace of its own where
// its directory is a tmpfs holding its library: /proc/PID/maps names a path
// that, on the host, is whatever the attacker puts there (a symlink to a
// root library or a secret, a FIFO). Whatever opens that path instead of the
// mapped file, or attaches without the process's pid, is caught here.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "profile_calls.h"
#include "profile/profile.h"

using namespace e2e;

namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

std::vector<std::string> as_nobody(std::vector<std::string> argv)
{
	std::vector<std::string> out = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
	out.insert(out.end(), argv.begin(), argv.end());
	return out;
}

// A scratch directory of its own (root's, 0755; not under /tmp, which other
// runs clean up), with a directory the attacker owns.
std::string scratch_dir()
{
	char tmpl[] = "/var/tmp/usdtprof-sec-files-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != nullptr);
	return tmpl;
}

struct Scratch {
	std::string dir = scratch_dir();
	std::string evil = dir + "/evil";

	Scratch()
	{
		REQUIRE(chmod(dir.c_str(), 0755) == 0);
		REQUIRE(mkdir(evil.c_str(), 0755) == 0);
		REQUIRE(chown(evil.c_str(), kNobody, kNobody) == 0);
	}
	~Scratch() { fs::remove_all(dir); }
	// A root-owned copy of a built target.
	std::string copy(const std::string &name, const std::string &to) const
	{
		std::string path = dir + "/" + to;
		fs::create_directories(fs::path(path).parent_path());
		fs::copy_file(target(name), path, fs::copy_options::overwrite_existing);
		return path;
	}
	// The attacker puts something at evil/NAME on the host: argv's last
	// argument is that path.
	std::string plant(std::vector<std::string> argv, const std::string &name) const
	{
		std::string path = evil + "/" + name;
		argv.push_back(path);
		Output o = run(as_nobody(argv));
		INFO(o.err);
		REQUIRE(o.status == 0);
		return path;
	}
};

// The attacker's process: program (a sec_host) on a copy of libsec_probe.so
// at evil/lib.so in its own namespace, a tmpfs there; extra arguments follow.
std::vector<std::string> attacker(const Scratch &s, const std::string &program, const std::string &extra = "")
{
	return as_nobody({"unshare", "-Urm", "sh", "-c",
			  "mount -t tmpfs none \"$1\" && cp \"$2\" \"$1/lib.so\" && exec \"$3\" \"$1/lib.so\" $4", "sh",
			  s.evil, target("libsec_probe.so"), program, extra});
}

// Every "semaphores N" line a sec_host printed says 0.
void require_semaphores_stayed_down(const std::string &out)
{
	INFO(out);
	REQUIRE(out.find("semaphores 0") != std::string::npos);
	size_t raised = 0;
	for (size_t at = out.find("semaphores "); at != std::string::npos; at = out.find("semaphores ", at + 1))
		raised += out.compare(at, 12, "semaphores 0") != 0;
	REQUIRE(raised == 0);
}

// All calls of a profile: with --binary, native names are captured by the
// kernel, which cannot read a name whose page the target never touched.
uint64_t all_calls(const usdtprof::Profile &p)
{
	uint64_t calls = 0;
	for (const usdtprof::PathNode &n : p.nodes)
		calls += n.calls;
	return calls;
}

std::string read_all(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

TEST_CASE("security: --binary attaches a library a target maps to that file, for that process only",
	  "[security][monitor]")
{
	Scratch s;
	std::string victim_lib = s.copy("libsec_probe.so", "root/libvictim.so");
	std::string victim_host = s.copy("sec_host", "root/victim_host");
	std::string app = s.copy("sec_host", "app"); // the binary root monitors
	// A root daemon mapping a root library; its semaphores must stay 0.
	Background victim({victim_host, victim_lib});
	victim.wait_for_line("ready");
	// On the host, the path the attacker's maps show is a symlink to it.
	s.plant({"ln", "-s", victim_lib}, "lib.so");
	Background evil(attacker(s, app));
	evil.wait_for_line("ready");

	// record --binary: attached once.
	std::string data = s.dir + "/record.data";
	Output rec = run({e2e::usdtprof(), "record", "--binary", app, "-d", "1", "-o", data});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile);
	REQUIRE(all_calls(*profile) > 0); // the attacker's own library, in its own process

	// monitor --binary: attached again at every sampling window.
	std::string out = s.dir + "/intervals";
	Background mon({e2e::usdtprof(), "monitor", "--binary", app, "-i", "0.3", "--budget", "0.02", "-o", out});
	mon.wait_for_line("monitoring", true);
	// Windows close and attach again: wait for intervals sampled in windows,
	// the attacker's calls counted in some after the first window closed.
	bool sampled = false;
	uint64_t later_calls = 0;
	for (int i = 0; i < 300 && !(sampled && later_calls); i++) {
		usleep(100000);
		std::vector<std::string> files;
		for (const auto &e : fs::directory_iterator(out))
			if (e.path().extension() == ".data")
				files.push_back(e.path());
		std::sort(files.begin(), files.end());
		later_calls = 0;
		sampled = false;
		for (const std::string &f : files) {
			auto p = usdtprof::load_profile(f);
			if (!p)
				continue; // being renamed into place
			if (sampled)
				later_calls += all_calls(*p);
			sampled = sampled || p->sampled_fraction < 1;
		}
	}
	REQUIRE(sampled);
	REQUIRE(later_calls > 0);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	REQUIRE(kill(victim.pid(), SIGKILL) == 0);
	victim.wait();
	require_semaphores_stayed_down(victim.all_stdout());
	evil.wait_for_line("semaphores 2"); // its own were raised
}

TEST_CASE("security: a native name is read from the mapped file, never from what its path names", "[security]")
{
	Scratch s;
	// A secret only root can read, at every offset the name could be at.
	std::string secret = s.dir + "/secret";
	{
		std::ofstream f(secret);
		for (int i = 0; i < 8192; i++)
			f << "TOPSECRET";
	}
	REQUIRE(chmod(secret.c_str(), 0600) == 0);
	s.plant({"ln", "-s", secret}, "lib.so");
	Background evil(attacker(s, target("sec_host")));
	evil.wait_for_line("ready");
	std::string data = s.dir + "/names.data";
	Background rec({e2e::usdtprof(), "record", "-p", std::to_string(evil.pid()), "-o", data});
	rec.wait_for_line("recording", true);
	evil.wait_for_line("semaphores 2");
	// Gone: its memory cannot be read; the name comes from the file it mapped.
	REQUIRE(kill(evil.pid(), SIGKILL) == 0);
	REQUIRE(rec.wait() == 0);
	evil.wait();
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile);
	CHECK(calls_of(*profile, "sec_probe_call") > 0);
	REQUIRE(read_all(data).find("TOPSECRET") == std::string::npos);
	Output report = run({e2e::usdtprof(), "report", data});
	REQUIRE(report.status == 0);
	REQUIRE(report.out.find("sec_probe_call") != std::string::npos);
	REQUIRE(report.out.find("TOPSECRET") == std::string::npos);
}

// Peak resident memory of a running process, in KiB (VmHWM).
long peak_rss_kib(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/status");
	for (std::string line; std::getline(in, line);)
		if (line.rfind("VmHWM:", 0) == 0)
			return std::stol(line.substr(6));
	return -1;
}

TEST_CASE("security: a library of 200000 probe notes gets a bounded number of sites and bounded memory",
	  "[security]")
{
	Scratch s;
	// The attacker writes the library and loads it in a process of its own.
	std::string lib = s.plant({"cp", target("libmany_notes.so")}, "many.so");
	Background evil(as_nobody({target("sec_host"), lib}));
	evil.wait_for_line("ready");
	Background rec({e2e::usdtprof(), "record", "-p", std::to_string(evil.pid()), "-o", s.dir + "/many.data"});
	std::string line = rec.wait_for_line("probe sites attached", true, 120);
	long peak_kib = peak_rss_kib(rec.pid()); // reading and attaching are done
	REQUIRE(kill(rec.pid(), SIGINT) == 0);
	REQUIRE(rec.wait() == 0);
	std::string err = line + rec.rest_of_stderr();
	INFO(err);
	REQUIRE_THAT(err, Catch::Matchers::Contains(lib + ": more than 65536 probe sites"));
	size_t at = line.find(": ", line.find("recording"));
	REQUIRE(at != std::string::npos);
	REQUIRE(std::stoul(line.substr(at + 2)) <= 65536); // not 200,000
	// 1M notes took 644 MB before the caps; 65,536 sites take ~95 MB here.
	REQUIRE(peak_kib > 0);
	REQUIRE(peak_kib < 256 * 1024);
	// The target runs on, unharmed.
	size_t from = evil.stdout_size();
	evil.wait_for_line_from(from, "semaphores");
	REQUIRE(kill(evil.pid(), 0) == 0);
}

TEST_CASE("security: a FIFO at a mapped path hangs neither list -p nor record -p", "[security][list]")
{
	Scratch s;
	s.plant({"mkfifo"}, "lib.so");
	Background evil(attacker(s, target("sec_host")));
	evil.wait_for_line("ready");
	std::string pid = std::to_string(evil.pid());
	// A blocking open of the FIFO would wait for a writer forever.
	Output list = run({"timeout", "-s", "KILL", "60", e2e::usdtprof(), "list", "-p", pid});
	INFO(list.err);
	REQUIRE(list.status == 0);
	REQUIRE(list.out.find(s.evil + "/lib.so") != std::string::npos);
	REQUIRE(list.out.find("usdtprof:enter") != std::string::npos);
	std::string data = s.dir + "/fifo.data";
	Output rec = run({"timeout", "-s", "KILL", "60", e2e::usdtprof(), "record", "-p", pid, "-d", "0.5", "-o", data});
	INFO(rec.err);
	REQUIRE(rec.status == 0);
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile);
	REQUIRE(calls_of(*profile, "sec_probe_call") > 0);
}

TEST_CASE("security: list -p skips an executable mapping that is not ELF, with a note, and lists the rest",
	  "[security][list]")
{
	Scratch s;
	std::string text = s.dir + "/not-elf.txt";
	{
		std::ofstream f(text);
		f << "this is not an ELF file\n";
	}
	std::string lib = s.copy("libsec_probe.so", "lib/libsec.so");
	Background t({target("sec_host"), lib, text});
	t.wait_for_line("ready");
	Output list = run({e2e::usdtprof(), "list", "-p", std::to_string(t.pid())});
	INFO(list.err);
	REQUIRE(list.status == 0);
	REQUIRE(list.err == "usdtprof: pid " + std::to_string(t.pid()) + ": " + text + ": not an ELF file: skipped\n");
	REQUIRE(list.out.find(lib) != std::string::npos);
	REQUIRE(list.out.find("usdtprof:enter") != std::string::npos);
}

TEST_CASE("security: with --binary one process cannot fill the path table and crowd out the others",
	  "[security][limits]")
{
	Scratch s;
	std::string app = s.copy("fair_paths", "fair_paths");
	Background hog(as_nobody({app, "--wait", "40"}));   // 1641 paths
	Background small({app, "--wait", "3"});              // 13 paths
	hog.wait_for_line("ready");
	small.wait_for_line("ready");
	std::string data = s.dir + "/fair.data";
	constexpr int kMaxPaths = 300;
	Background rec({e2e::usdtprof(), "record", "--binary", app, "--max-paths", std::to_string(kMaxPaths), "-o", data});
	rec.wait_for_line("recording", true);
	// The hog first: its paths fill whatever it may before the other makes any.
	REQUIRE(kill(hog.pid(), SIGUSR1) == 0);
	hog.wait_for_line("made");
	REQUIRE(kill(small.pid(), SIGUSR1) == 0);
	small.wait_for_line("made");
	REQUIRE(kill(rec.pid(), SIGINT) == 0);
	REQUIRE(rec.wait() == 0);
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile);
	std::map<int, uint64_t> paths, calls;
	for (const usdtprof::PathNode &n : profile->nodes) {
		// The hog's calls beyond its share go to [other] frames (in a table of
		// their own, at most one per path), not to paths of their own.
		if (profile->functions[n.function] != "[other]")
			paths[n.pid]++;
		calls[n.pid] += n.calls;
	}
	INFO(rec.rest_of_stderr());
	// Two processes: each may hold a third of the table.
	REQUIRE(paths[hog.pid()] > 0);
	REQUIRE(paths[hog.pid()] <= kMaxPaths / 3);
	REQUIRE(profile->anomalies.at("agg_full") > 0);
	// Its calls are all counted nonetheless, and no time is lost.
	REQUIRE(calls[hog.pid()] == 1641);
	REQUIRE(profile->anomalies.at("dropped_ns") == 0);
	REQUIRE(paths[small.pid()] == 13);
	REQUIRE(calls[small.pid()] == 13);
}
