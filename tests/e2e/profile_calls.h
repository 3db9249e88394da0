// Calls of a function in a loaded profile, summed over its call paths.
#pragma once

#include <cstdint>
#include <string>

#include "profile/profile.h"

namespace e2e {

inline uint64_t calls_of(const usdtprof::Profile &p, const std::string &name)
{
	uint64_t calls = 0;
	for (const usdtprof::PathNode &n : p.nodes)
		if (p.functions[n.function] == name)
			calls += n.calls;
	return calls;
}

} // namespace e2e
