// libFuzzer: the --pair and --task spec parsers on arbitrary text must return
// roles or a one-line Error, never crash; accepted roles must be well formed.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "target/probe_roles.h"

using namespace usdtprof;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view spec(reinterpret_cast<const char *>(data), size);
	for (auto parse : {parse_pair_spec, parse_task_spec}) {
		auto r = parse(spec);
		if (!r) {
			if (r.error().message.find('\n') != std::string::npos)
				abort();
			continue;
		}
		for (const ProbeRole &role : *r)
			if (role.provider.empty() || role.name.empty() || role.arg > 11)
				abort();
	}
	return 0;
}
