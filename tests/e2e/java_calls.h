// The methods of tests/runtimes/Calls.java (named with their parameters) and how often one run calls each:
// shared by the runtime tests and the launch tests (a wrapper that execs java).
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace e2e {

inline const std::map<std::string, int> &java_expected_calls()
{
	static const std::map<std::string, int> expected = {{"Calls.main(String[])", 1},
		{"Calls.fib(int)", 1973}, {"Calls$Counter.<init>()", 1}, {"Calls$Counter.inc()", 100000},
		{"Calls$Counter.get()", 1}, {"Calls$Util.twice(int)", 7}, {"Calls$Child.<init>()", 1},
		{"Calls$Base.<init>()", 1}, {"Calls$Base.hello()", 3}, {"Calls.thrower()", 2}, {"Calls.over(int)", 2},
		{"Calls.over(long)", 3}, {"Calls.over(String)", 4}, {"Calls.lambda$main$0(int)", 5},
		{"Calls$Name.<init>()", 1}, {"Calls$Name.get():Object", 6}, {"Calls$Name.get():String", 6}};
	return expected;
}

// The calls of each method of Calls in a report's JSON (not of its lambdas' hidden classes).
inline std::map<std::string, int> java_class_calls(const nlohmann::json &report)
{
	std::map<std::string, int> got;
	for (const auto &f : report["functions"]) {
		std::string name = f["name"];
		if ((name.starts_with("Calls.") || name.starts_with("Calls$")) && !name.starts_with("Calls$$Lambda"))
			got[name] = f["calls"];
	}
	return got;
}

} // namespace e2e
