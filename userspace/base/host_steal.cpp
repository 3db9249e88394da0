#include "base/host_steal.h"

#include <fstream>
#include <sstream>
#include <unistd.h>

namespace usdtprof {

std::optional<uint64_t> parse_host_steal_ns(const std::string &proc_stat, long clock_ticks)
{
	std::istringstream in(proc_stat);
	std::string label;
	// cpu user nice system idle iowait irq softirq steal ...
	if (!(in >> label) || label != "cpu" || clock_ticks <= 0)
		return std::nullopt;
	uint64_t field = 0;
	for (int i = 0; i < 8; i++)
		if (!(in >> field))
			return std::nullopt;
	return field * (1'000'000'000 / uint64_t(clock_ticks));
}

std::optional<uint64_t> host_steal_ns()
{
	std::ifstream f("/proc/stat");
	std::string line;
	if (!std::getline(f, line))
		return std::nullopt;
	return parse_host_steal_ns(line, sysconf(_SC_CLK_TCK));
}

} // namespace usdtprof
