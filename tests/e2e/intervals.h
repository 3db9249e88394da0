// A monitor's interval profiles, read back for e2e checks that sum them.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "profile/profile.h"

namespace e2e {

// How many interval files dir holds (0 before the monitor made it).
inline size_t interval_file_count(const std::string &dir)
{
	size_t n = 0;
	std::error_code ec;
	for (const auto &e : std::filesystem::directory_iterator(dir, ec))
		n += e.path().extension() == ".data";
	return n;
}

// The interval profiles (.data) in dir, oldest first (their names sort by time).
inline std::vector<usdtprof::Profile> interval_profiles(const std::string &dir)
{
	std::vector<std::string> files;
	for (const auto &e : std::filesystem::directory_iterator(dir))
		if (e.path().extension() == ".data")
			files.push_back(e.path());
	std::sort(files.begin(), files.end());
	std::vector<usdtprof::Profile> out;
	for (const std::string &f : files) {
		auto p = usdtprof::load_profile(f);
		REQUIRE(p);
		out.push_back(*p);
	}
	return out;
}

// Calls of a function by one process (pid; -1: by any) over all intervals.
inline uint64_t calls_of_pid(const std::vector<usdtprof::Profile> &profiles, int pid, const std::string &name)
{
	uint64_t calls = 0;
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::PathNode &n : p.nodes)
			if ((pid < 0 || n.pid == pid) && p.functions[n.function] == name)
				calls += n.calls;
	return calls;
}

// Calls of a function over all intervals.
inline uint64_t calls_of(const std::vector<usdtprof::Profile> &profiles, const std::string &name)
{
	return calls_of_pid(profiles, -1, name);
}

// Never sampled: pid's probes attached all of every interval it is in but
// its first, where it may have been found (--all: attached from then on).
inline void require_never_sampled(const std::vector<usdtprof::Profile> &profiles, int pid)
{
	bool first = true;
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::ProfileProcess &proc : p.processes)
			if (proc.pid == pid) {
				INFO("pid " << pid << ": sampled_fraction " << proc.sampled_fraction);
				REQUIRE(proc.sampled_fraction > 0);
				REQUIRE((first || proc.sampled_fraction == 1.0));
				first = false;
			}
	REQUIRE(!first);
}

// The value of a /metrics sample line that starts with series (its name and
// labels), -1 when there is none.
inline double metric(const std::string &text, const std::string &series)
{
	std::istringstream lines(text);
	for (std::string line; std::getline(lines, line);)
		if (line.rfind(series + " ", 0) == 0)
			return std::stod(line.substr(series.size() + 1));
	return -1;
}

// A process's CPU time (user + system) as the kernel counts it, in seconds
// (/proc/PID/stat; -1 when it is gone).
inline double process_cpu_seconds(int pid)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	size_t after_name = stat.rfind(')');
	if (after_name == std::string::npos)
		return -1;
	std::istringstream fields(stat.substr(after_name + 1));
	std::string field;
	unsigned long long utime = 0, stime = 0;
	for (int i = 3; fields >> field && i <= 15; i++) // fields 14 and 15: utime, stime
		if (i == 14)
			utime = std::stoull(field);
		else if (i == 15)
			stime = std::stoull(field);
	return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

} // namespace e2e
