// `usdtprof list`: the USDT probes of binaries, one entry per probe with its
// sites grouped, and the presets that would attach to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "target/target_file.h"
#include "target/usdt.h"

namespace usdtprof {

struct ListedProbe {
	std::string binary, provider, name;
	std::vector<std::string> args;    // the first site's argument specs, e.g. {"8@%rax"}
	bool args_vary = false;           // some site's specs differ from the first's
	bool has_semaphore = false;
	uint64_t semaphore = 0;           // virtual address in the file
	size_t sites = 0;
	std::vector<std::string> presets; // presets whose probes include this one
};

// One entry per provider:name of binary's sites, sorted by provider then name.
std::vector<ListedProbe> group_sites(const std::string &binary, const std::vector<UsdtSite> &sites);
// group_sites of each file in turn.
std::vector<ListedProbe> list_probes(const std::vector<TargetFilePtr> &files);
// ... of files named on the command line: an unreadable or non-ELF file is an Error.
Result<std::vector<ListedProbe>> list_probes(const std::vector<std::string> &files);

// Text: a table per binary and a summary line; JSON: {"binaries": [...]}.
// Binaries appear in order of first appearance.
std::string render_probe_list(const std::vector<ListedProbe> &probes, bool json);

} // namespace usdtprof
