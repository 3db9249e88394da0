// The methods of tests/runtimes/Calls.java and how often one run calls each:
// shared by the runtime tests and the launch tests (a wrapper that execs java).
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace e2e {

inline const std::map<std::string, int> &java_expected_calls()
{
	static const std::map<std::string, int> expected = {{"Calls.main", 1}, {"Calls.fib", 1973},
		{"Calls$Counter.<init>", 1}, {"Calls$Counter.inc", 100000}, {"Calls$Counter.get", 1},
		{"Calls$Util.twice", 7}, {"Calls$Child.<init>", 1}, {"Calls$Base.<init>", 1}, {"Calls$Base.hello", 3},
		{"Calls.thrower", 2}};
	return expected;
}

// The calls of each method of Calls in a report's JSON.
inline std::map<std::string, int> java_class_calls(const nlohmann::json &report)
{
	std::map<std::string, int> got;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		if (name.starts_with("Calls.") || name.starts_with("Calls$"))
			got[name] = f["calls"];
	}
	return got;
}

} // namespace e2e
