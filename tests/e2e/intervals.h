// A monitor's interval profiles, read back for e2e checks that sum them.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace e2e {

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

// Calls of a function over all intervals.
inline uint64_t calls_of(const std::vector<usdtprof::Profile> &profiles, const std::string &name)
{
	uint64_t calls = 0;
	for (const usdtprof::Profile &p : profiles)
		for (const usdtprof::PathNode &n : p.nodes)
			if (p.functions[n.function] == name)
				calls += n.calls;
	return calls;
}

} // namespace e2e
