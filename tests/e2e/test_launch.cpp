// Launched commands: the Ruby call hook's script, following a command through
// exec and into its children, stopping while the command runs on.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

using namespace e2e;
using Catch::Matchers::Contains;

namespace {

std::string read_text(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

// An executable script in dir.
std::string write_script(const std::string &dir, const std::string &name, const std::string &text)
{
	std::string path = dir + "/" + name;
	std::ofstream(path) << text;
	REQUIRE(chmod(path.c_str(), 0755) == 0);
	return path;
}

// argv run as the unprivileged user nobody.
std::vector<std::string> as_nobody(std::vector<std::string> argv)
{
	std::vector<std::string> full = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"};
	full.insert(full.end(), argv.begin(), argv.end());
	return full;
}

} // namespace

TEST_CASE("ruby hook: takes itself out of RUBYOPT, lives where no other user can plant one", "[launch][security]")
{
	std::string dir = temp_dir();
	REQUIRE(chmod(dir.c_str(), 0777) == 0);
	// The Ruby starts a child that reports the RUBYOPT it inherited.
	Output o = run({"env", "-u", "RUBYOPT", usdtprof(), "record", "--ruby-call-hook", "-o", dir + "/p.data", "--",
			"ruby", "--disable-gems", "-e", "def f; end; f; system('/bin/sh', '-c', 'echo \"child:[$RUBYOPT]\"')"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	REQUIRE(o.out == "child:[]\n");
	std::smatch m;
	REQUIRE(std::regex_search(o.err, m, std::regex("launching with RUBYOPT=(-r(\\S+))")));
	const std::string rubyopt = m[1], hook = m[2];
	REQUIRE(hook.starts_with("/run/usdtprof/"));

	// A descendant that kept RUBYOPT (one that is not Ruby) may start Ruby after
	// usdtprof has exited: another user cannot replace or plant the file it loads.
	std::string payload = "File.write('" + dir + "/pwned', 'attacker code ran')\n";
	std::ofstream(dir + "/evil.rb") << payload;
	Output replace = run(as_nobody({"sh", "-c", "cp " + dir + "/evil.rb " + hook}));
	REQUIRE(replace.status != 0);
	Output plant = run(as_nobody({"sh", "-c", "cp " + dir + "/evil.rb " + hook + ".new && mv " + hook + ".new " + hook}));
	REQUIRE(plant.status != 0);
	Output remove = run(as_nobody({"rm", "-f", hook}));
	REQUIRE(remove.status != 0);
	struct stat st;
	REQUIRE(stat("/run/usdtprof", &st) == 0);
	REQUIRE(st.st_uid == 0);
	REQUIRE((st.st_mode & 022) == 0);

	// The late Ruby loads the genuine hook (it is still there: no LoadError), as
	// root and as another user, and no attacker code runs.
	Output late = run({"env", "RUBYOPT=" + rubyopt, "ruby", "--disable-gems", "-e", "puts ENV.fetch('RUBYOPT', 'unset')"});
	INFO(late.err);
	REQUIRE(late.status == 0);
	REQUIRE(late.out == "unset\n");
	Output late_user = run(as_nobody({"env", "RUBYOPT=" + rubyopt, "ruby", "--disable-gems", "-e", "puts :ran"}));
	INFO(late_user.err);
	REQUIRE(late_user.status == 0);
	REQUIRE(!std::filesystem::exists(dir + "/pwned"));
	REQUIRE(read_text(hook).find("attacker") == std::string::npos);
}

namespace {

// `usdtprof record -o DIR/p.data [options] -- command`, with PATH limited to
// Debian's directories (pyenv's python3.11, first on some PATHs, has no probes).
struct Recorded {
	Output output;
	std::string data;
};

Recorded record_followed(const std::vector<std::string> &command, int expected_status,
			 const std::vector<std::string> &options = {})
{
	Recorded r;
	r.data = temp_dir() + "/p.data";
	std::vector<std::string> argv = {"env", "-u", "JDK_JAVA_OPTIONS", "-u", "RUBYOPT", "PATH=/usr/bin:/bin",
					 usdtprof(), "record", "-o", r.data};
	argv.insert(argv.end(), options.begin(), options.end());
	argv.push_back("--");
	argv.insert(argv.end(), command.begin(), command.end());
	r.output = run(argv);
	INFO(r.output.err);
	REQUIRE(r.output.status == expected_status);
	return r;
}

nlohmann::json per_process_json(const std::string &data)
{
	Output o = run({usdtprof(), "report", "--format", "json", "--per-process", data});
	INFO(o.err);
	REQUIRE(o.status == 0);
	return nlohmann::json::parse(o.out);
}

// Calls per path (stack joined with ';') whose first frame starts with root_prefix.
std::map<std::string, uint64_t> paths_under(const nlohmann::json &report, const std::string &root_prefix)
{
	std::map<std::string, uint64_t> out;
	for (const auto &p : report.at("paths")) {
		std::string joined;
		for (const auto &f : p.at("stack"))
			joined += (joined.empty() ? "" : ";") + f.get<std::string>();
		if (joined.starts_with(root_prefix))
			out[joined] = p.at("calls").get<uint64_t>();
	}
	return out;
}

std::string repo_file(const std::string &relative)
{
	return std::filesystem::absolute(std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() /
					 relative)
		.string();
}

} // namespace

TEST_CASE("follow: an #!/usr/bin/env python3.11 script is recorded through env's exec, exact calls", "[launch]")
{
	std::string dir = temp_dir();
	std::string script = write_script(dir, "e.py",
					  "#!/usr/bin/env python3.11\n"
					  "def leaf(i):\n    return i + 1\n"
					  "def work(n):\n    return sum(leaf(i) for i in range(n))\n"
					  "print(work(250), work(50))\n");
	auto r = record_followed({script}, 0);
	REQUIRE(r.output.out == "31375 1275\n");
	auto report = report_json(r.data);
	REQUIRE(function(report, "e.py:work")["calls"] == 2);
	REQUIRE(function(report, "e.py:leaf")["calls"] == 300);
	REQUIRE(path(report, "e.py:<module>;e.py:work;e.py:<genexpr>;e.py:leaf")["calls"] == 300);
	REQUIRE(report["processes"].size() == 1);
	REQUIRE(report["processes"][0]["comm"] == "python3.11");
	SECTION("--no-follow: env has no probes, refused before it runs")
	{
		auto refused = record_followed({script}, 1, {"--no-follow"});
		REQUIRE_THAT(refused.output.err, Contains("no probes of any preset"));
		REQUIRE(refused.output.out.empty());
	}
}

TEST_CASE("follow: a shell script that runs two probed programs, exact calls per process", "[launch]")
{
	std::string dir = temp_dir();
	std::string script = write_script(dir, "two.sh",
					  "#!/bin/sh\n" + target("nested") + " 2\n" + target("nested") + " 3\necho done\n");
	auto r = record_followed({script}, 0);
	REQUIRE_THAT(r.output.out, Contains("done\n"));
	auto report = per_process_json(r.data);
	REQUIRE(report["processes"].size() == 2);
	std::map<int, std::map<std::string, uint64_t>> by_repeat;
	for (const auto &p : report["processes"]) {
		std::string root = "nested (pid " + std::to_string(p["pid"].get<int>()) + ")";
		auto paths = paths_under(report, root);
		uint64_t outer = paths[root + ";main;outer"];
		REQUIRE(paths == std::map<std::string, uint64_t>{{root, 0}, {root + ";main", 1}, {root + ";main;outer", outer},
								 {root + ";main;outer;inner", 3 * outer}});
		by_repeat[int(outer)] = paths;
	}
	REQUIRE(by_repeat.size() == 2);
	REQUIRE(by_repeat.count(2));
	REQUIRE(by_repeat.count(3));
	for (const auto &[name, count] : report["anomalies"].items()) {
		INFO(name);
		REQUIRE(count == 0);
	}
}

TEST_CASE("follow: a shell wrapper that execs java, as mvn and gradlew do, exact calls", "[launch][runtimes]")
{
	std::string classes = temp_dir();
	Output javac = run({"javac", "-d", classes, repo_file("tests/runtimes/Calls.java")});
	INFO(javac.err);
	REQUIRE(javac.status == 0);
	std::string wrapper = write_script(temp_dir(), "jc.sh", "#!/bin/sh\nexec java -cp \"$1\" Calls\n");
	auto r = record_followed({wrapper, classes}, 0);
	REQUIRE(r.output.out == "fib=610 inc=100000 twice=42 hello=3 caught=2\n");
	REQUIRE_THAT(r.output.err, Contains("JDK_JAVA_OPTIONS=-XX:+DTraceMethodProbes"));
	auto report = report_json(r.data);
	const std::map<std::string, int> expected = {{"Calls.main", 1}, {"Calls.fib", 1973}, {"Calls$Counter.<init>", 1},
		{"Calls$Counter.inc", 100000}, {"Calls$Counter.get", 1}, {"Calls$Util.twice", 7},
		{"Calls$Child.<init>", 1}, {"Calls$Base.<init>", 1}, {"Calls$Base.hello", 3}, {"Calls.thrower", 2}};
	std::map<std::string, int> got;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		if (name.starts_with("Calls.") || name.starts_with("Calls$"))
			got[name] = f["calls"];
	}
	REQUIRE(got == expected);
}
