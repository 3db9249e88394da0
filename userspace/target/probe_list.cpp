#include "target/probe_list.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "target/presets.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json; // keeps keys in schema order

std::string hex(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
	return buf;
}

std::string join(const std::vector<std::string> &items, const char *sep, const char *empty)
{
	std::string out;
	for (const std::string &s : items)
		out += (out.empty() ? "" : sep) + s;
	return out.empty() ? empty : out;
}

std::string counted(size_t n, const char *one, const char *many)
{
	return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Binaries in order of first appearance, each with its probes.
std::vector<std::pair<std::string, std::vector<const ListedProbe *>>> by_binary(const std::vector<ListedProbe> &probes)
{
	std::vector<std::pair<std::string, std::vector<const ListedProbe *>>> out;
	for (const ListedProbe &p : probes) {
		auto it = std::find_if(out.begin(), out.end(), [&](const auto &b) { return b.first == p.binary; });
		if (it == out.end())
			it = out.insert(out.end(), {p.binary, {}});
		it->second.push_back(&p);
	}
	return out;
}

std::string render_text(const std::vector<ListedProbe> &probes)
{
	std::string out;
	std::vector<std::string> presets;
	size_t sites = 0;
	const auto binaries = by_binary(probes);
	for (const auto &[binary, list] : binaries) {
		std::vector<std::vector<std::string>> rows = {{"provider:name", "sites", "semaphore", "arguments", "presets"}};
		for (const ListedProbe *p : list) {
			// Probe strings come from the ELF file: anyone's.
			rows.push_back({escape_text(p->provider + ":" + p->name), std::to_string(p->sites),
					p->has_semaphore ? hex(p->semaphore) : "-",
					p->args_vary ? "varies" : escape_text(join(p->args, " ", "-")),
					join(p->presets, ",", "-")});
			sites += p->sites;
			for (const std::string &s : p->presets)
				if (std::find(presets.begin(), presets.end(), s) == presets.end())
					presets.push_back(s);
		}
		size_t width[4] = {};
		for (const auto &r : rows)
			for (size_t c = 0; c < 4; c++)
				width[c] = std::max(width[c], r[c].size());
		out += escape_text(binary) + "\n";
		for (const auto &r : rows) {
			// Counts align right, text left; the last column is not padded.
			out += "  " + r[0] + std::string(width[0] - r[0].size(), ' ') + "  " +
				std::string(width[1] - r[1].size(), ' ') + r[1];
			for (size_t c = 2; c < 4; c++)
				out += "  " + r[c] + std::string(width[c] - r[c].size(), ' ');
			out += "  " + r[4] + "\n";
		}
		out += "\n";
	}
	return out + counted(probes.size(), "probe", "probes") + " (" + counted(sites, "site", "sites") + ") in " +
		counted(binaries.size(), "binary", "binaries") + "; presets: " +
		(presets.empty() ? "none" : join(presets, ", ", "")) + "\n";
}

std::string render_json(const std::vector<ListedProbe> &probes)
{
	json binaries = json::array();
	for (const auto &[binary, list] : by_binary(probes)) {
		json entries = json::array();
		for (const ListedProbe *p : list)
			entries.push_back({{"provider", p->provider}, {"name", p->name}, {"sites", p->sites},
				{"semaphore", p->has_semaphore ? json(hex(p->semaphore)) : json(nullptr)},
				{"args", p->args}, {"args_vary", p->args_vary}, {"presets", p->presets}});
		binaries.push_back({{"path", binary}, {"probes", std::move(entries)}});
	}
	// Paths and probe strings may not be UTF-8: replaced as report's JSON does.
	return json{{"binaries", std::move(binaries)}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace

std::vector<ListedProbe> group_sites(const std::string &binary, const std::vector<UsdtSite> &sites)
{
	std::map<std::pair<std::string, std::string>, ListedProbe> probes;
	for (const UsdtSite &s : sites) {
		auto [it, fresh] = probes.try_emplace({s.provider, s.name});
		ListedProbe &p = it->second;
		if (fresh) {
			p.binary = binary;
			p.provider = s.provider;
			p.name = s.name;
			p.args = s.args;
			p.presets = probe_presets(s.provider, s.name);
		} else if (s.args != p.args) {
			p.args_vary = true;
		}
		// sys/sdt.h gives all sites of a probe one semaphore.
		if (!p.has_semaphore && s.semaphore) {
			p.has_semaphore = true;
			p.semaphore = s.semaphore;
		}
		p.sites++;
	}
	std::vector<ListedProbe> out;
	for (auto &[key, p] : probes)
		out.push_back(std::move(p));
	return out;
}

std::vector<ListedProbe> list_probes(const std::vector<TargetFilePtr> &files)
{
	std::vector<ListedProbe> out;
	for (const TargetFilePtr &file : files)
		for (ListedProbe &p : group_sites(file->path, file->sites))
			out.push_back(std::move(p));
	return out;
}

Result<std::vector<ListedProbe>> list_probes(const std::vector<std::string> &paths)
{
	std::vector<TargetFilePtr> files;
	for (const std::string &path : paths) {
		auto file = open_named_file(path);
		if (!file)
			return file.error();
		files.push_back(*file);
	}
	return list_probes(files);
}

std::string render_probe_list(const std::vector<ListedProbe> &probes, bool json)
{
	return json ? render_json(probes) : render_text(probes);
}

} // namespace usdtprof
