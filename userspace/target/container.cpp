#include "target/container.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "base/text_escape.h"

namespace usdtprof {

namespace {

bool is_id(std::string_view s)
{
	return s.size() == 64 &&
	       std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::vector<std::string_view> components(std::string_view path)
{
	std::vector<std::string_view> out;
	for (size_t at = 0; at <= path.size();) {
		size_t end = std::min(path.find('/', at), path.size());
		if (end > at)
			out.push_back(path.substr(at, end - at));
		at = end + 1;
	}
	return out;
}

// The id a systemd-driver scope names: PREFIX<id>.scope.
ContainerId from_scope(std::string_view c)
{
	static const struct {
		std::string_view prefix, runtime;
	} scopes[] = {{"docker-", "docker"}, {"cri-containerd-", "containerd"}, {"crio-", "crio"}, {"libpod-", "podman"}};
	if (c.ends_with(".scope"))
		c.remove_suffix(6);
	for (const auto &s : scopes)
		if (c.starts_with(s.prefix) && is_id(c.substr(s.prefix.size())))
			return {std::string(s.runtime), std::string(c.substr(s.prefix.size()))};
	return {};
}

} // namespace

ContainerId container_id_from_cgroup(std::string_view cgroup_path)
{
	std::vector<std::string_view> parts = components(cgroup_path);
	for (size_t i = parts.size(); i-- > 0;) {
		if (ContainerId c = from_scope(parts[i]); !c.id.empty())
			return c;
		if (!is_id(parts[i]) || i == 0)
			continue;
		if (parts[i - 1] == "docker")
			return {"docker", std::string(parts[i])};
		if (parts[i - 1].starts_with("pod") && parts[0].starts_with("kubepods"))
			return {"kubernetes", std::string(parts[i])};
	}
	return {};
}

std::string cgroup_from_proc(std::string_view proc_cgroup)
{
	std::string_view first, unified;
	bool have_first = false;
	for (size_t at = 0; at < proc_cgroup.size();) {
		size_t end = std::min(proc_cgroup.find('\n', at), proc_cgroup.size());
		std::string_view line = proc_cgroup.substr(at, end - at);
		at = end + 1;
		// hierarchy-ID:controllers:path; the path may hold ':' itself.
		size_t colon1 = line.find(':'), colon2 = colon1 == line.npos ? line.npos : line.find(':', colon1 + 1);
		if (colon2 == line.npos)
			continue;
		std::string_view path = line.substr(colon2 + 1);
		if (line.substr(0, colon2 + 1) == "0::")
			unified = path;
		else if (!have_first)
			first = path;
		have_first = true;
	}
	// Hybrid hosts keep containers in the v1 hierarchies, "0::/" in the unified one.
	std::string_view path = unified.empty() || (unified == "/" && !first.empty()) ? first : unified;
	if (path.size() > kMaxCgroupPath)
		return escape_text(path.substr(0, kMaxCgroupPath - 3)) + "...";
	return escape_text(path);
}

int ns_pid_from_status(std::string_view status)
{
	size_t at = status.find("\nNSpid:");
	if (at == status.npos)
		return 0;
	std::string_view line = status.substr(at + 7);
	line = line.substr(0, line.find('\n'));
	std::vector<int> pids;
	for (size_t i = 0; i < line.size();) {
		while (i < line.size() && (line[i] == '\t' || line[i] == ' '))
			i++;
		if (i == line.size())
			break;
		int pid = 0;
		auto [end, ec] = std::from_chars(line.data() + i, line.data() + line.size(), pid);
		if (ec != std::errc() || pid <= 0)
			return 0;
		pids.push_back(pid);
		i = size_t(end - line.data());
	}
	return pids.size() > 1 ? pids.back() : 0;
}

} // namespace usdtprof
