// A report's figures per function (`report --format json`'s "functions"), to
// compare two reports of one profile: the unit and e2e tests of old profiles
// hold this build's report to the old build's with them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

namespace report_figures {

using Figures = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>; // calls, open, self, total

inline Figures figures(const nlohmann::json &row)
{
	return {row["calls"].get<uint64_t>(), row["open"].get<uint64_t>(), row["self_ns"].get<uint64_t>(),
		row["total_ns"].get<uint64_t>()};
}

inline std::map<std::string, Figures> functions_of(const nlohmann::json &report)
{
	std::map<std::string, Figures> out;
	for (const nlohmann::json &f : report["functions"])
		out[f["name"].get<std::string>()] = figures(f);
	return out;
}

} // namespace report_figures
