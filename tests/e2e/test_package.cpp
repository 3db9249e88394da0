// The Debian package (make deb): installed with dpkg into a scratch root of the
// test's own (never the machine's), used as a user would, then removed.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "harness.h"

using namespace e2e;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// make test passes the package it built; a subset run looks beside the binary.
std::string package()
{
	if (const char *p = getenv("USDTPROF_DEB"))
		return p;
	for (const auto &e : std::filesystem::directory_iterator(std::filesystem::path(usdtprof()).parent_path()))
		if (e.path().extension() == ".deb" && e.path().filename().string().rfind("usdtprof_", 0) == 0)
			return e.path();
	FAIL("no usdtprof_*.deb beside " << usdtprof() << ": run make deb");
	return "";
}

Output sh(const std::string &script) { return run({"sh", "-c", script}); }

std::string shell_quoted(const std::string &s) { return "'" + s + "'"; }

// dpkg on the scratch root: its own database, no maintainer scripts of the host's.
std::string dpkg(const std::string &root) { return "dpkg --root=" + shell_quoted(root) + " --force-not-root --force-depends "; }

} // namespace

TEST_CASE("package: dpkg installs usdtprof with its man pages, header, pkg-config, completion and unit; "
	  "removes them all",
	  "[package]")
{
	std::string deb = package(), root = temp_dir() + "/root";
	std::filesystem::create_directories(root + "/var/lib/dpkg/info");
	std::filesystem::create_directories(root + "/var/lib/dpkg/updates");
	std::ofstream(root + "/var/lib/dpkg/status");

	// Depends: the libraries the binary links, each an installed package here.
	Output depends = run({"dpkg-deb", "-f", deb, "Depends"});
	REQUIRE(depends.status == 0);
	REQUIRE_THAT(depends.out, Contains("libbpf1"));
	REQUIRE_THAT(depends.out, Contains("libprotobuf"));
	Output unmet = sh("for p in $(dpkg-deb -f " + shell_quoted(deb) +
			  " Depends | tr ',|' '\\n\\n' | sed 's/(.*//; s/ //g'); do "
			  "dpkg-query -W -f='${Status}\\n' \"$p\" 2>/dev/null | grep -q 'ok installed' || echo \"$p\"; done");
	REQUIRE(unmet.status == 0);
	REQUIRE(unmet.out.empty());

	Output install = sh(dpkg(root) + "-i " + shell_quoted(deb));
	INFO(install.out << install.err);
	REQUIRE(install.status == 0);

	Output version = run({root + "/usr/bin/usdtprof", "--version"});
	REQUIRE(version.status == 0);
	REQUIRE_THAT(version.out, StartsWith("usdtprof "));
	REQUIRE_THAT(version.out, Contains("profile format: writes version 2, reads versions 1 and 2"));

	// man finds every page in the package's man tree, and renders it.
	for (std::string page : {"usdtprof", "usdtprof-record", "usdtprof-monitor", "usdtprof-diff"}) {
		Output where = run({"man", "-M", root + "/usr/share/man", "-w", page});
		INFO(page << ": " << where.err);
		REQUIRE(where.status == 0);
		REQUIRE(where.out == root + "/usr/share/man/man8/" + page + ".8.gz\n");
	}
	Output page = sh("MANWIDTH=100 man -M " + shell_quoted(root + "/usr/share/man") + " usdtprof-report | col -b");
	REQUIRE(page.status == 0);
	REQUIRE_THAT(page.out, Contains("usdtprof report [OPTIONS] [file...]"));
	REQUIRE_THAT(page.out, Contains("--callers"));
	REQUIRE_THAT(page.out, Contains("EXIT STATUS"));

	// A third-party build finds the header through pkg-config, and its probes are listed.
	std::string app = temp_dir();
	std::ofstream(app + "/app.c") << "#include <usdtprof/usdtprof.h>\n"
					 "int main(void) { USDTPROF_ENTER(\"work\"); USDTPROF_EXIT(\"work\"); return 0; }\n";
	Output cflags = sh("PKG_CONFIG_PATH=" + shell_quoted(root + "/usr/share/pkgconfig") +
			   " pkg-config --define-prefix --cflags usdtprof");
	REQUIRE(cflags.status == 0);
	REQUIRE_THAT(cflags.out, Contains("-I" + root + "/usr/include"));
	Output cc = sh("cc " + cflags.out.substr(0, cflags.out.find('\n')) + " " +
		       shell_quoted(app + "/app.c") + " -o " + shell_quoted(app + "/app"));
	INFO(cc.err);
	REQUIRE(cc.status == 0);
	// Strict C (no POSIX feature macro: the header's clock reads need none)
	// and C++, without a warning.
	for (const char *compiler : {"cc -std=c11", "c++ -x c++ -std=c++11"}) {
		Output strict = sh(std::string(compiler) + " -Wall -Wextra -Werror " +
				   cflags.out.substr(0, cflags.out.find('\n')) + " -c " + shell_quoted(app + "/app.c") +
				   " -o " + shell_quoted(app + "/strict.o"));
		INFO(compiler << ": " << strict.err);
		REQUIRE(strict.status == 0);
	}
	Output list = run({root + "/usr/bin/usdtprof", "list", app + "/app"});
	REQUIRE(list.status == 0);
	REQUIRE_THAT(list.out, Contains("usdtprof:enter"));

	// Bash completion: subcommands, then options and option values from the installed --help.
	auto complete = [&](const std::string &words, int cword) {
		Output o = sh("PATH=" + shell_quoted(root + "/usr/bin") + ":$PATH bash -c '. " + root +
			      "/usr/share/bash-completion/completions/usdtprof; COMP_WORDS=(" + words +
			      "); COMP_CWORD=" + std::to_string(cword) + "; _usdtprof; echo \"${COMPREPLY[*]}\"'");
		REQUIRE(o.status == 0);
		return o.out;
	};
	REQUIRE(complete("usdtprof rep", 1) == "report\n");
	REQUIRE(complete("usdtprof report --ti", 2) == "--time\n");
	REQUIRE(complete("usdtprof report --time \"\"", 3) == "wall cpu offcpu\n");
	REQUIRE(complete("usdtprof export --format p", 3) == "pprof\n");

	std::ifstream unit(root + "/usr/lib/systemd/system/usdtprof-monitor@.service");
	std::string unit_text((std::istreambuf_iterator<char>(unit)), {});
	REQUIRE_THAT(unit_text, Contains("ExecStart=/usr/bin/usdtprof monitor --binary %f"));
	REQUIRE(std::filesystem::exists(root + "/usr/share/doc/usdtprof/README.md"));

	Output remove = sh(dpkg(root) + "-r usdtprof");
	INFO(remove.out << remove.err);
	REQUIRE(remove.status == 0);
	// Nothing left but dpkg's own database.
	Output left = sh("cd " + shell_quoted(root) + " && find . -path ./var/lib/dpkg -prune -o -type f -print");
	REQUIRE(left.status == 0);
	REQUIRE(left.out.empty());
}
