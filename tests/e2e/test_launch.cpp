// Launched commands: the Ruby call hook's script, following a command through
// exec and into its children, stopping while the command runs on.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "java_calls.h"

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
	// The child keeps the repair script (harmless, wanted by the Rubies it may start), not the hook.
	REQUIRE(o.out == "child:[-r/run/usdtprof/ruby-repair.rb]\n");
	std::smatch m;
	REQUIRE(std::regex_search(o.err, m, std::regex("launching with RUBYOPT=(-r(\\S+) -r(\\S+))")));
	const std::string rubyopt = m[1], repair = m[2], hook = m[3];
	REQUIRE(repair == "/run/usdtprof/ruby-repair.rb");
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
	REQUIRE(run(as_nobody({"sh", "-c", "cp " + dir + "/evil.rb " + repair})).status != 0);
	REQUIRE(run(as_nobody({"rm", "-f", repair})).status != 0);
	struct stat st;
	REQUIRE(stat("/run/usdtprof", &st) == 0);
	REQUIRE(st.st_uid == 0);
	REQUIRE((st.st_mode & 022) == 0);

	// The late Ruby loads the genuine hook (it is still there: no LoadError), as
	// root and as another user, and no attacker code runs.
	Output late = run({"env", "RUBYOPT=" + rubyopt, "ruby", "--disable-gems", "-e", "puts ENV.fetch('RUBYOPT', 'unset')"});
	INFO(late.err);
	REQUIRE(late.status == 0);
	REQUIRE(late.out == "-r" + repair + "\n");
	Output late_user = run(as_nobody({"env", "RUBYOPT=" + rubyopt, "ruby", "--disable-gems", "-e", "puts :ran"}));
	INFO(late_user.err);
	REQUIRE(late_user.status == 0);
	REQUIRE(!std::filesystem::exists(dir + "/pwned"));
	REQUIRE(read_text(hook).find("attacker") == std::string::npos);
	REQUIRE(read_text(repair).find("attacker") == std::string::npos);
}

namespace {

// `usdtprof record -o DIR/profile.data [options] -- command`, with PATH limited to
// Debian's directories (pyenv's python3.11, first on some PATHs, has no probes).
Recorded record_followed(const std::vector<std::string> &command, int expected_status,
			 const std::vector<std::string> &options = {})
{
	return record_profile(command, {.env = {"env", "-u", "JDK_JAVA_OPTIONS", "-u", "JAVA_TOOL_OPTIONS", "-u",
						"RUBYOPT", "PATH=/usr/bin:/bin"},
					.options = options,
					.status = expected_status});
}

nlohmann::json per_process_json(const std::string &data)
{
	Output o = run({usdtprof(), "report", "--format", "json", "--per-process", data});
	INFO(o.err);
	REQUIRE(o.status == 0);
	return e2e::parse_report(o.out);
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
	REQUIRE(path(report, "e.py:<module>;e.py:work;e.py:work.<locals>.<genexpr>:5;e.py:leaf")["calls"] == 300);
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
	// The flat report keeps them apart too: one table per process.
	Output flat = run({usdtprof(), "report", "--per-process", "--sort", "name", r.data});
	REQUIRE(flat.status == 0);
	INFO(flat.out);
	std::regex table("process nested \\(pid [0-9]+\\)\n[^\n]*\n\n +calls[^\n]*\n +([0-9]+) [^\n]* inner\n +1 "
			 "[^\n]* main\n +([0-9]+) [^\n]* outer\n");
	std::set<std::pair<int, int>> tables;
	for (auto it = std::sregex_iterator(flat.out.begin(), flat.out.end(), table); it != std::sregex_iterator(); ++it)
		tables.insert({std::stoi((*it)[1]), std::stoi((*it)[2])});
	REQUIRE(tables == std::set<std::pair<int, int>>{{6, 2}, {9, 3}});
	require_no_anomalies(report);
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
	REQUIRE_THAT(r.output.err, Contains("JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"));
	auto report = report_json(r.data);
	REQUIRE(java_class_calls(report) == java_expected_calls());
}

TEST_CASE("follow: a JDK tool other than java (jar) is profiled: its launcher loads libjvm.so later", "[launch][runtimes]")
{
	// jar's launcher maps no probes at its entry point; it loads bin/../lib/server/libjvm.so with
	// dlopen, and the JVM reads JAVA_TOOL_OPTIONS (JDK_JAVA_OPTIONS is the java launcher's only).
	std::string dir = temp_dir();
	std::ofstream(dir + "/a.txt") << "a\n";
	auto r = record_followed({"jar", "cf", dir + "/x.jar", "-C", dir, "a.txt"}, 0);
	REQUIRE_THAT(r.output.err, Contains("JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"));
	REQUIRE_THAT(r.output.err, Contains("with java"));
	REQUIRE(std::filesystem::file_size(dir + "/x.jar") > 0);
	auto report = report_json(r.data);
	// jar's own main, once, at the root of the main thread's stack; it calls System.exit, so it
	// never returns (open), the run it calls does.
	const std::string main = "sun.tools.jar.Main.main(String[])", run_args = "sun.tools.jar.Main.run(String[])";
	REQUIRE(function(report, main)["calls"] == 1);
	REQUIRE(path(report, main)["calls"] == 1);
	auto run = function(report, run_args);
	REQUIRE(run["calls"] == 1);
	REQUIRE(run["open"] == 0);
	REQUIRE(path(report, main + ";" + run_args)["calls"] == 1);
	REQUIRE(report["functions"].size() > 100);
	REQUIRE(report["anomalies"]["depth_overflow"] == 0);
}

// javadoc's launcher, like jar's, loads libjvm.so later. On a small source (one class, two
// methods) javadoc makes 12-13M calls and took 263-490 s under usdtprof on this shared 2-CPU host
// (1.05M call paths, 0.8% of the time in [other]: the table was full), too long to run 20 times;
// `javadoc --version` runs the same launcher, JVM and javadoc entry (Main.main -> execute ->
// Start.begin, options parsed, an OptionException thrown and caught) in ~1.2M calls.
TEST_CASE("follow: javadoc is profiled: its main class's frames, each function's calls its paths' sum, "
	  "no anomaly but repaired exceptions",
	  "[launch][runtimes][javadoc]")
{
	auto r = record_followed({"javadoc", "--version"}, 0);
	REQUIRE_THAT(r.output.err, Contains("JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"));
	REQUIRE_THAT(r.output.err, Contains("(javadoc) with java"));
	REQUIRE(std::regex_match(r.output.out, std::regex(R"(javadoc [0-9][0-9.]*\n)")));
	auto report = report_json(r.data);
	REQUIRE(report["processes"].size() == 1);
	REQUIRE(report["processes"][0]["comm"] == "javadoc");
	// javadoc's entry at the root of the main thread's stack, once; it ends in System.exit, so
	// main stays open, what it called returned. Both begin methods return a Main.Result, an
	// object: named with it (README).
	const std::string tool = "jdk.javadoc.internal.tool.";
	const std::string main = tool + "Main.main(String[])", execute = main + ";" + tool + "Main.execute(String[])",
			  begin = execute + ";" + tool + "Start.begin(String[]):Main$Result",
			  parse = begin + ";" + tool + "Start.begin(List,Iterable):Main$Result";
	REQUIRE(function(report, main)["calls"] == 1);
	REQUIRE(path(report, main)["calls"] == 1);
	for (const std::string &stack : {execute, begin, parse}) {
		INFO(stack);
		REQUIRE(path(report, stack)["calls"] == 1);
		REQUIRE(path(report, stack)["open"] == 0);
	}
	// The version is printed once, under the option's parsing (through a lambda: its class's
	// name is the JVM's choice).
	uint64_t shown = 0;
	for (const auto &p : report["paths"]) {
		std::string stack;
		for (const auto &frame : p["stack"])
			stack += (stack.empty() ? "" : ";") + frame.get<std::string>();
		if (p["name"] == tool + "Start.showVersion(String,String)") {
			REQUIRE(stack.starts_with(parse + ";"));
			shown += p["calls"].get<uint64_t>();
		}
	}
	REQUIRE(shown == 1);
	REQUIRE(function(report, tool + "Start.showVersion(String,String)")["calls"] == 1);
	// Counts consistent: each function's calls are its paths' sum; the JDK's own frames are there.
	std::map<std::string, uint64_t> by_paths;
	for (const auto &p : report["paths"])
		by_paths[p["name"]] += p["calls"].get<uint64_t>();
	uint64_t tool_functions = 0, exceptions = 0;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		REQUIRE(by_paths[name] == f["calls"].get<uint64_t>());
		tool_functions += name.starts_with(tool);
		if (name.starts_with("java.lang.Throwable.<init>("))
			exceptions += f["calls"].get<uint64_t>();
	}
	REQUIRE(tool_functions >= 50);
	REQUIRE(report["functions"].size() > 1000);
	// No anomaly, but exit_mismatch: the repairs of frames exceptions left through compiled code
	// (docs/design.md), at most one per exception made.
	require_no_anomalies(report, {{"exit_mismatch", exceptions}});
}

// jshell runs its snippets in a JVM it starts (JDI) and waits 5 s for it to connect back. With its
// own JVM (jshell, javac, JDI) probed too, that wait ran out and no snippet ran (300 s, 15.6M calls,
// killed); with the snippets' JVM probed from its exec, it ran out beside two busy loops (5 of 5).
// jshell's own JVM is left unprobed, the snippets' JVM is attached once it has connected back.
TEST_CASE("follow: jshell without --execution: the snippets' JVM is recorded, exact calls of the script's methods",
	  "[launch][runtimes][jshell]")
{
	std::string script = write_file(temp_dir(), "s.jsh", R"(int leaf(int x) { return x + 1; }
int twice(int x) { return leaf(leaf(x)); }
void nap() throws Exception { Thread.sleep(200); }
long s = 0;
for (int i = 0; i < 1234; i++) s += twice(i);
nap();
System.out.println("s=" + s);
/exit
)");
	auto r = record_followed({"jshell", script}, 0);
	REQUIRE(r.output.out == "s=763229\n");
	REQUIRE_THAT(r.output.err, Contains("(jshell): jshell's own JVM (jshell, javac, JDI) is not probed"));
	REQUIRE_THAT(r.output.err, Contains("(java): jshell's snippets' JVM: attached once it has connected back to jshell"));
	auto report = report_json(r.data);
	// One process recorded: the JVM jshell started for the snippets.
	REQUIRE(report["processes"].size() == 1);
	REQUIRE(report["processes"][0]["comm"] == "java");
	std::smatch launched;
	REQUIRE(std::regex_search(r.output.err, launched, std::regex(R"(recording pid (\d+) \(jshell\))")));
	REQUIRE(report["processes"][0]["pid"] != std::stoi(launched[1]));
	// Each snippet's method is a class of its own, REPL.$JShell$N (N: the snippet's number).
	std::map<std::string, nlohmann::json> snippets;
	const std::regex snippet(R"(REPL\.\$JShell\$\d+\.(leaf\(int\)|twice\(int\)|nap\(\)))");
	for (const auto &f : report["functions"]) {
		std::smatch m;
		std::string name = f["name"];
		if (std::regex_match(name, m, snippet)) {
			REQUIRE(snippets.count(m[1]) == 0);
			snippets[m[1]] = f;
		}
	}
	REQUIRE(snippets.size() == 3);
	REQUIRE(snippets["twice(int)"]["calls"] == 1234);
	REQUIRE(snippets["leaf(int)"]["calls"] == 2468);
	REQUIRE(snippets["nap()"]["calls"] == 1);
	for (const auto &[name, f] : snippets) {
		INFO(name);
		REQUIRE(f["open"] == 0);
		REQUIRE(f["recursive"] == false);
	}
	REQUIRE(snippets["nap()"]["total_ns"].get<uint64_t>() >= 199'000'000);
	// leaf is called only by twice: every path to it ends twice;leaf.
	uint64_t under_twice = 0;
	std::string twice = snippets["twice(int)"]["name"], leaf = snippets["leaf(int)"]["name"];
	for (const auto &p : report["paths"]) {
		const auto &stack = p["stack"];
		if (stack.back() != leaf)
			continue;
		REQUIRE(stack.size() >= 2);
		REQUIRE(stack[stack.size() - 2] == twice);
		under_twice += p["calls"].get<uint64_t>();
	}
	REQUIRE(under_twice == 2468);
	REQUIRE(report["anomalies"]["depth_overflow"] == 0);
}

// A program of its own (no JDK launcher, outside any JDK's bin/) that loads JDK/lib/server/libjvm.so
// with dlopen and runs Calls.main through JNI_CreateJavaVM, as embedding launchers do. Before, it was
// refused ("no probes of any preset"): only a JDK's bin/ was searched for a late libjvm.so.
TEST_CASE("follow: a program that embeds a JVM (dlopen libjvm.so, JNI_CreateJavaVM) is profiled", "[launch][runtimes]")
{
	std::string dir = temp_dir();
	Output javac = run({"javac", "-d", dir, repo_file("tests/runtimes/Calls.java")});
	INFO(javac.err);
	REQUIRE(javac.status == 0);
	// The JDK of the `java` on PATH, as the preset takes it for such a program.
	Output home = run({"sh", "-c", "dirname \"$(dirname \"$(readlink -f \"$(command -v java)\")\")\""});
	REQUIRE(home.status == 0);
	std::string jdk = home.out.substr(0, home.out.find('\n'));
	std::ofstream(dir + "/embed.c")
		<< "#include <dlfcn.h>\n#include <jni.h>\n#include <stdio.h>\n"
		   "int main(int argc, char **argv) {\n"
		   "  char lib[4096];\n"
		   "  if (argc != 3 || snprintf(lib, sizeof(lib), \"%s/lib/server/libjvm.so\", argv[1]) >= (int)sizeof(lib)) return 2;\n"
		   "  void *jvm = dlopen(lib, RTLD_NOW);\n"
		   "  if (!jvm) { fprintf(stderr, \"%s\\n\", dlerror()); return 1; }\n"
		   "  jint (*create)(JavaVM **, void **, void *) = (jint (*)(JavaVM **, void **, void *))dlsym(jvm, \"JNI_CreateJavaVM\");\n"
		   "  JavaVMOption option = {.optionString = argv[2]};\n"
		   "  JavaVMInitArgs args = {.version = JNI_VERSION_1_8, .nOptions = 1, .options = &option};\n"
		   "  JavaVM *vm; JNIEnv *env;\n"
		   "  if (!create || create(&vm, (void **)&env, &args) != JNI_OK) return 1;\n"
		   "  jclass calls = (*env)->FindClass(env, \"Calls\");\n"
		   "  jmethodID main = calls ? (*env)->GetStaticMethodID(env, calls, \"main\", \"([Ljava/lang/String;)V\") : 0;\n"
		   "  if (!main) return 1;\n"
		   "  jobjectArray none = (*env)->NewObjectArray(env, 0, (*env)->FindClass(env, \"java/lang/String\"), 0);\n"
		   "  (*env)->CallStaticVoidMethod(env, calls, main, none);\n"
		   "  if ((*env)->ExceptionCheck(env)) return 1;\n"
		   "  return (*vm)->DestroyJavaVM(vm) == JNI_OK ? 0 : 1;\n"
		   "}\n";
	Output cc = run({"gcc", "-o", dir + "/embed", dir + "/embed.c", "-I" + jdk + "/include", "-I" + jdk + "/include/linux",
			 "-ldl"});
	INFO(cc.err);
	REQUIRE(cc.status == 0);
	auto r = record_followed({dir + "/embed", jdk, "-Djava.class.path=" + dir}, 0);
	REQUIRE(r.output.out == "fib=610 inc=100000 twice=42 hello=3 caught=2\n");
	REQUIRE_THAT(r.output.err, Contains("JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"));
	REQUIRE_THAT(r.output.err, Contains("with java"));
	auto report = report_json(r.data);
	REQUIRE(java_class_calls(report) == java_expected_calls());
}

TEST_CASE("recording stops while the launched command runs on: said once, the next SIGINT/SIGTERM is passed on",
	  "[launch]")
{
	std::string dir = temp_dir(), data = dir + "/p.data";
	// nested 3000 runs for 30 s or more: never over before the test ends it.
	auto require_waiting_line = [&](Background &rec) {
		std::string line = rec.wait_for_line("waiting for", true);
		INFO(line);
		REQUIRE(std::regex_search(line, std::regex("^usdtprof: waiting for nested \\(pid [0-9]+\\) to exit; "
							   "press Ctrl-C again to stop it$")));
		// The profile is written before the wait.
		REQUIRE(std::filesystem::exists(data));
	};
	SECTION("-d elapsed: a SIGINT then stops the command, usdtprof exits with its status")
	{
		Background rec({usdtprof(), "record", "-d", "1", "-o", data, "--", target("nested"), "3000"});
		require_waiting_line(rec);
		REQUIRE(kill(rec.pid(), SIGINT) == 0);
		REQUIRE(rec.wait() == 128 + SIGINT);
		std::string all = rec.rest_of_stderr();
		REQUIRE(all.find("waiting for") == all.rfind("waiting for")); // said once
	}
	SECTION("SIGTERM stops the recording, a second SIGTERM the command")
	{
		Background rec({usdtprof(), "trace", "-o", dir + "/t.json", "--profile", data, "--", target("nested"), "3000"});
		rec.wait_for_line("recording", true);
		REQUIRE(kill(rec.pid(), SIGTERM) == 0);
		require_waiting_line(rec);
		REQUIRE(kill(rec.pid(), SIGTERM) == 0);
		REQUIRE(rec.wait() == 128 + SIGTERM);
		REQUIRE(std::filesystem::exists(dir + "/t.json"));
	}
	SECTION("--kill-on-stop: killed at once")
	{
		Output o = run({usdtprof(), "record", "-d", "1", "--kill-on-stop", "-o", data, "--", target("nested"), "3000"});
		INFO(o.err);
		REQUIRE(o.status == 128 + SIGKILL);
		REQUIRE_THAT(o.err, Contains("--kill-on-stop: killing nested (pid "));
		REQUIRE(o.err.find("waiting for") == std::string::npos);
		REQUIRE(std::filesystem::exists(data));
	}
}

TEST_CASE("names set after the launch are kept: the process's for record, its threads' for trace", "[launch]")
{
	std::string dir = temp_dir(), data = dir + "/p.data";
	SECTION("record: the process is reported by the name it gave itself")
	{
		Output o = run({usdtprof(), "record", "-o", data, "--", target("named_threads"), "4", "20"});
		INFO(o.err);
		REQUIRE(o.status == 0);
		auto report = per_process_json(data);
		REQUIRE(report["processes"].size() == 1);
		REQUIRE(report["processes"][0]["comm"] == "renamed-main");
		std::string root = "renamed-main (pid " + std::to_string(report["processes"][0]["pid"].get<int>()) + ")";
		REQUIRE(path(report, root + ";work")["calls"] == 80);
	}
	SECTION("trace: each worker's track is named as the thread named itself, after it exited")
	{
		Output o = run({usdtprof(), "trace", "-o", dir + "/t.json", "--profile", data, "--", target("named_threads"),
				"4", "20"});
		INFO(o.err);
		REQUIRE(o.status == 0);
		auto trace = nlohmann::json::parse(read_text(dir + "/t.json"));
		std::map<int, std::string> thread_names;
		std::map<int, int> work_slices;
		std::string process_name;
		for (const auto &e : trace["traceEvents"]) {
			if (e["ph"] == "M" && e["name"] == "thread_name")
				thread_names[e["tid"].get<int>()] = e["args"]["name"];
			if (e["ph"] == "M" && e["name"] == "process_name")
				process_name = e["args"]["name"];
			if (e["ph"] == "B" && e["name"] == "work")
				work_slices[e["tid"].get<int>()]++;
			if (e["ph"] == "X" && e["name"] == "work")
				work_slices[e["tid"].get<int>()]++;
		}
		INFO(trace.dump().substr(0, 2000));
		REQUIRE(process_name == "renamed-main");
		REQUIRE(work_slices.size() == 4);
		std::set<std::string> workers;
		for (const auto &[tid, slices] : work_slices) {
			REQUIRE(slices == 20);
			workers.insert(thread_names[tid]);
		}
		REQUIRE(workers == std::set<std::string>{"worker-0", "worker-1", "worker-2", "worker-3"});
	}
}

TEST_CASE("no probes: says which binary was searched, and for a runtime built without probes what has them",
	  "[launch]")
{
	// A program named like a runtime, without probes (as pyenv's python3 is built).
	std::string dir = temp_dir(), fake = dir + "/python3";
	std::filesystem::copy_file("/bin/true", fake);
	REQUIRE(chmod(fake.c_str(), 0755) == 0);
	SECTION("--no-follow: refused before it runs, in one line")
	{
		Output o = run({usdtprof(), "record", "--no-follow", "-o", dir + "/p.data", "--", fake});
		INFO(o.err);
		REQUIRE(o.status == 1);
		REQUIRE(std::count(o.err.begin(), o.err.end(), '\n') == 1);
		REQUIRE_THAT(o.err, Contains("no probes of any preset"));
		REQUIRE_THAT(o.err, Contains(" in " + fake));
		REQUIRE_THAT(o.err, Contains("it is a python built without USDT probes"));
		REQUIRE_THAT(o.err, Contains("/usr/bin/python3.11 has them, use it instead"));
	}
	SECTION("followed: every program the command ran is named, nothing written")
	{
		std::string wrapper = write_script(dir, "w.sh", "#!/bin/sh\n" + fake + "\n");
		Output o = run({usdtprof(), "record", "-o", dir + "/p.data", "--", wrapper});
		INFO(o.err);
		REQUIRE(o.status == 1);
		REQUIRE_THAT(o.err, Contains("no probes of any preset"));
		REQUIRE_THAT(o.err, Contains("/bin/dash, " + fake) || Contains("/bin/bash, " + fake) ||
					     Contains("/usr/bin/dash, " + fake));
		REQUIRE_THAT(o.err, Contains("/usr/bin/python3.11 has them, use it instead"));
		REQUIRE(!std::filesystem::exists(dir + "/p.data"));
	}
	SECTION("a program with no runtime's name gets no hint")
	{
		Output o = run({usdtprof(), "record", "--no-follow", "-o", dir + "/p.data", "--", "/bin/true"});
		REQUIRE(o.status == 1);
		REQUIRE_THAT(o.err, Contains(" in /usr/bin/true"));
		REQUIRE(o.err.find("use it instead") == std::string::npos);
	}
}
