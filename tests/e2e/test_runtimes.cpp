// The runtime presets on real interpreters and servers: PHP, Ruby, Java (HotSpot), CPython 3.11
// and PostgreSQL 15, with the scripts of tests/runtimes/ whose call counts are known (see the
// comment at the top of each). Needs the Debian packages of tools/install-deps.sh.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "harness.h"
#include "intervals.h"
#include "java_calls.h"
#include "profile/profile.h"
#include "serve/http.h"

using namespace e2e;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const char kPostgres[] = "/usr/lib/postgresql/15/bin/postgres";
const char kPython311[] = "/usr/bin/python3.11";
const char kRuby31[] = "/usr/bin/ruby3.1";
const char kLibruby[] = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";

// A file of tests/runtimes/, by absolute path (tests run from the repository's root).
std::string runtime_file(const std::string &name)
{
	auto p = std::filesystem::absolute(std::filesystem::path(__FILE__).parent_path().parent_path() / "runtimes" / name);
	INFO(p);
	REQUIRE(std::filesystem::exists(p));
	return p.string();
}

// name's path as execvp finds it, "" if not on PATH.
std::string find_in_path(const std::string &name)
{
	const char *path = getenv("PATH");
	std::istringstream dirs(path ? path : "/usr/bin:/bin");
	for (std::string dir; std::getline(dirs, dir, ':');)
		if (std::string p = (dir.empty() ? "." : dir) + "/" + name; access(p.c_str(), X_OK) == 0)
			return p;
	return "";
}

void require_one_line(const std::string &err)
{
	INFO(err);
	REQUIRE(std::count(err.begin(), err.end(), '\n') == 1);
	REQUIRE(err.back() == '\n');
}

nlohmann::json list_json(int pid)
{
	Output o = run({e2e::usdtprof(), "list", "-p", std::to_string(pid), "--format", "json"});
	INFO(o.err);
	REQUIRE(o.status == 0);
	return nlohmann::json::parse(o.out);
}

// The binary of a `list --format json` whose path contains part (fails if none).
nlohmann::json listed_binary(const nlohmann::json &list, const std::string &part)
{
	for (const auto &b : list.at("binaries"))
		if (b.at("path").get<std::string>().find(part) != std::string::npos)
			return b;
	FAIL("no binary with '" << part << "' in " << list.dump());
	return {};
}

nlohmann::json listed_probe(const nlohmann::json &binary, const std::string &provider, const std::string &name)
{
	for (const auto &p : binary.at("probes"))
		if (p.at("provider") == provider && p.at("name") == name)
			return p;
	FAIL("no probe " << provider << ":" << name << " in " << binary.at("path"));
	return {};
}

// Runs record -p against a process whose runtime has its probes switched off:
// it must refuse with one line naming the switch, and write nothing.
void require_refused(int pid, const std::string &switch_name)
{
	std::string dir = temp_dir(), data = dir + "/refused.data";
	// -d bounds the run should usdtprof wrongly start recording.
	Output o = run({e2e::usdtprof(), "record", "-p", std::to_string(pid), "-d", "2", "-o", data});
	INFO(o.err);
	REQUIRE(o.status == 1);
	require_one_line(o.err);
	REQUIRE_THAT(o.err, Contains("pid " + std::to_string(pid)));
	REQUIRE_THAT(o.err, Contains(switch_name));
	REQUIRE(!std::filesystem::exists(data));
	REQUIRE(std::filesystem::is_empty(dir)); // no temporary file left either
}

} // namespace

// ---------------------------------------------------------------------------------------------
// PHP

TEST_CASE("php: record -- php sets USE_ZEND_DTRACE itself, exact calls per Class::function", "[runtimes]")
{
	auto [o, data, slack, report] = record_report({"php", runtime_file("calls.php")},
						      {.env = {"env", "-u", "USE_ZEND_DTRACE"}});
	INFO(o.err);
	REQUIRE(o.out == "fib=610 inc=1000 twice=42 hello=3 closure=5 caught=2\n");
	REQUIRE_THAT(o.err, Contains("USE_ZEND_DTRACE=1"));

	require_no_anomalies(report);
	const std::string closure = "{closure:" + runtime_file("calls.php") + ":76}"; // where its body starts
	const std::pair<std::string, int> expected[] = {{"fib", 1973}, {"Counter::inc", 1000}, {"Counter::get", 1},
		{"Util::twice", 7}, {"Base::hello", 3}, {closure, 5}, {"thrower", 2}, {"{main}", 1}};
	for (const auto &[name, calls] : expected) {
		INFO(name);
		auto f = function(report, name);
		REQUIRE(f["calls"] == calls);
		REQUIRE(f["open"] == 0);
	}
	// Internal functions (count, printf ...) have no probes: nothing else is there.
	REQUIRE(report["functions"].size() == std::size(expected));
	REQUIRE(function(report, "fib")["recursive"] == true);
	REQUIRE(path(report, "{main}")["calls"] == 1);
	REQUIRE(path(report, "{main};fib")["calls"] == 1);
	REQUIRE(path(report, "{main};Counter::inc")["calls"] == 1000);
	REQUIRE(path(report, "{main};Base::hello")["calls"] == 3);
	// thrower's exception unwinds through a function__return: its caller is still {main}.
	REQUIRE(path(report, "{main};thrower")["calls"] == 2);
	REQUIRE(path(report, "{main};Counter::get")["calls"] == 1);
	// The preset resolves a file:line location per function, but `report --format json` has no
	// field for it (docs/report-json.md): nothing to check here.
}

// PHP names every closure "{closure}" and passes no more about it to its probes: before, all
// closures of a program were one function, [recursive] whenever one called another.
TEST_CASE("php: closures are apart by file and line, recursive only when one calls itself", "[runtimes][names]")
{
	std::string dir = temp_dir(), file = dir + "/c.php";
	std::ofstream(file) << "<?php\n"
			       "function run($f) { return $f(); }\n"
			       "class Foo {\n"
			       "    public function go() {\n"
			       "        $a = function () {\n"
			       "            return 1;\n"                                  // 6
			       "        };\n"
			       "        $b = function () {\n"
			       "            return run(function () {\n"
			       "                return 2;\n"                              // 10
			       "            });\n"
			       "        };\n"
			       "        return $a() + $b();\n"
			       "    }\n"
			       "}\n"
			       "$down = function ($n) use (&$down) {\n"                  // 16: its first opcode's
			       "    return $n > 0 ? $down($n - 1) : 0;\n"
			       "};\n"
			       "$t = 0;\n"
			       "for ($i = 0; $i < 5; $i++) { $t += (new Foo)->go(); }\n"
			       "echo $t + $down(3), \"\\n\";\n";
	auto [o, data, slack, report] = record_report({"php", file});
	REQUIRE(o.out == "15\n");
	require_no_anomalies(report);
	auto closure = [&](int line) { return "{closure:" + file + ":" + std::to_string(line) + "}"; };
	REQUIRE(function(report, "Foo::" + closure(6))["calls"] == 5);
	REQUIRE(function(report, "Foo::" + closure(9))["calls"] == 5);
	REQUIRE(function(report, "Foo::" + closure(10))["calls"] == 5);
	REQUIRE(function(report, closure(16))["calls"] == 4);
	for (int line : {6, 9, 10}) {
		INFO(line);
		REQUIRE(function(report, "Foo::" + closure(line))["recursive"] == false);
	}
	REQUIRE(function(report, closure(16))["recursive"] == true);
	REQUIRE(path(report, "{main};Foo::go;Foo::" + closure(9) + ";run;Foo::" + closure(10))["calls"] == 5);
}

// PHP names every anonymous class "class@anonymous", a NUL, then where it is declared: its probes'
// text ends at the NUL, so two anonymous classes' methods of one name were one row with both calls.
TEST_CASE("php: methods of two anonymous classes are apart, named by where they run", "[runtimes][names]")
{
	std::string dir = temp_dir(), file = dir + "/anon.php";
	std::ofstream(file) << "<?php\n"
			       "$x = new class {\n"
			       "    public function handle() {\n"
			       "        return 3;\n" // 4: where handle starts executing
			       "    }\n"
			       "};\n"
			       "$y = new class {\n"
			       "    public function handle() {\n"
			       "        return 4;\n" // 9
			       "    }\n"
			       "};\n"
			       "class A { public function handle() { return 1; } }\n"
			       "$s = 0;\n"
			       "for ($i = 0; $i < 11; $i++) { $s += $x->handle(); }\n"
			       "for ($i = 0; $i < 13; $i++) { $s += $y->handle(); }\n"
			       "for ($i = 0; $i < 7; $i++) { $s += (new A)->handle(); }\n"
			       "echo get_class($x) === get_class($y) ? 'one class' : 'two classes', ' ', $s, \"\\n\";\n";
	auto [o, data, slack, report] = record_report({"php", file});
	REQUIRE(o.out == "two classes 92\n"); // 11*3 + 13*4 + 7
	require_no_anomalies(report);
	const std::string x = "class@anonymous::handle:" + file + ":4", y = "class@anonymous::handle:" + file + ":9";
	REQUIRE(function(report, x)["calls"] == 11);
	REQUIRE(function(report, y)["calls"] == 13);
	REQUIRE(function(report, "A::handle")["calls"] == 7);
	for (const std::string &name : {x, y, std::string("A::handle")}) {
		INFO(name);
		REQUIRE(function(report, name)["recursive"] == false);
		REQUIRE(path(report, "{main};" + name)["calls"] == function(report, name)["calls"]);
	}
	for (const auto &f : report["functions"])
		REQUIRE(f["name"] != "class@anonymous::handle");
}

// PHP's probes pass {closure}, the file and the line of the closure's first opcode; PHP 8.2 keeps
// no column, and the op_array's addresses change every run (docs/design.md): two closures that
// start on one line are one function, as the README says; one on a line of its own is apart.
TEST_CASE("php: two closures that start on one line are one row, their calls added up (no column to part them)",
	  "[runtimes][names]")
{
	std::string dir = temp_dir(), file = dir + "/s.php";
	const int inc_calls = 3, dbl_calls = 2;
	std::ofstream(file) << "<?php\n"
			       "[$inc, $dbl] = [fn($x) => $x + 1, fn($x) => $x * 2];\n" // 2
			       "$t = 0;\n"
			       "for ($i = 0; $i < " << inc_calls << "; $i++) { $t += $inc($i); }\n"
			       "for ($i = 0; $i < " << dbl_calls << "; $i++) { $t += $dbl($i); }\n"
			       "$other = function ($x) {\n"
			       "    return $x - 1;\n"                                    // 7
			       "};\n"
			       "$t += $other(10);\n"
			       "echo $t, \"\\n\";\n";
	auto [o, data, slack, report] = record_report({"php", file});
	REQUIRE(o.out == "17\n"); // 1+2+3 + 0+2 + 9
	require_no_anomalies(report);
	auto closure = [&](int line) { return "{closure:" + file + ":" + std::to_string(line) + "}"; };
	REQUIRE(function(report, closure(2))["calls"] == inc_calls + dbl_calls);
	REQUIRE(function(report, closure(2))["recursive"] == false);
	REQUIRE(path(report, "{main};" + closure(2))["calls"] == inc_calls + dbl_calls);
	REQUIRE(function(report, closure(7))["calls"] == 1);
	size_t closures = 0;
	for (const auto &f : report["functions"])
		closures += f["name"].get<std::string>().starts_with("{closure");
	REQUIRE(closures == 2);
}

// A method called through __call runs a trampoline PHP names by the name called: a string made at
// each call, freed after it, whose hash PHP never computes, and the next call's name takes its
// address. A known function's hit is found by its strings' addresses, checked against their
// bytes (docs/design.md, USDTPROF_CONTENT_CACHED): four names at two addresses stay four.
TEST_CASE("php: a method name freed and its address reused for another name is another function", "[runtimes][names]")
{
	std::string dir = temp_dir(), file = dir + "/dyn.php";
	std::ofstream(file) << "<?php\n"
			       "class Foo { public function __call($m, $a) { return strlen($m); } }\n"
			       "$o = new Foo;\n"
			       "$t = 0;\n"
			       "for ($i = 0; $i < 100; $i++) { $name = \"dyn\" . ($i % 4); $t += $o->$name(); }\n"
			       "echo $t, \"\\n\";\n";
	auto [o, data, slack, report] = record_report({"php", file});
	REQUIRE(o.out == "400\n");
	require_no_anomalies(report);
	for (int i = 0; i < 4; i++) {
		const std::string name = "Foo::dyn" + std::to_string(i);
		INFO(name);
		REQUIRE(function(report, name)["calls"] == 25);
		REQUIRE(function(report, name)["recursive"] == false);
		REQUIRE(path(report, "{main};" + name + ";Foo::__call")["calls"] == 25);
	}
	REQUIRE(function(report, "Foo::__call")["calls"] == 100);
	REQUIRE(report["functions"].size() == 6); // {main}, __call, dyn0-3
}

// PHP frees the names it interned for a request when the request ends, and the next request's
// take their addresses: PHP's built-in server (no opcache) serving x.php, rewritten between
// requests with another class of the same length, gives Aaa and Bbb one address, and x.php's
// name, which PHP does not intern, the same text. A thread's slot pins interned names until its
// next php:request__startup (USDTPROF_CONTENT_PINNED): without that, Bbb::run was Aaa::run
// after the first request (100 and 20 calls).
TEST_CASE("php: names freed at a request's end and taken by the next request's are other functions", "[runtimes][names]")
{
	std::string dir = temp_dir(), port = std::to_string(free_port());
	for (const char *cls : {"Aaa", "Bbb"})
		std::ofstream(dir + "/" + cls + ".txt") << "<?php\nclass " << cls << " { function run($n) { return $n + 1; } }\n"
							<< "$o = new " << cls << "; $t = 0;\n"
							<< "for ($i = 0; $i < 20; $i++) $t += $o->run($i);\necho $t;\n";
	Background php({"env", "USE_ZEND_DTRACE=1", "php", "-d", "opcache.enable=0", "-S", "127.0.0.1:" + port, "-t", dir});
	php.wait_for_line("started", true);
	std::string data = dir + "/profile.data";
	Background rec({e2e::usdtprof(), "record", "-p", std::to_string(php.pid()), "-o", data});
	rec.wait_for_line("recording", true);
	Output client = run({"php", "-r",
			     "for ($i = 0; $i < 3; $i++) foreach (['Aaa', 'Bbb'] as $c) { copy('" + dir +
				     "/' . $c . '.txt', '" + dir + "/x.php'); echo file_get_contents('http://127.0.0.1:" +
				     port + "/x.php'), ' '; }"});
	REQUIRE(client.out == "210 210 210 210 210 210 ");
	kill(php.pid(), SIGTERM);
	php.wait();
	int status = rec.wait();
	INFO(rec.rest_of_stderr());
	REQUIRE(status == 0);
	auto report = report_json(data);
	require_no_anomalies(report);
	REQUIRE(function(report, "Aaa::run")["calls"] == 60);
	REQUIRE(function(report, "Bbb::run")["calls"] == 60);
	REQUIRE(function(report, "{main}")["calls"] == 6);
}

TEST_CASE("php: top-level code is {main}, a user function main() is main, each once", "[runtimes]")
{
	// Top-level code, a user function main(), an included file's top-level code, and
	// a method main() of a class.
	std::string dir = temp_dir();
	{
		std::ofstream inc(dir + "/inc.php");
		inc << "<?php\n$included = 1;\n";
		std::ofstream script(dir + "/main.php");
		script << "<?php\nfunction main($n) { return $n > 0 ? main($n - 1) : 0; }\n"
			  "class App { public function main() { return main(2); } }\n"
			  "main(0);\n(new App())->main();\ninclude __DIR__ . '/inc.php';\necho \"done\\n\";\n";
	}
	auto [o, data, slack, report] = record_report({"php", dir + "/main.php"});
	INFO(o.err);
	REQUIRE(o.out == "done\n");
	require_no_anomalies(report);
	// main(0) once, then App::main -> main(2) -> main(1) -> main(0).
	REQUIRE(function(report, "main")["calls"] == 4);
	REQUIRE(function(report, "App::main")["calls"] == 1);
	REQUIRE(path(report, "{main}")["calls"] == 1);
	REQUIRE(path(report, "{main};main")["calls"] == 1);
	REQUIRE(path(report, "{main};App::main;main;main;main")["calls"] == 1);
	// The included file's top-level code is top-level code too.
	REQUIRE(path(report, "{main};{main}")["calls"] == 1);
	REQUIRE(function(report, "{main}")["calls"] == 2);
	REQUIRE(function(report, "{main}")["recursive"] == true);
}

TEST_CASE("php: record -p of a php started without USE_ZEND_DTRACE is refused in one line, nothing written",
	  "[runtimes]")
{
	Background php({"env", "-u", "USE_ZEND_DTRACE", "php", "-r", "echo \"ready\\n\"; sleep(10);"});
	php.wait_for_line("ready");
	require_refused(php.pid(), "USE_ZEND_DTRACE");
}

TEST_CASE("php: record -p accepts USE_ZEND_DTRACE=1 as the first entry of the environment", "[runtimes]")
{
	// `USE_ZEND_DTRACE=1 php ...` from a shell, `env -i`: the variable starts /proc/PID/environ.
	std::string dir = temp_dir(), go = dir + "/go";
	Background php({"env", "-i", "USE_ZEND_DTRACE=1", "PATH=/usr/bin:/bin", "php", "-r",
			"function f() {} echo \"ready\\n\"; while (!file_exists('" + go +
				"')) usleep(10000); for ($i = 0; $i < 50; $i++) f();"});
	php.wait_for_line("ready");
	std::string data = dir + "/profile.data";
	Background rec({e2e::usdtprof(), "record", "-p", std::to_string(php.pid()), "-o", data});
	rec.wait_for_line("recording", true);
	std::ofstream(go).put('\n');
	REQUIRE(php.wait() == 0);
	int status = rec.wait();
	INFO(rec.rest_of_stderr());
	REQUIRE(status == 0);
	REQUIRE(function(report_json(data), "f")["calls"] == 50);
}

// ---------------------------------------------------------------------------------------------
// Ruby

namespace {

// `record --ruby-call-hook -- COMMAND` (ruby, erb, ...) with the preset's own RUBYOPT only, not
// the test's: record_report.
Recorded record_ruby_hooked(const std::vector<std::string> &command)
{
	return record_report(command, {.env = {"env", "-u", "RUBYOPT"}, .options = {"--ruby-call-hook"}});
}

// Each function of expected has exactly its calls and no frame left open.
void require_closed_calls(const nlohmann::json &report, const std::vector<std::pair<std::string, int>> &expected)
{
	for (const auto &[name, calls] : expected) {
		INFO(name);
		auto f = function(report, name);
		REQUIRE(f["calls"] == calls);
		REQUIRE(f["open"] == 0);
	}
}

} // namespace

TEST_CASE("ruby: record -- ruby switches the method probes on, exact calls per Class#method", "[runtimes]")
{
	// With rubygems: its startup frees RubyVM::FrozenCore's name, which the launched Ruby gets back
	// (the repair script) before its C method probes are attached ("ruby: launched ..." below).
	auto [o, data, slack, report] = record_ruby_hooked({"ruby", runtime_file("calls.rb")});
	INFO(o.err);
	REQUIRE(o.out == "fib=610 inc=1000 twice=42 hello=3 caught=2\n");
	REQUIRE_THAT(o.err, Contains("RUBYOPT=-r"));

	// Top-level defs belong to Object; a singleton (class) method is Class.method; an inherited
	// method is named for the class that defines it.
	require_closed_calls(report, {{"Object#fib", 1973}, {"Counter#inc", 1000}, {"Counter#get", 1},
				      {"Counter#initialize", 1}, {"Util.twice", 7}, {"Base#hello", 3},
				      {"Object#thrower", 2}});
	REQUIRE(function(report, "Object#fib")["recursive"] == true);
	// C methods (cmethod__entry/return) are frames too: Counter.new calls initialize.
	REQUIRE(function(report, "Class#new")["calls"] > 0);
	REQUIRE(path(report, "Class#new;Counter#initialize")["calls"] == 1);
	REQUIRE(path(report, "Object#fib")["calls"] == 1);
	REQUIRE(path(report, "Object#fib;Object#fib")["calls"] == 2);
	REQUIRE(path(report, "Counter#inc")["calls"] == 1000);
}

// Calls of Ruby-defined methods as Ruby itself counts them (tests/runtimes/count_calls.rb, a
// TracePoint loaded before the program): "name count" lines.
std::map<std::string, int> ruby_counted_calls(const std::string &file)
{
	std::map<std::string, int> calls;
	std::ifstream in(file);
	for (std::string name; in >> name;)
		in >> calls[name];
	return calls;
}

// Ruby 3.1's method probes name a singleton method's class (Rake), not its singleton class: the
// method entry, read beside them, tells Rake.application from an instance method. rake, a real
// program, under Ruby's own count of its calls: every method of Rake's, class methods as Rake.m,
// instance methods as Rake::Task#m, each with the calls Ruby counted.
TEST_CASE("ruby: rake's class methods are Class.method, instance methods Class#method, calls as Ruby counts them",
	  "[runtimes][names]")
{
	std::string dir = temp_dir(), counted = dir + "/counted.txt";
	std::ofstream(dir + "/Rakefile") << "task :a do\nend\ntask b: :a do\nend\n"
					    "task default: %i[a b] do\n  puts 'built'\nend\n";
	auto [o, data, slack, report] =
		record_report({"rake", "-f", dir + "/Rakefile"},
			      {.env = {"env", "-u", "RUBYOPT", "RUBYOPT=-r" + runtime_file("count_calls.rb"),
				       "USDTPROF_TEST_PREFIX=Rake", "USDTPROF_TEST_COUNTS=" + counted},
			       .options = {"--ruby-call-hook"}});
	REQUIRE(o.out == "built\n");
	auto expected = ruby_counted_calls(counted);
	int singletons = 0;
	for (const auto &[name, calls] : expected) {
		INFO(name);
		REQUIRE(function(report, name)["calls"] == calls);
		if (size_t dot = name.rfind('.'); dot != std::string::npos && name.find('#') == std::string::npos) {
			singletons++;
			// Never also counted under the instance method's name.
			std::string instance = name.substr(0, dot) + "#" + name.substr(dot + 1);
			if (!expected.contains(instance))
				for (const auto &f : report.at("functions"))
					REQUIRE(f.at("name") != instance);
		}
	}
	REQUIRE(expected.contains("Rake.application"));
	REQUIRE(expected.contains("Rake::Task#invoke"));
	REQUIRE(singletons >= 3);
}

// C methods' probes fire outside the method's frame, but their callers still hold its method
// entry, each site of Debian's 3.1.2 in its own place (ruby31_cmethod_sites): a singleton C
// method is Class.m, an instance one Class#m, beside a Ruby singleton method, each with its
// exact calls, also when it returns by raising (rb_vm_exec's unwinding site).
TEST_CASE("ruby: singleton C methods are Class.method (File.exist?) and instance ones Class#method",
	  "[runtimes][names][ruby-cmethod]")
{
	std::string script = write_file(temp_dir(), "c.rb", R"(module Util
  def self.twice(x)
    x * 2
  end
end
n = 0
7.times { n += 1 if File.exist?('/') }
5.times { 'x'.upcase }
3.times { n += Util.twice(1) }
2.times { begin; IO.read('/nonexistent/usdtprof'); rescue SystemCallError; end }
puts n
)");
	auto [o, data, slack, report] = record_ruby_hooked({"ruby", script});
	REQUIRE(o.out == "13\n");
	require_closed_calls(report, {{"File.exist?", 7}, {"String#upcase", 5}, {"Util.twice", 3}, {"IO.read", 2},
				      {"Integer#times", 4}});
	for (const auto &f : report.at("functions")) {
		std::string name = f.at("name");
		INFO(name);
		REQUIRE(name != "File#exist?");
		REQUIRE(name != "IO#read");
		REQUIRE(name != "Util#twice");
		REQUIRE(name != "String.upcase");
	}
	REQUIRE(path(report, "Integer#times;File.exist?")["calls"] == 7);
}

// Ruby names a class without a name (Class.new, Struct.new) by its address, a new one each time:
// every class made in a loop was its own rows and paths ("#<Class:0x00007f...>#hi", 1 call each).
// Keyed without the address, they are "(anonymous class)", one function and path per method.
// erb, a real program, rendering a template that makes such classes.
TEST_CASE("ruby: erb: methods of anonymous classes are one function each, named without an address",
	  "[runtimes][names]")
{
	std::string page = write_file(temp_dir(), "anon.erb", R"(<% 4.times do
  k = Class.new { def hi; 1; end; def self.mk; new; end }
  s = Struct.new(:a) { def twice; a * 2; end }
  m = Module.new { def self.go; 2; end }
%><%= k.mk.hi + s.new(2).twice + m.go %>,<% end %>
)");
	auto [o, data, slack, report] = record_ruby_hooked({"erb", page});
	INFO(o.err);
	REQUIRE(o.out == "7,7,7,7,\n");
	const std::pair<const char *, int> expected[] = {{"(anonymous class)#hi", 4}, {"(anonymous class).mk", 4},
		{"(anonymous class)#twice", 4}, {"(anonymous module).go", 4}};
	for (const auto &[name, calls] : expected) {
		INFO(name);
		auto f = function(report, name);
		REQUIRE(f["calls"] == calls);
		REQUIRE(f["recursive"] == false);
		// One path: the four classes' calls aggregate.
		int paths = 0;
		for (const auto &p : report["paths"])
			if (p["stack"].back() == name) {
				paths++;
				REQUIRE(p["calls"] == calls);
			}
		REQUIRE(paths == 1);
	}
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		REQUIRE(name.find(":0x") == std::string::npos);
	}
}

// A thread keeps each class's name hash by the class's address and serial (bpf/identity.bpf.h,
// owner_identity), never for a name that starts with '#': a class without a name gets one when
// assigned to a constant, and its methods are then that name's. Classes made, named, called
// and dropped in a loop are each their own function, with their own calls, also where one is
// made at the address of one named, called and dropped before: of 30 classes made at once the
// page names one at such an address (Fiddle.dlwrap gives an object's address) and counts
// those, 7-9 of 11 in six erb runs here, with and without the hook (one class made at a time:
// 0-1 of 39 under the hook). erb, a real program.
TEST_CASE("ruby: erb: a class named after its first calls, and classes made in a loop, keep their own names and calls",
	  "[runtimes][names]")
{
	std::string page = write_file(temp_dir(), "named.erb", R"(<% require 'fiddle'
k = Class.new { def hi; 1; end }
a = k.new.hi + k.new.hi
Later = k
b = k.new.hi
seen = {}
reused = 0
12.times do |i|
  made = Array.new(30) { Class.new { def hi; 1; end; def self.mk; new; end } }
  c = made.find { |m| seen[Fiddle.dlwrap(m)] } || made[0]
  made = nil
  reused += 1 if seen[Fiddle.dlwrap(c)]
  seen[Fiddle.dlwrap(c)] = true
  Object.const_set(:"Gen#{i}", c)
  c = nil
  (i % 3 + 1).times { Object.const_get(:"Gen#{i}").mk.hi }
  Object.send(:remove_const, :"Gen#{i}")
  GC.start
end %><%= a + b %> <%= reused %>
)");
	auto [o, data, slack, report] = record_ruby_hooked({"erb", page});
	INFO(o.err);
	INFO(o.out);
	REQUIRE(o.out.rfind("3 ", 0) == 0);
	REQUIRE(std::stoi(o.out.substr(2)) > 0); // an address was reused: the case this test is for
	std::vector<std::pair<std::string, int>> expected = {{"(anonymous class)#hi", 2}, {"Later#hi", 1}};
	for (int i = 0; i < 12; i++) {
		expected.push_back({"Gen" + std::to_string(i) + "#hi", i % 3 + 1});
		expected.push_back({"Gen" + std::to_string(i) + ".mk", i % 3 + 1});
	}
	require_closed_calls(report, expected);
}

// A class without a name gets one inside its own method's call: Ruby names the class anew at each
// hit, so that call's exit names it otherwise than its entry did. The exit still ends that call
// (an exit takes its top frame's function when it shows the frame's class and method), so the
// calls after it are at their own paths, not under a frame left open to the end.
TEST_CASE("ruby: a class named inside its own method's call: the call ends at its exit, later calls at their own "
	  "paths",
	  "[runtimes][names]")
{
	std::string script = write_file(temp_dir(), "named_late.rb", R"(k = Class.new do
  def self.name_me = Object.const_set(:Named, self)
  def hi = 1
end
k.new.hi
k.name_me
k.new.hi
3.times { Named.new.hi }
print "done"
)");
	auto [o, data, slack, report] = record_ruby_hooked({"ruby", script});
	INFO(o.err);
	REQUIRE(o.out == "done");
	require_closed_calls(report, {{"(anonymous class)#hi", 1}, {"(anonymous class).name_me", 1}, {"Named#hi", 4}});
	REQUIRE(path(report, "(anonymous class).name_me")["calls"] == 1);
	REQUIRE(path(report, "Named#hi")["calls"] == 1);
	REQUIRE(path(report, "Integer#times;Named#hi")["calls"] == 3);
}

// Ruby 3.1 frees RubyVM::FrozenCore's name at its first GC; its cmethod probes then read the freed
// slot in rb_dtrace_setup() (garbage class names, or a segfault when the slot holds another kind
// of object: 16 of 20 erb launches with the hook, 7 of 90 without, before the repair). A launched
// Ruby is repaired by usdtprof's script before those probes are attached.
TEST_CASE("ruby: launched Rubies (erb, with and without the hook) never crash; FrozenCore keeps its name",
	  "[runtimes][ruby-crash]")
{
	std::string dir = temp_dir();
	std::ofstream(dir + "/t.erb") << "<% [3, 1, 2].sort.each do |x| %><%= x %>,<% end %>\n";
	for (int run = 0; run < 6; run++) {
		std::vector<std::string> options;
		if (run % 2)
			options.push_back("--ruby-call-hook");
		INFO("run " << run);
		auto [o, data, slack, report] =
			record_report({"erb", dir + "/t.erb"}, {.env = {"env", "-u", "RUBYOPT"}, .options = options});
		REQUIRE(o.out == "1,2,3,\n");
		// C method probes were on: rubygems' `alias`es (core#set_method_alias) ran under them,
		// each named for FrozenCore, never for whatever reused its name's slot.
		REQUIRE(function(report, "Kernel#require")["calls"] > 0);
		int core_calls = 0;
		for (const auto &f : report.at("functions")) {
			std::string name = f.at("name");
			if (name.find("#core#") == std::string::npos && name.find(".core#") == std::string::npos)
				continue;
			INFO(name);
			// Singleton methods of FrozenCore: proved so at the C method sites of Debian's
			// 3.1.2 (ruby31_cmethod_sites), FrozenCore#core#... where nothing proves it.
			REQUIRE((name.starts_with("RubyVM::FrozenCore.core#") ||
				 name.starts_with("RubyVM::FrozenCore#core#")));
			core_calls += f.at("calls").get<int>();
		}
		REQUIRE(core_calls > 0);
	}
	// A running Ruby that usdtprof did not repair gets no C method probes, and says why.
	// It sleeps until killed: attaching may take seconds on a loaded host.
	Background rb({"env", "-u", "RUBYOPT", "ruby", "-e", "puts 'ready'; $stdout.flush; sleep"});
	rb.wait_for_line("ready");
	Output attached = run({e2e::usdtprof(), "record", "-p", std::to_string(rb.pid()), "-d", "0.3", "-o", dir + "/p.data"});
	INFO(attached.err);
	REQUIRE(attached.status == 0);
	REQUIRE_THAT(attached.err, Contains("C method probes (cmethod__entry/return) not attached to"));
}

TEST_CASE("ruby: list -p shows libruby's probes and the ruby preset", "[runtimes]")
{
	Background rb({"ruby", "-e", "puts 'ready'; $stdout.flush; sleep 10"});
	rb.wait_for_line("ready");
	auto list = list_json(rb.pid());
	auto lib = listed_binary(list, "/libruby-3.1.so");
	for (const char *name : {"method__entry", "method__return", "cmethod__entry", "cmethod__return"}) {
		INFO(name);
		REQUIRE(listed_probe(lib, "ruby", name)["presets"] == nlohmann::json{"ruby"});
	}
	REQUIRE(listed_probe(lib, "ruby", "method__entry")["sites"] == 1);
	REQUIRE(listed_probe(lib, "ruby", "method__return")["sites"] == 2);
	REQUIRE(listed_probe(lib, "ruby", "gc__mark__begin")["presets"] == nlohmann::json::array());

	Output text = run({e2e::usdtprof(), "list", "-p", std::to_string(rb.pid())});
	INFO(text.err);
	REQUIRE(text.status == 0);
	REQUIRE_THAT(text.out, Contains("ruby:method__return"));
	REQUIRE(text.out.ends_with("; presets: ruby\n"));
}

// ---------------------------------------------------------------------------------------------
// Java (HotSpot)

namespace {

// Calls.java, Sleep.java, Ex2.java and Lambdas.java compiled once into a temporary directory.
const std::string &java_classes()
{
	static std::string dir;
	if (dir.empty()) {
		std::string d = temp_dir();
		Output o = run({"javac", "-d", d, runtime_file("Calls.java"), runtime_file("Sleep.java"),
				runtime_file("Ex2.java"), runtime_file("Lambdas.java")});
		INFO(o.out << o.err);
		REQUIRE(o.status == 0);
		dir = d;
	}
	return dir;
}

const std::vector<std::string> kNoJavaOptions = {"env", "-u", "JDK_JAVA_OPTIONS", "-u", "JAVA_TOOL_OPTIONS", "-u",
						 "_JAVA_OPTIONS"};

// The report of `record -- java -cp DIR Calls`, recorded once for the tests below (with the
// JDK's own methods it has ~50,000 call paths: its JSON takes seconds).
const nlohmann::json &java_calls_report()
{
	static std::optional<nlohmann::json> report;
	if (!report) {
		Recorded calls = record_report({"java", "-cp", java_classes(), "Calls"}, {.env = kNoJavaOptions});
		INFO(calls.output.err);
		REQUIRE(calls.output.out == "fib=610 inc=100000 twice=42 hello=3 caught=2\n");
		REQUIRE_THAT(calls.output.err, Contains("JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"));
		report = std::move(calls.report);
	}
	return *report;
}

} // namespace

TEST_CASE("java: record -- java turns DTraceMethodProbes on, exact calls per Class.method through the JIT",
	  "[runtimes]")
{
	const auto &report = java_calls_report();
	// inc is JIT-compiled midway, main is OSR-compiled with thrower inlined: counts stay exact, even
	// for thrower, whose compiled frames left by its exception fire no method__return.
	const auto &expected = java_expected_calls();
	std::map<std::string, int> got = java_class_calls(report);
	for (const auto &[name, calls] : expected) {
		INFO(name);
		REQUIRE(got[name] == calls);
	}
	REQUIRE(got == expected); // and no other method of Calls (Calls.<init> never runs)
	REQUIRE(function(report, "Calls.fib(int)")["recursive"] == true);
	REQUIRE(function(report, "Calls$Counter.inc()")["open"] == 0);
	REQUIRE(path(report, "Calls.main(String[])")["calls"] == 1);
	REQUIRE(path(report, "Calls.main(String[]);Calls.fib(int)")["calls"] == 1);
	REQUIRE(path(report, "Calls.main(String[]);Calls$Counter.inc()")["calls"] == 100000);
	REQUIRE(path(report, "Calls.main(String[]);Calls$Util.twice(int)")["calls"] == 7);
	// JDK methods fire too (class loading, string concatenation bootstraps).
	REQUIRE(report["functions"].size() > 100);
}

TEST_CASE("java: a call-path table too small for the JDK loses no time: calls beyond it go to [other] frames, "
	  "counted, the report says so first", "[runtimes][scale]")
{
	// ~50,000 paths in 2,000 slots: nearly every call of the JDK's and of Calls finds none.
	auto [o, data, slack, _] = record_profile({"java", "-cp", java_classes(), "Calls"},
						  {.env = kNoJavaOptions, .options = {"--max-paths", "2000"}});
	INFO(o.err);
	REQUIRE(o.out == "fib=610 inc=100000 twice=42 hello=3 caught=2\n");
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile);
	REQUIRE(profile->anomalies.at("agg_full") > 0);
	REQUIRE(profile->anomalies.at("dropped_ns") == 0);
	uint64_t own = 0, other_calls = 0, calls = 0;
	for (const usdtprof::PathNode &n : profile->nodes) {
		const std::string &name = profile->functions[n.function];
		// Every path hangs under a caller that kept its own: none lost its parent.
		REQUIRE(name != "[parent dropped]");
		REQUIRE(n.self_ns <= n.total_ns);
		if (name == "[other]")
			other_calls += n.calls;
		else
			own++;
		calls += n.calls;
	}
	REQUIRE(own <= 2000);
	REQUIRE(other_calls >= profile->anomalies.at("agg_full"));
	// Calls' own methods are counted, in their own paths or in [other]: never more than
	// they ran, and what is missing from their names is within [other]'s calls.
	auto report = report_json(data);
	std::map<std::string, int> got = java_class_calls(report);
	uint64_t expected_total = 0, named = 0;
	for (const auto &[name, n] : java_expected_calls()) {
		INFO(name);
		REQUIRE(got[name] <= n);
		expected_total += uint64_t(n);
		named += uint64_t(got[name]);
	}
	REQUIRE(other_calls >= expected_total - named);
	REQUIRE(calls >= expected_total);
	Output text = run({e2e::usdtprof(), "report", data});
	REQUIRE(text.status == 0);
	std::string second = text.out.substr(text.out.find('\n') + 1);
	REQUIRE_THAT(second.substr(0, second.find('\n')), StartsWith("lost paths: ") && Contains("--max-paths"));
}

namespace {

// Every path's inclusive time is its exclusive time plus its callees' inclusive times, to the
// nanosecond, and every path hangs under a caller that kept its own (no "[parent dropped]"):
// then no time of the recording was lost between a frame and its caller.
void require_conserved(const usdtprof::Profile &profile)
{
	std::vector<uint64_t> callees(profile.nodes.size(), 0);
	for (const usdtprof::PathNode &n : profile.nodes)
		if (n.parent != usdtprof::kNoParent)
			callees.at(n.parent) += n.total_ns;
	size_t wrong = 0;
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		const usdtprof::PathNode &n = profile.nodes[i];
		const std::string &name = profile.functions[n.function];
		INFO(name << ": total " << n.total_ns << " self " << n.self_ns << " callees " << callees[i]);
		REQUIRE(name != "[parent dropped]");
		wrong += n.total_ns != n.self_ns + callees[i];
		if (n.total_ns != n.self_ns + callees[i])
			CHECK(n.total_ns == n.self_ns + callees[i]); // the first few, named
		if (wrong > 3)
			break;
	}
	REQUIRE(wrong == 0);
}

} // namespace

TEST_CASE("java: javac on HotSpot: ~120,000 call paths, no time dropped; in a small table the [other] frames keep "
	  "every nanosecond", "[runtimes][scale]")
{
	// `javac -version`: the JVM's start, the module system, javac's launcher and its option
	// handling: ~120,000 call paths, ~860,000 calls in ~25 s under the probes here. (Compiling a
	// 3-line class makes ~520,000 paths and 8.4M calls: minutes under the probes on this host.)
	SECTION("the default table holds them all")
	{
		auto [o, data, slack, _] = record_profile({"javac", "-version"}, {.env = kNoJavaOptions});
		REQUIRE_THAT(o.out, StartsWith("javac "));
		REQUIRE_THAT(o.err, Contains("JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"));
		auto profile = usdtprof::load_profile(data);
		REQUIRE(profile);
		INFO(profile->nodes.size() << " paths");
		REQUIRE(profile->nodes.size() > 50000);
		REQUIRE(profile->anomalies.at("agg_full") == 0);
		REQUIRE(profile->anomalies.at("dropped_ns") == 0);
		for (const usdtprof::PathNode &n : profile->nodes)
			REQUIRE(profile->functions[n.function] != "[other]");
		require_conserved(*profile);
		Output text = run({e2e::usdtprof(), "report", data});
		REQUIRE(text.status == 0);
		REQUIRE_THAT(text.out, !Contains("lost paths"));
	}
	SECTION("--max-paths 20000: the rest in [other] frames, counted, no time dropped, the report says so first")
	{
		auto [o, data, slack, _] =
			record_profile({"javac", "-version"}, {.env = kNoJavaOptions, .options = {"--max-paths", "20000"}});
		REQUIRE_THAT(o.out, StartsWith("javac "));
		auto profile = usdtprof::load_profile(data);
		REQUIRE(profile);
		REQUIRE(profile->anomalies.at("agg_full") > 0);
		REQUIRE(profile->anomalies.at("dropped_ns") == 0);
		uint64_t own = 0, other = 0, other_calls = 0;
		for (const usdtprof::PathNode &n : profile->nodes) {
			if (profile->functions[n.function] == "[other]") {
				other++;
				other_calls += n.calls;
				REQUIRE(n.self_ns == n.total_ns); // a leaf: what ran inside it is in it
			} else {
				own++;
			}
		}
		REQUIRE(own <= 20000);
		REQUIRE(other > 0);
		REQUIRE(other_calls >= profile->anomalies.at("agg_full"));
		require_conserved(*profile);
		Output text = run({e2e::usdtprof(), "report", data});
		REQUIRE(text.status == 0);
		std::string second = text.out.substr(text.out.find('\n') + 1);
		REQUIRE_THAT(second.substr(0, second.find('\n')),
			     StartsWith("lost paths: ") && Contains("% of the recorded time") && Contains("--max-paths"));
	}
}

TEST_CASE("java: overloads are apart by their parameters, bridge methods by their return type, lambdas named "
	  "without addresses",
	  "[runtimes]")
{
	const auto &report = java_calls_report();
	REQUIRE(function(report, "Calls.over(int)")["calls"] == 2);
	REQUIRE(function(report, "Calls.over(long)")["calls"] == 3);
	REQUIRE(function(report, "Calls.over(String)")["calls"] == 4);
	REQUIRE(function(report, "Calls.over(String)")["recursive"] == false);
	// Supplier<String>.get() through the interface: javac's bridge `Object get()` calls `String
	// get()`; named alike, they were one row of 12 calls, [recursive].
	const std::string bridge = "Calls$Name.get():Object", real = "Calls$Name.get():String";
	for (const std::string &name : {bridge, real}) {
		INFO(name);
		REQUIRE(function(report, name)["calls"] == 6);
		REQUIRE(function(report, name)["recursive"] == false);
	}
	// Each call of the bridge calls the method once (under main, or under thrower() while the
	// frames its exceptions left are open until main returns: "Dead frames" in docs/design.md).
	std::map<uint64_t, std::string> names;
	for (const auto &p : report["paths"])
		names[p["id"].get<uint64_t>()] = p["name"];
	int under_bridge = 0;
	for (const auto &p : report["paths"])
		if (p["name"] == real && !p["parent"].is_null() && names[p["parent"].get<uint64_t>()] == bridge)
			under_bridge += p["calls"].get<int>();
	REQUIRE(under_bridge == 6);
	// The lambda's hidden class, "Calls$$Lambda$N+0x<address>" in the JVM, named by the body it calls.
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		REQUIRE(name.find("+0x") == std::string::npos); // no hidden class keeps its address
		REQUIRE(!std::regex_search(name, std::regex(R"(^Calls\$\$Lambda\$\d)"))); // nor its number
	}
	REQUIRE(function(report, "Calls$$Lambda[lambda$main$0].applyAsInt(int)")["calls"] == 5);
	// Different methods of one name are no recursion.
	REQUIRE(function(report, "java.lang.String.<init>(byte[],byte)")["recursive"] == false);
}

namespace {

// Lambdas.java's lambdas (its header) named by the method each calls, and their calls; its two
// references to String::length (one name would make them one row) numbered in the order their
// thread made them, whichever thread made its lambdas first.
const std::map<std::string, int> kNamedLambdas = {{"Lambdas$$Lambda[lambda$a$0].applyAsInt(int)", 3},
	{"Lambdas$$Lambda[lambda$a$1].applyAsInt(int,int)", 4}, {"Lambdas$$Lambda[twice(int)].apply(Object):Object", 5},
	{"Lambdas$$Lambda[lambda$b$2].get():Object", 6}, {"Lambdas$$Lambda[lambda$b$3].apply(Object):Object", 7},
	{"Lambdas$$Lambda[java.lang.String.length()#1].applyAsInt(Object)", 8},
	{"Lambdas$$Lambda[java.lang.String.length()#2].applyAsInt(Object)", 9}};

// The calls of each function of a Lambdas.java hidden class (but constructors) in a report.
std::map<std::string, int> lambda_calls(const nlohmann::json &report)
{
	std::map<std::string, int> got;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		if (name.starts_with("Lambdas$$Lambda") && name.find(".<init>(") == std::string::npos)
			got[name] = f["calls"];
	}
	return got;
}

// Each Lambdas$$Lambda frame of a folded export, and the flat calls go tool pprof shows per
// such function: the outputs' own names.
std::set<std::string> folded_lambdas(const std::string &data)
{
	// Measured times: compensation can leave a frame and its callee no time, and no line.
	Output folded = run({e2e::usdtprof(), "export", data, "--format", "folded", "--raw"});
	REQUIRE(folded.status == 0);
	std::set<std::string> frames;
	std::regex frame(R"((?:^|;)(Lambdas\$\$Lambda[^;]*?)(?=;| \d+$))");
	std::istringstream lines(folded.out);
	for (std::string line; std::getline(lines, line);)
		for (std::sregex_iterator it(line.begin(), line.end(), frame), end; it != end; ++it)
			frames.insert((*it)[1]);
	return frames;
}

std::map<std::string, int> pprof_lambda_calls(const std::string &data)
{
	std::string pb = data + ".pb.gz";
	REQUIRE(run({e2e::usdtprof(), "export", data, "--format", "pprof", "-o", pb}).status == 0);
	Output top = run({"go", "tool", "pprof", "-sample_index=calls", "-top", "-nodefraction=0", "-nodecount=1000000", pb});
	INFO(top.err);
	REQUIRE(top.status == 0);
	std::map<std::string, int> got;
	std::regex row(R"(^ *(\d+) +\S+ +\S+ +\d+ +\S+ +(Lambdas\$\$Lambda.*)$)");
	std::istringstream lines(top.out);
	std::smatch m;
	for (std::string line; std::getline(lines, line);)
		if (std::regex_match(line, m, row) && m[2].str().find(".<init>(") == std::string::npos)
			got[m[2]] = std::stoi(m[1]);
	return got;
}

} // namespace

TEST_CASE("java: lambdas two threads made in either order are named alike in two runs, by the method each calls, "
	  "each its own row, in every output", "[runtimes]")
{
	// Attached once the lambdas are made (record -p): making them is ~80,000 call paths of the
	// JDK's class spinning, which diff took ~17 s of CPU to compare. They are called once the
	// recording has started.
	std::string dir = temp_dir();
	std::vector<std::string> data, made;
	std::vector<std::map<std::string, int>> calls;
	for (const std::string order : {"ab", "ba"}) {
		INFO("order " << order);
		std::vector<std::string> argv = kNoJavaOptions,
					 java = {"java", "-XX:+DTraceMethodProbes", "-cp", java_classes(), "Lambdas",
						 order, dir + "/go-" + order};
		argv.insert(argv.end(), java.begin(), java.end());
		Background jvm(argv);
		jvm.wait_for_line("ready");
		std::string profile = dir + "/" + order + ".data";
		Background rec({e2e::usdtprof(), "record", "-p", std::to_string(jvm.pid()), "-o", profile});
		rec.wait_for_line("recording", true);
		write_file(dir, "go-" + order, "");
		REQUIRE(jvm.wait() == 0);
		REQUIRE(rec.wait() == 0);
		std::string out = jvm.all_stdout();
		INFO(out);
		std::smatch m;
		REQUIRE(std::regex_search(out, m, std::regex(R"(\na=38 (.*) b=61 (.*)\n$)")));
		made.push_back(std::regex_replace(m[1].str() + " " + m[2].str(), std::regex("/0x[0-9a-f]+"), ""));
		auto report = report_json(profile);
		calls.push_back(lambda_calls(report));
		// Each one named by its body calls it, every call, below it (roots: the methods calling
		// them were entered before the attach).
		REQUIRE(path(report, "Lambdas$$Lambda[lambda$a$0].applyAsInt(int);Lambdas.lambda$a$0(int)")["calls"] == 3);
		REQUIRE(path(report, "Lambdas$$Lambda[twice(int)].apply(Object):Object;Lambdas.twice(int)")["calls"] == 5);
		REQUIRE(path(report, "Lambdas$$Lambda[lambda$b$3].apply(Object):Object;Lambdas.lambda$b$3(String):String")
				["calls"] == 7);
		// The folded export and pprof have the report's names and calls.
		std::set<std::string> frames;
		for (const auto &f : report["functions"])
			if (f["name"].get<std::string>().starts_with("Lambdas$$Lambda"))
				frames.insert(f["name"].get<std::string>());
		REQUIRE(folded_lambdas(profile) == frames);
		REQUIRE(pprof_lambda_calls(profile) == calls.back());
		Output text = run({e2e::usdtprof(), "report", profile});
		REQUIRE(text.status == 0);
		for (const auto &[name, n] : kNamedLambdas)
			REQUIRE_THAT(text.out, Contains(name));
		data.push_back(profile);
	}
	INFO("made: " << made[0] << " | " << made[1]);
	REQUIRE(made[0] != made[1]); // the JVM numbered them the other way round
	for (const auto &got : calls)
		REQUIRE(got == kNamedLambdas); // String::length's two: two rows, never one of 17
	// diff: each named lambda is one row in both runs, its calls alike.
	Output diff = run({e2e::usdtprof(), "diff", "--format", "json", data[0], data[1]});
	INFO(diff.err);
	REQUIRE(diff.status == 0);
	auto d = nlohmann::json::parse(diff.out);
	std::map<std::string, int> both;
	for (const auto &r : d["functions"])
		if (kNamedLambdas.count(r["name"])) {
			INFO(r.dump());
			REQUIRE(r["status"] == "changed");
			REQUIRE(r["base"]["calls"] == r["new"]["calls"]);
			both[r["name"]] = r["new"]["calls"];
		}
	REQUIRE(both == kNamedLambdas);
}

TEST_CASE("java: frames an exception leaves without method__return are repaired by their caller's return",
	  "[runtimes]")
{
	const auto &report = java_calls_report();
	// main calls thrower twice, catching each exception. HotSpot fires no method__return for a
	// compiled frame left by an exception, so the thrower frames stay on the shadow stack until
	// main's own return pops them (docs/design.md): the count stays exact, the repair is counted,
	// and what main did in between is charged under them (use -Xint for exact paths there).
	REQUIRE(function(report, "Calls.thrower()")["calls"] == 2);
	REQUIRE(report["anomalies"]["exit_mismatch"].get<uint64_t>() >= 1);
	REQUIRE(function(report, "Calls.main(String[])")["calls"] == 1);
	REQUIRE(function(report, "Calls.main(String[])")["open"] == 0);
}

TEST_CASE("java: exceptions through compiled frames leave the profile exact: calls, paths, times (Ex2)",
	  "[runtimes]")
{
	// C1-compiled frames an exception unwinds fire no method__return: before the stack-pointer
	// repair the dead parseInt frames piled up past 128 (parseInt "recursive", loop and main
	// twice, after 0 ns, depth_overflow). Only parseInt and loop compiled, at first call: quick.
	const int n = 500;
	auto [o, data, slack, report] = record_report({"java", "-Xcomp", "-XX:TieredStopAtLevel=1", "-XX:CompileCommand=quiet",
						       "-XX:CompileCommand=compileonly,java.lang.Integer::parseInt",
						       "-XX:CompileCommand=compileonly,Ex2::loop", "-cp", java_classes(),
						       "Ex2", std::to_string(n)},
						      {.env = kNoJavaOptions});
	std::smatch m;
	const std::regex line(R"(^bad (\d+) after_in_ns (\d+) after_out_ns (\d+)\n$)");
	INFO(o.out);
	REQUIRE(std::regex_match(o.out, m, line));
	const uint64_t bad = std::stoull(m[1]);
	const double inside = std::stod(m[2]), outside = std::stod(m[3]);
	REQUIRE(bad == n / 2);

	for (const char *anomaly : {"depth_overflow", "exit_no_frame"}) {
		INFO(anomaly);
		REQUIRE(report["anomalies"][anomaly] == 0);
	}
	// One repair per exception: the next parseInt from loop's frame (the last: loop's return).
	REQUIRE(report["anomalies"]["exit_mismatch"] == bad);
	for (const char *name : {"Ex2.main(String[])", "Ex2.loop(int)", "Ex2.after()"}) {
		INFO(name);
		auto f = function(report, name);
		REQUIRE(f["calls"] == 1);
		REQUIRE(f["open"] == 0);
		REQUIRE(f["recursive"] == false);
	}
	const std::string loop = "Ex2.main(String[]);Ex2.loop(int)";
	REQUIRE(path(report, loop)["calls"] == 1);
	REQUIRE(path(report, "Ex2.main(String[]);Ex2.after()")["calls"] == 1);
	// parseInt(String) from loop, each calling parseInt(String,int) once, never nested deeper.
	const std::string parse = loop + ";java.lang.Integer.parseInt(String)";
	REQUIRE(path(report, parse)["calls"] == n);
	REQUIRE(path(report, parse)["open"] == 0);
	REQUIRE(path(report, parse + ";java.lang.Integer.parseInt(String,int)")["calls"] == n);
	for (const char *name : {"java.lang.Integer.parseInt(String)", "java.lang.Integer.parseInt(String,int)"}) {
		INFO(name);
		REQUIRE(function(report, name)["recursive"] == false);
		REQUIRE(function(report, name)["open"] == 0);
	}
	// after's time, as Ex2 measured it inside and around the call.
	// Measured times (--raw): compensation takes out an estimate of the probes' cost, which
	// the program's own clock reads cannot bound.
	Output raw = run({e2e::usdtprof(), "report", "--raw", "--format", "json", data});
	INFO(raw.err);
	REQUIRE(raw.status == 0);
	double after_ns = function(nlohmann::json::parse(raw.out), "Ex2.after()")["total_ns"];
	INFO("after " << after_ns << " ns, measured " << inside << " inside, " << outside << " around");
	REQUIRE(after_ns >= inside);
	REQUIRE(after_ns <= outside);
}

TEST_CASE("java: a JVM without DTraceMethodProbes is refused in one line; list -p shows libjvm's probes",
	  "[runtimes]")
{
	std::vector<std::string> argv = kNoJavaOptions;
	for (const std::string &a : {std::string("java"), std::string("-cp"), java_classes(), std::string("Sleep")})
		argv.push_back(a);
	Background jvm(argv); // env execs java: its pid is the JVM's
	jvm.wait_for_line("ready"); // main runs: libjvm.so is mapped
	require_refused(jvm.pid(), "DTraceMethodProbes");

	// The probes are there all the same (no semaphores: listing them needs nothing from the JVM).
	auto lib = listed_binary(list_json(jvm.pid()), "/lib/server/libjvm.so");
	for (const char *name : {"method__entry", "method__return"}) {
		INFO(name);
		REQUIRE(listed_probe(lib, "hotspot", name)["presets"] == nlohmann::json{"java"});
	}
}

// ---------------------------------------------------------------------------------------------
// CPython 3.11

TEST_CASE("python3.11: calls per function equal cProfile's ncalls for the same script", "[runtimes]")
{
	const std::string script = runtime_file("calls.py");
	const std::string expected_out = "fib=610 inc=1000 twice=42 hello=3 lambda=5 caught=2 gen=6\n";
	auto [o, data, slack, _] = record_profile({kPython311, script});
	INFO(o.err);
	REQUIRE(o.out == expected_out);
	REQUIRE_THAT(o.err, Contains("gh-98894"));
	REQUIRE_THAT(o.err, Contains("python:line"));

	// cProfile's rows: "ncalls tottime percall cumtime percall filename:lineno(function)", ncalls
	// "total/primitive" for recursive functions, filenames stripped to their base name.
	Output prof = run({kPython311, "-m", "cProfile", script});
	INFO(prof.out << prof.err);
	REQUIRE(prof.status == 0);
	REQUIRE(prof.out.starts_with(expected_out));
	// cProfile names a function by its first line and co_name; the preset by co_qualname, which
	// Python's own code objects give for that line and name.
	Output names = run({kPython311, "-c",
			    "import sys, types\n"
			    "def walk(c):\n"
			    "    print(c.co_firstlineno, c.co_name, c.co_qualname)\n"
			    "    for k in c.co_consts:\n"
			    "        if isinstance(k, types.CodeType): walk(k)\n"
			    "walk(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'))\n",
			    script});
	INFO(names.err);
	REQUIRE(names.status == 0);
	std::map<std::string, std::string> qualified; // "line name" -> qualified name
	std::istringstream code_objects(names.out);
	for (std::string line, name, qualname; code_objects >> line >> name >> qualname;) {
		// A lambda or comprehension inside a function or class: named with its line (README).
		size_t dot = qualname.rfind('.');
		bool nested_anonymous = dot != std::string::npos && qualname[dot + 1] == '<' && qualname.ends_with('>');
		qualified[line + " " + name] = nested_anonymous ? qualname + ":" + line : qualname;
	}
	REQUIRE(qualified["27 inc"] == "Counter.inc");
	const std::regex row(R"(^\s*(\d+)(?:/\d+)?\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+calls\.py:(\d+)\((.+)\)$)");
	std::map<std::string, uint64_t> ncalls; // by qualified name, rows of one name summed
	std::istringstream lines(prof.out);
	for (std::string line; std::getline(lines, line);)
		if (std::smatch m; std::regex_match(line, m, row)) {
			std::string key = m[2].str() + " " + m[3].str();
			INFO(key);
			REQUIRE(qualified.count(key));
			ncalls[qualified[key]] += std::stoull(m[1]);
		}
	REQUIRE(ncalls["fib"] == 1973); // the table was parsed
	REQUIRE(ncalls["Util.twice"] == 7);
	REQUIRE(ncalls.size() >= 10);

	auto report = report_json(data);
	REQUIRE(report["anomalies"]["exit_mismatch"] == 0);
	REQUIRE(report["anomalies"]["exit_no_frame"] == 0);
	// The semaphore held up for the entries, never probed, slows every line the interpreter
	// runs: the report says that cost is not compensated.
	REQUIRE(report["calibration"]["held_semaphores"] == nlohmann::json::array({"python:line"}));
	Output text = run({e2e::usdtprof(), "report", data});
	REQUIRE(text.status == 0);
	REQUIRE_THAT(text.out, Contains("not compensated: what the semaphores usdtprof held up cost the runtime "
					"(python:line;"));
	// Counted alike: every generator resume of gen (4), the class bodies and <module> (1 each).
	for (const auto &[name, calls] : ncalls) {
		INFO(name);
		REQUIRE(function(report, "calls.py:" + name)["calls"] == calls);
	}
	REQUIRE(function(report, "calls.py:fib")["recursive"] == true);
}

// CPython interns names: K.meth and K.Inner.meth, A.__init__ and B.__init__ pass the same
// file and function name strings to the probes. Before, each pair was one function, and B's
// __init__ calling A's read as recursion.
TEST_CASE("python3.11: methods of one name are apart by their qualified names, none falsely recursive",
	  "[runtimes][names]")
{
	std::string dir = temp_dir();
	std::ofstream(dir + "/q.py") << "class K:\n"
					"    def meth(self):\n"
					"        return 1\n"
					"    class Inner:\n"
					"        def meth(self):\n"
					"            return K().meth()\n"
					"class A:\n"
					"    def __init__(self):\n"
					"        self.a = 1\n"
					"class B(A):\n"
					"    def __init__(self):\n"
					"        super().__init__()\n"
					"def main():\n"
					"    for _ in range(10):\n"
					"        K.Inner().meth()\n"
					"    for _ in range(3):\n"
					"        B()\n"
					"    inner = lambda: K().meth()\n"
					"    return inner()\n"
					"print(main())\n";
	auto [o, data, slack, report] = record_report({kPython311, dir + "/q.py"});
	REQUIRE(o.out == "1\n");
	require_no_anomalies(report);
	REQUIRE(function(report, "q.py:K.meth")["calls"] == 11);
	REQUIRE(function(report, "q.py:K.Inner.meth")["calls"] == 10);
	REQUIRE(function(report, "q.py:B.__init__")["calls"] == 3);
	REQUIRE(function(report, "q.py:A.__init__")["calls"] == 3);
	// A lambda inside a function is named with its line too (two in one function share a name).
	REQUIRE(function(report, "q.py:main.<locals>.<lambda>:18")["calls"] == 1);
	for (const char *name : {"q.py:K.meth", "q.py:K.Inner.meth", "q.py:A.__init__", "q.py:B.__init__"}) {
		INFO(name);
		REQUIRE(function(report, name)["recursive"] == false);
	}
	REQUIRE(path(report, "q.py:<module>;q.py:main;q.py:K.Inner.meth;q.py:K.meth")["calls"] == 10);
	REQUIRE(path(report, "q.py:<module>;q.py:main;q.py:B.__init__;q.py:A.__init__")["calls"] == 3);
}

// Two lambdas (comprehensions) of one function have one co_qualname, main.<locals>.<lambda>, each
// its own code object: one row with both's calls before. A module's top-level ones share one string.
TEST_CASE("python3.11: lambdas and comprehensions of one function are apart by their lines", "[runtimes][names]")
{
	std::string dir = temp_dir();
	std::ofstream(dir + "/lam.py") << "def main():\n"
					  "    xs = list(range(50))\n"
					  "    a = sorted(xs, key=lambda x: -x)\n"      // 3
					  "    b = list(map(lambda x: x * 2, xs))\n"    // 4
					  "    c = [x + 1 for x in xs]\n"               // 5
					  "    d = [x - 1 for x in c]\n"                // 6
					  "    return a[0] + b[-1] + c[-1] + d[0]\n"
					  "print(main())\n";
	auto [o, data, slack, report] = record_report({kPython311, dir + "/lam.py"});
	REQUIRE(o.out == "197\n"); // 49 + 98 + 50 + 0
	require_no_anomalies(report);
	REQUIRE(function(report, "lam.py:main.<locals>.<lambda>:3")["calls"] == 50);
	REQUIRE(function(report, "lam.py:main.<locals>.<lambda>:4")["calls"] == 50);
	REQUIRE(function(report, "lam.py:main.<locals>.<listcomp>:5")["calls"] == 1);
	REQUIRE(function(report, "lam.py:main.<locals>.<listcomp>:6")["calls"] == 1);
	REQUIRE(path(report, "lam.py:<module>;lam.py:main;lam.py:main.<locals>.<lambda>:4")["calls"] == 50);
	size_t script = 0;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		if (!name.starts_with("lam.py:"))
			continue;
		script++;
		REQUIRE(f["recursive"] == false);
		REQUIRE((name == "lam.py:<module>" || !name.ends_with(">"))); // each anonymous one has its line
	}
	REQUIRE(script == 6); // <module>, main, two lambdas, two list comprehensions
}

// At a module's top level CPython passes one interned "<lambda>" ("<listcomp>") as the qualified name
// of every lambda (comprehension): one row per file before, a lambda that calls another marked
// [recursive]. Their code objects' first lines (co_firstlineno) are in their ids and names.
TEST_CASE("python3.11: a module's top-level lambdas and comprehensions are apart by their first lines",
	  "[runtimes][names]")
{
	std::string dir = temp_dir();
	std::ofstream(dir + "/top.py") << "a = sorted(range(30), key=lambda x: -x)\n"      // 1
					  "b = list(map(lambda x: x * 2, range(20)))\n"    // 2
					  "c = [x + 1 for x in range(10)]\n"               // 3
					  "d = [x - 1 for x in c]\n"                       // 4
					  "inc = lambda y: y + 1\n"                        // 5
					  "outer = lambda x: inc(x)\n"                     // 6: one lambda calls another
					  "e = [outer(x) for x in range(4)]\n"             // 7
					  "print(a[0] + b[-1] + c[-1] + d[0] + e[-1])\n";
	auto [o, data, slack, report] = record_report({kPython311, dir + "/top.py"});
	REQUIRE(o.out == "81\n"); // 29 + 38 + 10 + 0 + 4
	require_no_anomalies(report);
	REQUIRE(function(report, "top.py:<lambda>:1")["calls"] == 30);
	REQUIRE(function(report, "top.py:<lambda>:2")["calls"] == 20);
	REQUIRE(function(report, "top.py:<listcomp>:3")["calls"] == 1);
	REQUIRE(function(report, "top.py:<listcomp>:4")["calls"] == 1);
	REQUIRE(function(report, "top.py:<lambda>:5")["calls"] == 4);
	REQUIRE(function(report, "top.py:<lambda>:6")["calls"] == 4);
	REQUIRE(function(report, "top.py:<listcomp>:7")["calls"] == 1);
	REQUIRE(path(report, "top.py:<module>;top.py:<listcomp>:7;top.py:<lambda>:6;top.py:<lambda>:5")["calls"] == 4);
	size_t script = 0;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		if (!name.starts_with("top.py:"))
			continue;
		script++;
		REQUIRE((name == "top.py:<module>" || !name.ends_with(">"))); // each anonymous one has its line
		REQUIRE(f["recursive"] == false);
	}
	REQUIRE(script == 8); // <module>, four lambdas, three list comprehensions
}

// Every package's module code is in an __init__.py: json's and re's were both __init__.py:<module>,
// and json's importing re read as recursion. Debian's json.tool, run as a user would.
TEST_CASE("python3.11: -m json.tool: each package's module code apart by its directory, none recursive",
	  "[runtimes][names]")
{
	std::string dir = temp_dir(), input = dir + "/in.json";
	std::ofstream(input) << "{\"a\": [1, {\"b\": null}]}";
	auto [o, data, slack, report] = record_report({kPython311, "-m", "json.tool", "--compact", input});
	INFO(o.err);
	REQUIRE(o.out == "{\"a\":[1,{\"b\":null}]}\n");
	REQUIRE(function(report, "json/__init__.py:<module>")["calls"] == 1);
	REQUIRE(function(report, "re/__init__.py:<module>")["calls"] == 1);
	REQUIRE(function(report, "json/tool.py:<module>")["calls"] == 1);
	size_t packages = 0;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		REQUIRE(!name.starts_with("__init__.py:"));
		if (name.ends_with("/__init__.py:<module>")) {
			packages++;
			REQUIRE(f["calls"] == 1); // each package's code runs once
			REQUIRE(f["recursive"] == false);
		}
	}
	REQUIRE(packages >= 2);
}

// http/client.py and xmlrpc/client.py were both client.py: xmlrpc.client's module code importing
// http.client's read as one function, recursive, and each module's functions merged by name. Each
// file keeps the directories of its packages, as its module name does (http.client).
TEST_CASE("python3.11: files of one base name in two packages are apart by their packages, none recursive",
	  "[runtimes][names]")
{
	auto [o, data, slack, report] =
		record_report({kPython311, "-c",
			       "import io, xmlrpc.client, http.client\n"
			       "for _ in range(5):\n"
			       "    http.client.parse_headers(io.BytesIO(b'A: b\\r\\n\\r\\n'))\n"
			       "for _ in range(7):\n"
			       "    xmlrpc.client.escape('a<b')\n"
			       "print(xmlrpc.client.escape('a<b'), http.client.parse_headers(io.BytesIO(b'A: b\\r\\n\\r\\n'))['A'])\n"});
	INFO(o.err);
	REQUIRE(o.out == "a&lt;b b\n");
	REQUIRE(report["anomalies"]["exit_mismatch"] == 0);
	REQUIRE(report["anomalies"]["exit_no_frame"] == 0);
	REQUIRE(function(report, "http/client.py:parse_headers")["calls"] == 6);
	REQUIRE(function(report, "xmlrpc/client.py:escape")["calls"] == 8);
	for (const char *module : {"http/client.py:<module>", "xmlrpc/client.py:<module>"}) {
		INFO(module);
		REQUIRE(function(report, module)["calls"] == 1);
		REQUIRE(function(report, module)["recursive"] == false);
	}
	// xmlrpc.client imports http.client: its module code runs inside xmlrpc's.
	bool nested = false;
	for (const auto &p : report["paths"]) {
		std::string stack;
		for (const auto &frame : p["stack"])
			stack += ";" + frame.get<std::string>();
		nested |= stack.find(";xmlrpc/client.py:<module>;") != std::string::npos &&
			  stack.ends_with(";http/client.py:<module>");
	}
	REQUIRE(nested);
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		INFO(name);
		REQUIRE(!name.starts_with("client.py:"));
	}
}

// exec() and eval() of a string compile it as file "<string>", name "<module>", first line 1: one
// identity for every such code object, and `python3.11 -c` code is one too. Before, -c code running
// exec()'d code, or a namedtuple's eval(), read as recursion. Such code is keyed and named by its
// caller too, at every depth; timeit's own exec()'d template ("<timeit-src>") likewise.
TEST_CASE("python3.11: nested exec()'d code is apart by its caller, none recursive (-c, namedtuple, -m timeit)",
	  "[runtimes][names]")
{
	const std::string c = "<string>:<module>", from_c = c + " from " + c, from_from_c = c + " from " + from_c;
	const std::string from_namedtuple = c + " from collections/__init__.py:namedtuple";
	{
		auto [o, data, slack, report] = record_report(
			{kPython311, "-c",
			 "import collections\n"
			 "inner = \"points = [collections.namedtuple('P', 'x y')(i, i) for i in range(4)]\"\n"
			 "for _ in range(3):\n"
			 "    exec('exec(inner)')\n"
			 "print(len(points), points[-1].x)\n"});
		INFO(o.err);
		REQUIRE(o.out == "4 3\n");
		require_no_anomalies(report);
		REQUIRE(function(report, c)["calls"] == 1);
		REQUIRE(function(report, from_c)["calls"] == 3);
		REQUIRE(function(report, from_from_c)["calls"] == 3);
		// Every namedtuple() evals its __new__ once, whoever calls it (12 here, more if imports do).
		uint64_t namedtuples = function(report, "collections/__init__.py:namedtuple")["calls"];
		REQUIRE(namedtuples >= 12);
		REQUIRE(function(report, from_namedtuple)["calls"] == namedtuples);
		REQUIRE(path(report, c + ";" + from_c + ";" + from_from_c + ";<string>:<listcomp>:1;" +
					     "collections/__init__.py:namedtuple;" + from_namedtuple)["calls"] == 12);
		for (const auto &f : report["functions"]) {
			std::string name = f["name"];
			INFO(name);
			if (name.starts_with("<string>:"))
				REQUIRE(f["recursive"] == false);
		}
	}
	{
		// Debian's timeit execs its template once (from Timer.__init__); the statement runs 50 times
		// inside its inner(), each an exec() of code that execs more.
		auto [o, data, slack, report] =
			record_report({kPython311, "-m", "timeit", "-n", "50", "-r", "1", "exec('exec(\"x = 1\")')"});
		INFO(o.err);
		REQUIRE_THAT(o.out, Catch::Matchers::StartsWith("50 loops, best of 1: "));
		require_no_anomalies(report);
		REQUIRE(function(report, "<timeit-src>:<module> from timeit.py:Timer.__init__")["calls"] == 1);
		REQUIRE(function(report, "<timeit-src>:inner")["calls"] == 1);
		REQUIRE(function(report, c + " from <timeit-src>:inner")["calls"] == 50);
		REQUIRE(function(report, c + " from " + c + " from <timeit-src>:inner")["calls"] == 50);
		for (const auto &f : report["functions"]) {
			std::string name = f["name"];
			INFO(name);
			if (name.starts_with("<string>:") || name.starts_with("<timeit-src>:"))
				REQUIRE(f["recursive"] == false);
		}
	}
}

// dataclasses and namedtuple make each class's methods by exec()/eval() of text: every dataclass's
// __init__ is code "<string>:__create_fn__.<locals>.__init__" and every namedtuple's __new__ is a
// "<lambda>"; they rename the function objects (Inner.__init__, P.__new__). Before, one row for all,
// and a dataclass built in another's __post_init__ read as recursion. The function object's name
// keeps them apart. The calibration reads such a derived identity as the target's hits do (it read
// objects that were not there, and over-compensated small functions to 0). Code objects freed and
// made again (exec() in a loop) keep their own names.
TEST_CASE("python3.11: dataclass and namedtuple methods made from text are apart by their class, none recursive",
	  "[runtimes][names]")
{
	std::string script = write_file(temp_dir(), "dc.py",
					"import collections\n"
					"from dataclasses import dataclass\n"
					"@dataclass\n"
					"class Inner:\n"
					"    x: int\n"
					"@dataclass\n"
					"class Outer:\n"
					"    y: int\n"
					"    def __post_init__(self):\n"
					"        self.inner = Inner(self.y)\n"
					"P = collections.namedtuple('P', 'a b')\n"
					"Q = collections.namedtuple('Q', 'c d')\n"
					"def main():\n"
					"    for i in range(500):\n"
					"        Outer(i)\n"
					"    for i in range(300):\n"
					"        P(i, i)\n"
					"        Q(i, i)\n"
					"    print(Outer(7).inner.x, Q(1, 2).d)\n"
					"def fresh():\n"
					"    for i in range(200):\n"
					"        ns = {}\n"
					"        exec(f'def f{i}(): return {i}', ns)\n"
					"        ns[f'f{i}']()\n"
					"main()\n"
					"fresh()\n");
	auto [o, data, slack, report] = record_report({kPython311, script});
	INFO(o.err);
	REQUIRE(o.out == "7 2\n");
	require_no_anomalies(report);
	for (auto [name, calls] : std::vector<std::pair<std::string, int>>{
		     {"<string>:Inner.__init__", 501}, {"<string>:Outer.__init__", 501}, {"<string>:P.__new__", 300},
		     {"<string>:Q.__new__", 301}}) {
		INFO(name);
		REQUIRE(function(report, name)["calls"] == calls);
		REQUIRE(function(report, name)["recursive"] == false);
	}
	REQUIRE(path(report, "dc.py:<module>;dc.py:main;<string>:Outer.__init__;dc.py:Outer.__post_init__;"
			     "<string>:Inner.__init__")["calls"] == 501);
	for (const auto &f : report["functions"])
		REQUIRE(f["name"].get<std::string>().find("__create_fn__.<locals>") == std::string::npos);
	// Each exec() makes a code object, a function and a name where the last ones were freed: a
	// thread's ids remembered by code object (and function, and name) never give one the other's.
	for (int i = 0; i < 200; i++) {
		INFO(i);
		REQUIRE(path(report, "dc.py:<module>;dc.py:fresh;<string>:f" + std::to_string(i))["calls"] == 1);
	}
	bool derived_kind = false;
	for (const auto &k : report["calibration"]["kinds"])
		derived_kind |= k["kind"].get<std::string>().starts_with("value derived");
	REQUIRE(derived_kind);
}

// python:gc__start(generation) / gc__done(objects collected): the exit's argument is no identity.
// Before, the exit was named by its own arg0 (here 100 or more), never matched its frame, and every
// later call nested under an open gc__start(2).
TEST_CASE("python3.11: --pair gc__start/gc__done:arg0:int: each exit closes its own collection", "[runtimes][pairs]")
{
	std::string dir = temp_dir();
	std::ofstream(dir + "/gcpair.py") << "import gc\n"
					     "class Node:\n"
					     "    def __init__(self):\n"
					     "        self.me = self\n"
					     "def collect():\n"
					     "    for _ in range(100):\n"
					     "        Node()\n"
					     "    return gc.collect()\n"
					     "def after():\n"
					     "    return 1\n"
					     "def load():\n"
					     "    import colorsys\n"
					     "def main():\n"
					     "    gc.disable()\n"
					     "    n = sum(collect() for _ in range(5))\n"
					     "    load()\n"
					     "    after()\n"
					     "    print('collected', n >= 500)\n"
					     "main()\n";
	auto [o, data, slack, report] =
		record_report({kPython311, dir + "/gcpair.py"}, {.options = {"--pair", "python:gc__start/gc__done:arg0:int"}});
	INFO(o.err);
	REQUIRE(o.out == "collected True\n");
	REQUIRE_THAT(o.err, !Contains("did not nest"));
	auto gc = path(report, "gcpair.py:<module>;gcpair.py:main;gcpair.py:main.<locals>.<genexpr>:15;gcpair.py:collect;gc__start(2)");
	INFO(report["paths"].dump());
	REQUIRE(gc.is_object());
	REQUIRE(gc["calls"] == 5);
	REQUIRE(gc["open"] == 0);
	// The calls after the collections are no callees of one.
	REQUIRE(path(report, "gcpair.py:<module>;gcpair.py:main;gcpair.py:after")["calls"] == 1);
	REQUIRE(report["anomalies"]["exit_mismatch"] == 0);
	REQUIRE(report["anomalies"]["exit_no_frame"] == 0);

	// A pair that does not nest with the calls (an import's start paired with a collection's end,
	// which never comes inside load()) is said to.
	Output bad = record_profile({kPython311, dir + "/gcpair.py"},
				    {.options = {"--pair", "python:import__find__load__start/gc__done:=loading"}})
			     .output;
	INFO(bad.err);
	REQUIRE_THAT(bad.err, Contains("warning: --pair python:import__find__load__start/gc__done:=loading:"));
	REQUIRE_THAT(bad.err, Contains("it is not a function"));
}

// --span: collections timed beside the call tree, against what the script measures itself:
// gc.callbacks run just before gc__start and just after gc__done, so each span lies within its
// callbacks' interval, and the callbacks add microseconds to collections of milliseconds.
// Attached after start-up (-p) and stopped before the exit, so that the interpreter's own
// collections then are not counted.
TEST_CASE("python3.11: --span gc__start/gc__done: every collection counted and timed, off the call stack",
	  "[runtimes][spans]")
{
	std::string dir = temp_dir();
	Background py({kPython311, runtime_file("gcspan.py"), "100000", "1"});
	py.wait_for_line("ready");
	std::string data = dir + "/gc.data";
	Background rec({e2e::usdtprof(), "record", "-p", std::to_string(py.pid()), "-o", data, "--span",
			"python:gc__start/gc__done"});
	rec.wait_for_line("recording", true);
	REQUIRE(kill(py.pid(), SIGUSR1) == 0);
	std::istringstream said(py.wait_for_line(" "));
	// Stopped before the interpreter's collections at its exit.
	REQUIRE(kill(rec.pid(), SIGINT) == 0);
	REQUIRE(rec.wait() == 0);
	REQUIRE(kill(py.pid(), SIGUSR1) == 0);
	REQUIRE(py.wait() == 0);
	uint64_t count = 0, total_ns = 0;
	REQUIRE(said >> count >> total_ns);
	REQUIRE(count == 8);
	auto report = report_json(data);
	INFO(report["spans"].dump());
	REQUIRE(report["spans"].size() == 1);
	const auto &gc = report["spans"][0];
	REQUIRE(gc["name"] == "python:gc__start/gc__done");
	REQUIRE(gc["count"] == count);
	REQUIRE(gc["open"] == 0);
	REQUIRE(gc["restarted"] == 0);
	REQUIRE(gc["unstarted"] == 0);
	REQUIRE(gc["total_ns"].get<uint64_t>() <= total_ns);
	REQUIRE(gc["total_ns"].get<uint64_t>() >= total_ns * 7 / 10);
	REQUIRE(gc["min_ns"].get<uint64_t>() <= gc["p50_ns"].get<uint64_t>());
	REQUIRE(gc["p50_ns"].get<uint64_t>() <= gc["max_ns"].get<uint64_t>());
	uint64_t in_histogram = 0;
	for (const auto &b : gc["histogram"])
		in_histogram += b["count"].get<uint64_t>();
	REQUIRE(in_histogram == count);
	// Nothing of it on the call stack: the calls around the collections are where they are (roots:
	// main, entered before the attach, has not returned when the recording stops).
	REQUIRE(path(report, "gcspan.py:collect")["calls"] == 8);
	REQUIRE(path(report, "gcspan.py:collect;gcspan.py:timed")["calls"] == 16);
	REQUIRE(path(report, "gcspan.py:after")["calls"] == 1);
	for (const auto &f : report["functions"])
		REQUIRE_THAT(f["name"].get<std::string>(), !Contains("gc__"));
	REQUIRE(report["anomalies"]["exit_mismatch"] == 0);

	// The text report has the span's row.
	auto text = run({e2e::usdtprof(), "report", data});
	INFO(text.out);
	REQUIRE(std::regex_search(text.out, std::regex("\\n  python:gc__start/gc__done +8 ")));

	// pprof carries it as a comment, as go tool pprof -comments prints it, in no sample.
	std::string pb = dir + "/gc.pb.gz";
	REQUIRE(run({e2e::usdtprof(), "export", data, "--format", "pprof", "-o", pb}).status == 0);
	Output comments = run({"go", "tool", "pprof", "-comments", pb});
	INFO(comments.out << comments.err);
	REQUIRE(comments.status == 0);
	REQUIRE_THAT(comments.out, Contains("span python:gc__start/gc__done: 8 ended, total_ns " +
					    std::to_string(gc["total_ns"].get<uint64_t>()) + ", min_ns " +
					    std::to_string(gc["min_ns"].get<uint64_t>()) + ", p50_ns " +
					    std::to_string(gc["p50_ns"].get<uint64_t>())));
	REQUIRE_THAT(comments.out, Contains("; 0 open, 0 restarted, 0 unstarted (wall-clock, as measured; in no sample)"));
	Output top = run({"go", "tool", "pprof", "-top", pb});
	REQUIRE(top.status == 0);
	REQUIRE(top.out.find("flat  flat%") != std::string::npos);
	REQUIRE_THAT(top.out.substr(top.out.find("flat  flat%")), !Contains("gc__")); // no row
}

TEST_CASE("python3.11: record -p mid-call: the frames running at attach nest as their exits show, within the recording",
	  "[runtimes]")
{
	Background py({kPython311, runtime_file("attach.py")});
	py.wait_for_line("ready");
	std::string data = temp_dir() + "/attach.data";
	Background rec({e2e::usdtprof(), "record", "-p", std::to_string(py.pid()), "-o", data});
	rec.wait_for_line("recording", true);
	REQUIRE(kill(py.pid(), SIGUSR1) == 0);
	REQUIRE(py.wait() == 0);
	REQUIRE(rec.wait() == 0);

	auto report = report_json(data);
	require_no_anomalies(report); // an ordinary attach: frames running at it are no anomaly
	// leaf returns first, <module> last: nested so, one call each.
	std::string stack = "[running at attach]";
	for (const char *name : {"<module>", "top", "mid", "leaf"}) {
		stack += std::string(";attach.py:") + name;
		INFO(stack);
		REQUIRE(path(report, stack)["calls"] == 1);
	}
	REQUIRE(function(report, "attach.py:after")["calls"] == 3);
	// One thread: its roots' totals (its recorded time) within the recording.
	double roots = 0;
	for (const auto &p : report["paths"])
		if (p["stack"].size() == 1)
			roots += p["total_ns"].get<double>();
	INFO("roots " << roots << " ns, self " << report["total_self_ns"] << " ns, duration " << report["duration_ns"]);
	REQUIRE(roots <= report["duration_ns"].get<double>());
	REQUIRE(report["total_self_ns"].get<double>() <= report["duration_ns"].get<double>());
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL 15

namespace {

// The seven statements of pgbench's builtin TPC-B script (-M simple), as the preset names them.
const char *const kPgbenchStatements[] = {"BEGIN", "END",
	"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
	"SELECT abalance FROM pgbench_accounts WHERE aid = $1",
	"UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
	"UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
	"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"};

// A throwaway server of tests/runtimes/pg.sh, stopped (and its directory removed) on scope exit.
struct PgServer {
	std::map<std::string, std::string> vars; // PG_DIR, PGHOST, PGPORT ... as pg.sh start exports them

	explicit PgServer(const std::string &options)
	{
		Output o = run({"bash", runtime_file("pg.sh"), "start", options});
		std::istringstream lines(o.out);
		for (std::string line; std::getline(lines, line);)
			if (size_t eq = line.find('='); line.starts_with("export ") && eq != std::string::npos)
				vars[line.substr(7, eq - 7)] = line.substr(eq + 1);
		INFO(o.out << o.err);
		REQUIRE(o.status == 0);
		REQUIRE(vars.count("PG_DIR"));
	}
	~PgServer()
	{
		if (vars.count("PG_DIR"))
			run({"bash", runtime_file("pg.sh"), "stop", vars["PG_DIR"]});
	}
	PgServer(const PgServer &) = delete;
	PgServer &operator=(const PgServer &) = delete;

	// A client command with this server's connection settings.
	Output client(const std::vector<std::string> &command) const
	{
		std::vector<std::string> argv = {"env", "-u", "PGOPTIONS", "-u", "PGSERVICE"};
		for (const char *v : {"PGHOST", "PGPORT", "PGUSER", "PGDATABASE"})
			argv.push_back(std::string(v) + "=" + vars.at(v));
		argv.insert(argv.end(), command.begin(), command.end());
		Output o = run(argv);
		INFO(o.out << o.err);
		REQUIRE(o.status == 0);
		return o;
	}

	// The backends that logged a connection (log_connections=on) from the log's byte offset from on,
	// in order: log_line_prefix's default "%m [%p] " gives their pids.
	std::vector<int> backends_since(size_t offset) const
	{
		std::ifstream in(vars.at("PG_DIR") + "/server.log");
		in.seekg(std::streamoff(offset));
		const std::regex authorized(R"(\[(\d+)\] LOG:  connection authorized: )");
		std::vector<int> pids;
		for (std::string line; std::getline(in, line);)
			if (std::smatch m; std::regex_search(line, m, authorized))
				pids.push_back(std::stoi(m[1]));
		return pids;
	}
	size_t log_size() const { return std::filesystem::file_size(vars.at("PG_DIR") + "/server.log"); }
	// The one backend that logged a connection from the log's byte offset on, after stopping the
	// recording that watched it (it wrote its profile).
	int one_backend_recorded(size_t offset, Background &recording) const
	{
		std::vector<int> backends = backends_since(offset);
		REQUIRE(backends.size() == 1);
		REQUIRE(kill(recording.pid(), SIGINT) == 0);
		int status = recording.wait();
		INFO(recording.rest_of_stderr());
		REQUIRE(status == 0);
		return backends[0];
	}
};

struct PgbenchRecording {
	std::string data;            // the profile
	nlohmann::json per_process;  // its `report --per-process --format json`
	int setup_backend = 0;       // pgbench's short-lived first connection (table checks)
	int client_backend = 0;      // the one that ran the transactions
};

// `record --binary postgres` around `pgbench -n -t 200 -c 1` against a server of our own, recorded
// once for the tests below. Other servers of the same binary may run on this machine: their
// backends are recorded too, under their own roots.
const PgbenchRecording &pgbench_recording()
{
	static std::optional<PgbenchRecording> recording;
	if (!recording) {
		PgbenchRecording r;
		PgServer pg("-c log_connections=on");
		pg.client({"pgbench", "-i", "-q"});
		r.data = temp_dir() + "/profile.data";
		Background rec({e2e::usdtprof(), "record", "--binary", kPostgres, "-o", r.data});
		rec.wait_for_line("recording", true);
		size_t log_from = pg.log_size();
		pg.client({"pgbench", "-n", "-t", "200", "-c", "1"});
		std::vector<int> backends = pg.backends_since(log_from);
		REQUIRE(kill(rec.pid(), SIGINT) == 0);
		int status = rec.wait();
		INFO(rec.rest_of_stderr());
		REQUIRE(status == 0);
		INFO("backends that connected during the run: " << backends.size());
		REQUIRE(backends.size() == 2); // pgbench's setup connection, then its client
		r.setup_backend = backends[0];
		r.client_backend = backends[1];
		Output o = run({e2e::usdtprof(), "report", "--per-process", "--format", "json", r.data});
		INFO(o.err);
		REQUIRE(o.status == 0);
		r.per_process = e2e::parse_report(o.out);
		recording = std::move(r);
	}
	return *recording;
}

std::string pg_root(int pid)
{
	return "postgres (pid " + std::to_string(pid) + ")";
}

} // namespace

TEST_CASE("postgres: record --binary counts every statement shape of pgbench exactly, with its phases inside",
	  "[runtimes]")
{
	const auto &r = pgbench_recording();
	const std::string root = pg_root(r.client_backend);
	REQUIRE(path(r.per_process, root) != nullptr);
	for (const std::string statement : kPgbenchStatements) {
		INFO(statement);
		const std::string at = root + ";" + statement;
		auto p = path(r.per_process, at);
		REQUIRE(p != nullptr);
		REQUIRE(p["calls"] == 200);
		REQUIRE(p["open"] == 0);
		for (const char *phase : {"parse", "rewrite", "execute"}) {
			INFO(phase);
			auto ph = path(r.per_process, at + ";" + phase);
			REQUIRE(ph != nullptr);
			REQUIRE(ph["calls"] == 200);
		}
		// Utility statements (BEGIN, END) are not planned.
		auto plan = path(r.per_process, at + ";plan");
		if (statement == "BEGIN" || statement == "END") {
			REQUIRE(plan == nullptr);
		} else {
			REQUIRE(plan != nullptr);
			REQUIRE(plan["calls"] == 200);
		}
	}
	// No other statement ran on that connection (outside any statement there are only the catalog
	// reads of the connection's start, "buffer read" frames).
	const std::set<std::string> frames = {"parse", "rewrite", "plan", "execute", "buffer read", "lock wait",
					      "lwlock wait", "sort (input to end)"};
	std::set<std::string> statements;
	for (const auto &p : r.per_process["paths"])
		if (p["stack"].size() == 2 && p["stack"][0] == root && !frames.count(p["stack"][1]))
			statements.insert(p["stack"][1].get<std::string>());
	REQUIRE(statements == std::set<std::string>(std::begin(kPgbenchStatements), std::end(kPgbenchStatements)));
}

TEST_CASE("postgres: report --per-process names each backend's root \"postgres (pid N)\", short-lived ones too",
	  "[runtimes]")
{
	const auto &r = pgbench_recording();
	const std::set<int> ours = {r.setup_backend, r.client_backend};
	// Every root of our backends carries the name the kernel kept, even for the setup connection,
	// gone long before the recording stopped.
	std::set<int> rooted;
	const std::regex root_name(R"(^(?:.* )?\(pid (\d+)\)$)");
	for (const auto &p : r.per_process["paths"]) {
		if (p["stack"].size() != 1)
			continue;
		std::string name = p["stack"][0];
		std::smatch m;
		INFO(name);
		REQUIRE(std::regex_match(name, m, root_name));
		int pid = std::stoi(m[1]);
		if (ours.count(pid)) {
			REQUIRE(name == pg_root(pid));
			rooted.insert(pid);
		}
	}
	REQUIRE(rooted == ours);

	auto profile = usdtprof::load_profile(r.data);
	INFO((profile ? "" : profile.error().message));
	REQUIRE(profile);
	for (int pid : ours) {
		INFO("pid " << pid);
		auto it = std::find_if(profile->processes.begin(), profile->processes.end(),
				       [&](const usdtprof::ProfileProcess &p) { return p.pid == pid; });
		REQUIRE(it != profile->processes.end());
		REQUIRE(it->comm == "postgres");
	}
}

// PostgreSQL's parallel workers run part of their leader's statement but fire no statement probe
// of their own: their frames (buffer reads of their share of the scan, their lock waits) went to
// the root of their process, beside statements, outside any. Each worker's frames now hang under
// "[parallel worker for pid LEADER]", from its title ("postgres: parallel worker for PID N"),
// kept by the kernel for workers gone before usdtprof reads /proc, and that frame under the
// statement its leader was running when the worker started.
TEST_CASE("postgres: a parallel query's workers are under their leader's statement, labelled, none of their frames a root",
	  "[runtimes][pg-parallel]")
{
	PgServer pg("-c log_connections=on -c parallel_setup_cost=0 -c parallel_tuple_cost=0 "
		    "-c min_parallel_table_scan_size=0 -c max_parallel_workers_per_gather=2");
	pg.client({"psql", "-q", "-c", "CREATE TABLE t AS SELECT g AS a, g % 7 AS b FROM generate_series(1, 200000) g",
		   "-c", "VACUUM ANALYZE t"});
	std::string data = temp_dir() + "/profile.data";
	Background rec({e2e::usdtprof(), "record", "--binary", kPostgres, "-o", data});
	rec.wait_for_line("recording", true);
	size_t log_from = pg.log_size();
	Output q = pg.client({"psql", "-At", "-c", "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT b, count(*) FROM t GROUP BY b"});
	std::smatch m;
	const std::regex launched_line(R"(Workers Launched: (\d+))");
	REQUIRE(std::regex_search(q.out, m, launched_line));
	const int launched = std::stoi(m[1]);
	REQUIRE(launched >= 1);
	const int leader = pg.one_backend_recorded(log_from, rec);

	const std::string label = "[parallel worker for pid " + std::to_string(leader) + "]";
	auto profile = usdtprof::load_profile(data);
	REQUIRE(profile);
	auto name_of = [&](uint32_t node) { return profile->functions.at(profile->nodes.at(node).function); };
	// One labelled frame per worker, a call each, each a child of the leader's one statement.
	std::set<int32_t> workers;
	for (uint32_t i = 0; i < profile->nodes.size(); i++) {
		const usdtprof::PathNode &n = profile->nodes[i];
		if (name_of(i) != label)
			continue;
		INFO("worker " << n.pid);
		workers.insert(n.pid);
		REQUIRE(n.calls == 1);
		REQUIRE(n.total_ns > 0);
		REQUIRE(n.parent != usdtprof::kNoParent);
		const usdtprof::PathNode &statement = profile->nodes[n.parent];
		REQUIRE(statement.pid == leader);
		REQUIRE(statement.parent == usdtprof::kNoParent);
		REQUIRE(statement.calls == 1);
		REQUIRE_THAT(name_of(n.parent), StartsWith("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT b, count(*)"));
	}
	REQUIRE(int(workers.size()) == launched);
	REQUIRE(workers.count(leader) == 0);
	// Every frame of a worker is below its label; it read the table's buffers there (inside its
	// partial sort when the plan has one).
	for (int32_t worker : workers) {
		INFO("worker " << worker);
		uint64_t buffer_reads = 0;
		for (uint32_t i = 0; i < profile->nodes.size(); i++) {
			const usdtprof::PathNode &n = profile->nodes[i];
			if (n.pid != worker)
				continue;
			uint32_t top = i;
			while (profile->nodes[top].parent != usdtprof::kNoParent &&
			       profile->nodes[profile->nodes[top].parent].pid == worker)
				top = profile->nodes[top].parent;
			REQUIRE(name_of(top) == label);
			if (name_of(i) == "buffer read")
				buffer_reads += n.calls;
		}
		REQUIRE(buffer_reads > 0);
	}
	// Merged, the workers are one labelled child of the statement, a call each, and no root.
	auto merged = report_json(data);
	std::string statement_label;
	for (const auto &p : merged["paths"])
		if (p["stack"].back() == label) {
			REQUIRE(statement_label.empty());
			REQUIRE(p["stack"].size() == 2);
			REQUIRE(p["calls"] == launched);
			statement_label = p["stack"][0].get<std::string>() + ";" + label;
		}
	REQUIRE(!statement_label.empty());
	REQUIRE(path(merged, statement_label + ";buffer read")["calls"].get<uint64_t>() > 0);
	// The profile keeps each worker's title as its command line.
	int titled = 0;
	for (const auto &p : profile->processes)
		titled += !p.cmdline.empty() &&
			  p.cmdline.front().find("parallel worker for PID " + std::to_string(leader)) != std::string::npos;
	REQUIRE(titled == launched);
}

// PostgreSQL's transaction probes do not nest with its statements' (a block's transaction starts
// inside its BEGIN and ends inside its COMMIT; a statement's own transaction starts inside it):
// as a pair they would be popped by the statements' exits; as a span they are timed beside the
// call tree. One psql session runs three blocks committed, two rolled back and one that sleeps
// 200 ms in the server; its backend also runs one transaction of its own at its start (it reads
// the catalogs while it sets up the session: InitPostgres).
TEST_CASE("postgres: --span transaction__start/commit/abort counts each transaction of a session, off the call stack",
	  "[runtimes][pg-span][spans]")
{
	PgServer pg("-c log_connections=on");
	const std::string spec = "postgresql:transaction__start/transaction__commit/transaction__abort";
	std::string data = temp_dir() + "/profile.data";
	Background rec({e2e::usdtprof(), "record", "--binary", kPostgres, "-o", data, "--span", spec});
	rec.wait_for_line("recording", true);
	size_t log_from = pg.log_size();
	auto started = std::chrono::steady_clock::now();
	std::vector<std::string> psql = {"psql", "-X", "-q"};
	for (const char *block : {"BEGIN; SELECT 1; COMMIT", "BEGIN; SELECT 2; COMMIT", "BEGIN; SELECT 3; COMMIT",
				  "BEGIN; SELECT 4; ROLLBACK", "BEGIN; SELECT 5; ROLLBACK",
				  "BEGIN; SELECT pg_sleep(0.2); COMMIT"})
		psql.insert(psql.end(), {"-c", block});
	pg.client(psql);
	const uint64_t session_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
						     std::chrono::steady_clock::now() - started)
						     .count());
	const int backend = pg.one_backend_recorded(log_from, rec);

	Output o = run({e2e::usdtprof(), "report", "--per-process", "--format", "json", data});
	INFO(o.err);
	REQUIRE(o.status == 0);
	auto per_process = e2e::parse_report(o.out);
	INFO(per_process["spans"].dump());
	nlohmann::json session;
	for (const auto &sp : per_process["spans"])
		if (sp["pid"] == backend)
			session = sp;
	REQUIRE(session.is_object());
	REQUIRE(session["name"] == spec);
	REQUIRE(session["count"] == 7);
	REQUIRE(session["open"] == 0);
	REQUIRE(session["restarted"] == 0);
	REQUIRE(session["unstarted"] == 0);
	// The sleeping block is the longest; all of them lie within the client's session.
	REQUIRE(session["max_ns"].get<uint64_t>() >= 200'000'000);
	REQUIRE(session["total_ns"].get<uint64_t>() >= 200'000'000);
	REQUIRE(session["total_ns"].get<uint64_t>() <= session_ns);
	REQUIRE(session["p50_ns"].get<uint64_t>() < 200'000'000);
	uint64_t in_histogram = 0;
	for (const auto &b : session["histogram"])
		in_histogram += b["count"].get<uint64_t>();
	REQUIRE(in_histogram == 7);
	// The statements are the call tree's, whole: each block's statements are roots, none under a
	// transaction frame (there is none), and none repaired as a mismatch.
	auto merged = report_json(data);
	uint64_t sleeping_ns = 0;
	for (const auto &f : merged["functions"]) {
		std::string name = f["name"];
		REQUIRE_THAT(name, !Contains("transaction"));
		if (name.find("pg_sleep(") != std::string::npos)
			sleeping_ns += f["total_ns"].get<uint64_t>();
	}
	REQUIRE(sleeping_ns >= 200'000'000);
	REQUIRE(merged["anomalies"]["exit_mismatch"] == 0);
}

namespace {

// A psql session of pg's server that reads its statements from a FIFO: it
// connects at once, then runs what send() writes, and exits at finish().
struct FedPsql {
	std::string fifo;
	std::optional<Background> psql;
	int fd = -1;

	FedPsql(const PgServer &pg, const std::string &path) : fifo(path)
	{
		REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
		std::string env;
		for (const char *v : {"PGHOST", "PGPORT", "PGUSER", "PGDATABASE"})
			env += std::string(" ") + v + "='" + pg.vars.at(v) + "'";
		psql.emplace(std::vector<std::string>{
			"sh", "-c", "exec env -u PGOPTIONS -u PGSERVICE" + env + " psql -X -q -v ON_ERROR_STOP=1 < \"$0\"",
			fifo});
		// The shell opens the FIFO to read, then execs psql: a writer may open it once it has.
		for (int i = 0; i < 600 && fd < 0; i++)
			if ((fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
				std::this_thread::sleep_for(std::chrono::milliseconds(50));
		REQUIRE(fd >= 0);
		REQUIRE(fcntl(fd, F_SETFL, 0) == 0);
	}
	~FedPsql()
	{
		if (fd >= 0)
			close(fd);
	}
	void send(const std::string &statements)
	{
		REQUIRE(write(fd, statements.data(), statements.size()) == ssize_t(statements.size()));
	}
	// End of its input: psql exits, and its backend.
	void finish()
	{
		close(fd);
		fd = -1;
		REQUIRE(psql->wait() == 0);
	}
};

} // namespace

TEST_CASE("postgres: monitor --all finds the backends its postmaster forks, each one's statements counted exactly "
	  "under its pid in the intervals and on /metrics (promtool lints it clean)",
	  "[runtimes][monitor][hosts]")
{
	PgServer pg("-c log_connections=on");
	const std::string postmaster = pg.vars.at("PG_POSTMASTER_PID");
	std::string dir = temp_dir(), out = dir + "/pg-all";
	// The postmaster and its processes (started before the monitor) only: the machine is shared.
	Background mon({"env", "USDTPROF_TEST_ALL_UNDER=" + postmaster, e2e::usdtprof(), "monitor", "--all", "--runtime",
			"postgres", "-i", "1", "--budget", "1", "-d", "120", "-o", out, "--listen", "127.0.0.1:0"});
	std::string listening = mon.wait_for_line("metrics at", true);
	std::smatch port;
	REQUIRE(std::regex_search(listening, port, std::regex(":([0-9]+)/metrics")));
	mon.wait_for_line("--all: profiling pid " + postmaster + " (postgres)", true);
	mon.wait_for_line("monitoring", true);
	// Two sessions started after it: their backends, forked by the postmaster, are found
	// from their fork events; each runs its statements once attached.
	size_t log_from = pg.log_size();
	FedPsql a(pg, dir + "/a"), b(pg, dir + "/b");
	std::vector<int> backends;
	for (int i = 0; i < 600 && backends.size() < 2; i++) {
		backends = pg.backends_since(log_from);
		if (backends.size() < 2)
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	REQUIRE(backends.size() == 2);
	for (int backend : backends)
		mon.wait_for_line("--all: profiling pid " + std::to_string(backend) + " (postgres)", true);
	std::string to_a, to_b;
	for (int i = 0; i < 30; i++)
		to_a += "SELECT " + std::to_string(i) + ";\n";
	for (int i = 0; i < 20; i++)
		to_b += "SELECT " + std::to_string(i) + ";\n";
	for (int i = 0; i < 5; i++)
		to_b += "SELECT " + std::to_string(i) + ", 'b';\n";
	a.send(to_a);
	b.send(to_b);
	a.finish();
	b.finish();
	// Which backend is whose: the one that ran "SELECT $1, $2" is b's.
	// /metrics: each backend's statements under its pid, in the interval that
	// reads them (the last at its exit); its series go at the next interval
	// (-i 1: a second to see them).
	httplib::Client http("127.0.0.1", std::stoi(port[1]));
	auto series = [](int pid, const std::string &statement) {
		return "usdtprof_function_calls_total{process=\"postgres\",pid=\"" + std::to_string(pid) +
		       "\",function=\"" + statement + "\"}";
	};
	int pid_a = 0, pid_b = 0;
	std::string body, seen;
	for (int i = 0; i < 400 && seen.empty(); i++) {
		auto res = http.Get("/metrics");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		body = res->body;
		for (int x : backends)
			for (int y : backends)
				if (x != y && metric(body, series(x, "SELECT $1")) == 30 &&
				    metric(body, series(y, "SELECT $1")) == 20 &&
				    metric(body, series(y, "SELECT $1, $2")) == 5) {
					pid_a = x;
					pid_b = y;
					seen = body;
				}
		if (seen.empty())
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	INFO(body);
	REQUIRE(!seen.empty());
	REQUIRE(metric(seen, series(pid_a, "SELECT $1, $2")) == -1);
	require_promtool_clean(seen);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	std::string err = mon.rest_of_stderr();
	INFO(err);
	// The interval files: the same counts, each under its backend, described as postgres.
	auto profiles = interval_profiles(out);
	REQUIRE(calls_of_pid(profiles, pid_a, "SELECT $1") == 30);
	REQUIRE(calls_of_pid(profiles, pid_a, "SELECT $1, $2") == 0);
	REQUIRE(calls_of_pid(profiles, pid_b, "SELECT $1") == 20);
	REQUIRE(calls_of_pid(profiles, pid_b, "SELECT $1, $2") == 5);
	for (int pid : {pid_a, pid_b}) {
		bool described = false;
		for (const usdtprof::Profile &p : profiles)
			for (const usdtprof::ProfileProcess &proc : p.processes)
				if (proc.pid == pid) {
					described = true;
					REQUIRE(proc.comm == "postgres");
				}
		REQUIRE(described);
		require_never_sampled(profiles, pid); // the counts are exact
	}
	// No other process ran those statements.
	REQUIRE(e2e::calls_of(profiles, "SELECT $1") == 50);
}

TEST_CASE("bpftrace -c cannot attach to ruby:method__return in libruby; usdtprof record -- ruby can", "[runtimes]")
{
	const std::string bpftrace = find_in_path("bpftrace");
	if (bpftrace.empty()) {
		WARN("bpftrace is not installed: comparison skipped");
		return;
	}
	// The probe is there (libruby's notes), so bpftrace's failure is about the launch: libruby is
	// not mapped yet when it resolves the probe.
	Output listed = run({e2e::usdtprof(), "list", kLibruby});
	INFO(listed.err);
	REQUIRE(listed.status == 0);
	REQUIRE_THAT(listed.out, Contains("ruby:method__return"));

	const std::string probe = std::string("usdt:") + kLibruby + ":ruby:method__return";
	Output bt = run({bpftrace, "-e", probe + " { @[1]=count(); }", "-c", std::string(kRuby31) + " -e 1"});
	INFO(bt.out << bt.err);
	REQUIRE(bt.status != 0);
	REQUIRE_THAT(bt.err, Contains("Error finding location for probe: " + probe));

	// --disable-gems: see the Ruby test above.
	auto [o, data, slack, report] = record_report({kRuby31, "--disable-gems", "-e", "def f; end; 3.times { f }"},
						      {.options = {"--ruby-call-hook"}});
	INFO(o.err);
	REQUIRE_THAT(o.err, Contains("with ruby"));
	auto f = function(report, "Object#f");
	REQUIRE(f["calls"] == 3);
	REQUIRE(f["open"] == 0); // each call closed by its method__return
	REQUIRE(path(report, "Integer#times;Object#f")["calls"] == 3);
}
