#include "target/proc_maps.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace usdtprof {

namespace {

// Removes and returns the next space-separated field of line.
std::string_view next_field(std::string_view &line) {
	const size_t start = std::min(line.find_first_not_of(' '), line.size());
	line.remove_prefix(start);
	const std::string_view field = line.substr(0, line.find(' '));
	line.remove_prefix(field.size());
	return field;
}

bool parse_number(std::string_view text, uint64_t &out, int base) {
	const char *end = text.data() + text.size();
	auto [ptr, ec] = std::from_chars(text.data(), end, out, base);
	return !text.empty() && ec == std::errc() && ptr == end;
}

// "MAJOR:MINOR" in hex, as the kernel prints a device.
bool parse_dev(std::string_view text, uint64_t &out) {
	const size_t colon = text.find(':');
	uint64_t major = 0, minor = 0;
	if (colon == std::string_view::npos || !parse_number(text.substr(0, colon), major, 16) ||
	    !parse_number(text.substr(colon + 1), minor, 16) || major > 0xfff || minor > 0xfffff)
		return false;
	out = makedev(major, minor);
	return true;
}

// One line: "start-end perms offset dev inode [path]"; nullopt if malformed.
std::optional<Mapping> parse_line(std::string_view line) {
	Mapping m;
	const std::string_view range = next_field(line), perms = next_field(line),
			       offset = next_field(line), dev = next_field(line),
			       inode = next_field(line);
	const size_t dash = range.find('-');
	if (dash == std::string_view::npos || !parse_number(range.substr(0, dash), m.start, 16) ||
	    !parse_number(range.substr(dash + 1), m.end, 16) || m.start >= m.end ||
	    perms.size() != 4 || !parse_number(offset, m.offset, 16) || !parse_dev(dev, m.dev) ||
	    !parse_number(inode, m.inode, 10))
		return std::nullopt;
	m.readable = perms[0] == 'r';
	m.writable = perms[1] == 'w';
	m.executable = perms[2] == 'x';
	// The path is the rest of the line and may itself contain spaces.
	m.path = line.substr(std::min(line.find_first_not_of(' '), line.size()));
	return m;
}

} // namespace

std::vector<Mapping> parse_proc_maps(const std::string &text) {
	std::vector<Mapping> maps;
	std::string_view rest = text;
	while (!rest.empty()) {
		const size_t eol = rest.find('\n');
		if (std::optional<Mapping> m = parse_line(rest.substr(0, eol)))
			maps.push_back(std::move(*m));
		rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
	}
	return maps;
}

Result<std::vector<Mapping>> read_proc_maps(int pid) {
	const std::string path = "/proc/" + std::to_string(pid) + "/maps";
	UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (fd.get() < 0) {
		if (errno == ENOENT)
			return Error{"no process with pid " + std::to_string(pid)};
		return Error{path + ": " + std::strerror(errno)};
	}
	std::string text;
	char buf[8192];
	ssize_t n;
	while ((n = read(fd.get(), buf, sizeof buf)) > 0)
		text.append(buf, static_cast<size_t>(n));
	// ESRCH: it exited between the open and the read.
	if (n < 0 && errno == ESRCH)
		return Error{"no process with pid " + std::to_string(pid)};
	if (n < 0)
		return Error{path + ": " + std::strerror(errno)};
	return parse_proc_maps(text);
}

std::vector<Mapping> executable_mappings(const std::vector<Mapping> &maps) {
	std::vector<Mapping> out;
	for (const Mapping &m : maps) {
		// A deleted file's path names nothing, or another file.
		if (!m.executable || m.path.empty() || m.path.starts_with('[') ||
		    m.path.ends_with(" (deleted)"))
			continue;
		if (std::none_of(out.begin(), out.end(),
				 [&](const Mapping &o) { return o.dev == m.dev && o.inode == m.inode; }))
			out.push_back(m);
	}
	return out;
}

std::vector<std::string> executable_files(const std::vector<Mapping> &maps) {
	std::vector<std::string> files;
	for (const Mapping &m : executable_mappings(maps))
		files.push_back(m.path);
	return files;
}

std::optional<Mapping> mapping_for(const std::vector<Mapping> &maps, uint64_t addr) {
	for (const Mapping &m : maps)
		if (m.start <= addr && addr < m.end)
			return m;
	return std::nullopt;
}

} // namespace usdtprof
