// Profile file: a one-line header (magic, version, body size, crc32) and a
// JSON body. The header lets us tell truncation and corruption apart from
// "not a profile" before touching the JSON.
#include "profile.h"

#include "output_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

namespace usdtprof {

namespace {

using nlohmann::json;

const std::string kMagic = "usdtprof-profile ";

uint32_t crc_of(const std::string &body)
{
	// zlib's crc32 takes a uInt length: feed large bodies in chunks.
	uLong crc = crc32(0, nullptr, 0);
	for (size_t off = 0; off < body.size();) {
		size_t n = std::min<size_t>(body.size() - off, 1u << 30);
		crc = crc32(crc, reinterpret_cast<const Bytef *>(body.data() + off), static_cast<uInt>(n));
		off += n;
	}
	return static_cast<uint32_t>(crc);
}

// Thrown by the body readers below, turned into an Error by parse_profile.
struct Corrupt {
	std::string message;
};

[[noreturn]] void corrupt(const std::string &message) { throw Corrupt{message}; }

const json &field(const json &obj, const char *key, const std::string &where)
{
	auto it = obj.find(key);
	if (it == obj.end())
		corrupt(where + key + ": missing");
	return *it;
}

const json &typed(const json &obj, const char *key, const std::string &where, json::value_t type)
{
	const json &v = field(obj, key, where);
	if (v.type() != type)
		corrupt(where + key + ": expected " + json(type).type_name() + ", got " + v.type_name());
	return v;
}

uint64_t get_uint(const json &obj, const char *key, const std::string &where, uint64_t max = UINT64_MAX)
{
	const json &v = field(obj, key, where);
	if (!v.is_number_unsigned() || v.get<uint64_t>() > max)
		corrupt(where + key + ": expected an unsigned integer up to " + std::to_string(max));
	return v.get<uint64_t>();
}

int64_t get_int(const json &obj, const char *key, const std::string &where, int64_t min, int64_t max)
{
	const json &v = field(obj, key, where);
	bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(max)
		: v.is_number_integer() && v.get<int64_t>() >= min && v.get<int64_t>() <= max;
	if (!fits)
		corrupt(where + key + ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
	return v.get<int64_t>();
}

std::string get_string(const json &obj, const char *key, const std::string &where)
{
	return typed(obj, key, where, json::value_t::string).get<std::string>();
}

// where is "list[i].": the element itself must be an object.
void require_object(const json &e, const std::string &where)
{
	if (!e.is_object())
		corrupt(where.substr(0, where.size() - 1) + ": expected object");
}

std::vector<std::string> get_strings(const json &obj, const char *key, const std::string &where)
{
	std::vector<std::string> out;
	for (const json &v : typed(obj, key, where, json::value_t::array)) {
		if (!v.is_string())
			corrupt(where + key + ": expected an array of strings");
		out.push_back(v.get<std::string>());
	}
	return out;
}

double get_number(const json &obj, const char *key, const std::string &where, double min)
{
	const json &v = field(obj, key, where);
	if (!v.is_number() || !(v.get<double>() >= min) || !std::isfinite(v.get<double>()))
		corrupt(where + key + ": expected a number from " + std::to_string(min));
	return v.get<double>();
}

bool get_bool(const json &obj, const char *key, const std::string &where)
{
	return typed(obj, key, where, json::value_t::boolean).get<bool>();
}

Calibration calibration_from_json(const json &c, size_t functions)
{
	const std::string w = "calibration.";
	if (!c.is_object())
		corrupt("calibration: expected object");
	Calibration cal;
	for (const json &e : typed(c, "kinds", w, json::value_t::array)) {
		std::string k = w + "kinds[" + std::to_string(cal.kinds.size()) + "].";
		require_object(e, k);
		ProbeCost cost;
		cost.kind = get_string(e, "kind", k);
		cost.own_ns = get_number(e, "own_ns", k, 0);
		cost.caller_ns = get_number(e, "caller_ns", k, 0);
		cost.own_spread_ns = get_number(e, "own_spread_ns", k, 0);
		cost.caller_spread_ns = get_number(e, "caller_spread_ns", k, 0);
		cost.batches = static_cast<uint32_t>(get_uint(e, "batches", k, UINT32_MAX));
		cost.uncompensated_ns = get_number(e, "uncompensated_ns", k, -1);
		cal.kinds.push_back(cost);
	}
	for (const json &v : typed(c, "function_kinds", w, json::value_t::array)) {
		if (!v.is_number_integer() || v.get<int64_t>() < -1 || v.get<int64_t>() >= int64_t(cal.kinds.size()))
			corrupt(w + "function_kinds: expected -1 or an index into kinds");
		cal.function_kinds.push_back(static_cast<int32_t>(v.get<int64_t>()));
	}
	if (cal.function_kinds.size() != functions)
		corrupt(w + "function_kinds: expected one per function");
	cal.cost_ns = get_uint(c, "cost_ns", w);
	cal.offcpu_hook = get_bool(c, "offcpu_hook", w);
	cal.trace = get_bool(c, "trace", w);
	return cal;
}

Profile profile_from_json(const json &j)
{
	if (!j.is_object())
		corrupt(std::string("body: expected object, got ") + j.type_name());
	if (get_string(j, "format", "") != "usdtprof")
		corrupt("format: expected \"usdtprof\"");
	if (get_uint(j, "version", "") != static_cast<uint64_t>(kProfileVersion))
		corrupt("version: does not match the header");
	if (get_string(typed(j, "units", "", json::value_t::object), "time", "units.") != "ns")
		corrupt("units.time: expected \"ns\"");

	Profile p;
	p.command = get_strings(j, "command", "");
	for (const json &e : typed(j, "processes", "", json::value_t::array)) {
		std::string w = "processes[" + std::to_string(p.processes.size()) + "].";
		require_object(e, w);
		p.processes.push_back({static_cast<int32_t>(get_int(e, "pid", w, INT32_MIN, INT32_MAX)),
			get_string(e, "comm", w), get_strings(e, "cmdline", w)});
	}
	for (const json &e : typed(j, "probes", "", json::value_t::array)) {
		std::string w = "probes[" + std::to_string(p.probes.size()) + "].";
		require_object(e, w);
		p.probes.push_back({get_string(e, "binary", w), get_string(e, "provider", w), get_string(e, "name", w),
			get_string(e, "role", w), static_cast<uint32_t>(get_uint(e, "sites", w, UINT32_MAX))});
	}
	p.start_unix_ns = get_int(j, "start_unix_ns", "", INT64_MIN, INT64_MAX);
	p.stop_unix_ns = get_int(j, "stop_unix_ns", "", INT64_MIN, INT64_MAX);
	p.duration_ns = get_uint(j, "duration_ns", "");
	const json &anomalies = typed(j, "anomalies", "", json::value_t::object);
	for (auto it = anomalies.begin(); it != anomalies.end(); ++it) {
		if (!it.value().is_number_unsigned())
			corrupt("anomalies." + it.key() + ": expected an unsigned integer");
		p.anomalies[it.key()] = it.value().get<uint64_t>();
	}
	p.functions = get_strings(j, "functions", "");
	if (j.contains("locations")) {
		p.locations = get_strings(j, "locations", "");
		if (p.locations.size() != p.functions.size())
			corrupt("locations: expected one per function");
	}
	if (j.contains("sampled_fraction")) {
		const json &f = j["sampled_fraction"];
		if (!f.is_number() || f.get<double>() <= 0 || f.get<double>() > 1)
			corrupt("sampled_fraction: expected a number in (0, 1]");
		p.sampled_fraction = f.get<double>();
	}

	for (const json &e : typed(j, "nodes", "", json::value_t::array)) {
		size_t i = p.nodes.size();
		std::string w = "nodes[" + std::to_string(i) + "].";
		require_object(e, w);
		PathNode n;
		if (!field(e, "parent", w).is_null()) {
			n.parent = static_cast<uint32_t>(get_uint(e, "parent", w, UINT32_MAX - 1));
			// Parents first: this also rules out cycles.
			if (n.parent >= i)
				corrupt(w + "parent: " + std::to_string(n.parent) + " is not an earlier node");
		}
		n.function = static_cast<uint32_t>(get_uint(e, "function", w, UINT32_MAX));
		if (n.function >= p.functions.size())
			corrupt(w + "function: index " + std::to_string(n.function) + " out of range (" +
				std::to_string(p.functions.size()) + " functions)");
		n.pid = static_cast<int32_t>(get_int(e, "pid", w, INT32_MIN, INT32_MAX));
		n.calls = get_uint(e, "calls", w);
		n.open = get_uint(e, "open", w);
		n.self_ns = get_uint(e, "self_ns", w);
		n.self_offcpu_ns = get_uint(e, "self_offcpu_ns", w);
		n.total_ns = get_uint(e, "total_ns", w);
		if (n.self_ns > n.total_ns)
			corrupt(w + "self_ns exceeds total_ns");
		if (n.self_offcpu_ns > n.self_ns)
			corrupt(w + "self_offcpu_ns exceeds self_ns");
		p.nodes.push_back(n);
	}
	if (j.contains("calibration"))
		p.calibration = calibration_from_json(j["calibration"], p.functions.size());
	return p;
}

bool all_digits(const std::string &s, size_t max_len)
{
	return !s.empty() && s.size() <= max_len && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string one_line(std::string s)
{
	for (char &c : s)
		if (c == '\n' || c == '\r')
			c = ' ';
	return s;
}

} // namespace

std::string serialize_profile(const Profile &profile)
{
	// Ordered, so that "format" and "version" lead the body.
	using ojson = nlohmann::ordered_json;
	ojson processes = ojson::array(), probes = ojson::array(), nodes = ojson::array();
	for (const ProfileProcess &p : profile.processes)
		processes.push_back({{"pid", p.pid}, {"comm", p.comm}, {"cmdline", p.cmdline}});
	for (const ProfileProbe &p : profile.probes)
		probes.push_back({{"binary", p.binary}, {"provider", p.provider}, {"name", p.name},
			{"role", p.role}, {"sites", p.sites}});
	for (const PathNode &n : profile.nodes)
		nodes.push_back({{"parent", n.parent == kNoParent ? ojson(nullptr) : ojson(n.parent)},
			{"function", n.function}, {"pid", n.pid}, {"calls", n.calls}, {"open", n.open},
			{"self_ns", n.self_ns}, {"self_offcpu_ns", n.self_offcpu_ns}, {"total_ns", n.total_ns}});
	ojson body = {
		{"format", "usdtprof"},
		{"version", kProfileVersion},
		{"units", {{"time", "ns"}}},
		{"command", profile.command},
		{"processes", processes},
		{"probes", probes},
		{"start_unix_ns", profile.start_unix_ns},
		{"stop_unix_ns", profile.stop_unix_ns},
		{"duration_ns", profile.duration_ns},
		{"anomalies", profile.anomalies},
		{"functions", profile.functions},
		{"nodes", nodes},
	};
	if (!profile.locations.empty())
		body["locations"] = profile.locations;
	if (profile.sampled_fraction < 1.0)
		body["sampled_fraction"] = profile.sampled_fraction;
	if (const auto &cal = profile.calibration) {
		ojson kinds = ojson::array();
		for (const ProbeCost &k : cal->kinds)
			kinds.push_back({{"kind", k.kind}, {"own_ns", k.own_ns}, {"caller_ns", k.caller_ns},
				{"own_spread_ns", k.own_spread_ns}, {"caller_spread_ns", k.caller_spread_ns},
				{"batches", k.batches}, {"uncompensated_ns", k.uncompensated_ns}});
		std::vector<int32_t> function_kinds = cal->function_kinds;
		function_kinds.resize(profile.functions.size(), -1);
		body["calibration"] = {{"kinds", kinds}, {"function_kinds", function_kinds}, {"cost_ns", cal->cost_ns},
			{"offcpu_hook", cal->offcpu_hook}, {"trace", cal->trace}};
	}
	// Names come from target binaries and may not be UTF-8: replace rather than throw.
	std::string text = body.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
	char header[96];
	snprintf(header, sizeof header, "%s%d %zu %08x\n", kMagic.c_str(), kProfileVersion, text.size(), crc_of(text));
	return header + text;
}

Result<Profile> parse_profile(const std::string &bytes)
{
	if (bytes.empty())
		return Error{"empty file"};
	if (bytes.compare(0, kMagic.size(), kMagic) != 0)
		return Error{kMagic.compare(0, bytes.size(), bytes) == 0 ? "truncated: incomplete header line"
			: "not a usdtprof profile"};
	size_t nl = bytes.find('\n');
	if (nl == std::string::npos)
		return Error{"truncated: incomplete header line"};

	// "<magic><version> <body-bytes> <crc32-hex8>"
	std::vector<std::string> tok;
	for (size_t pos = kMagic.size();;) {
		size_t sp = bytes.find(' ', pos);
		if (sp == std::string::npos || sp > nl) {
			tok.push_back(bytes.substr(pos, nl - pos));
			break;
		}
		tok.push_back(bytes.substr(pos, sp - pos));
		pos = sp + 1;
	}
	// The version comes first so that a future header layout is still reported as such.
	if (!all_digits(tok[0], 9))
		return Error{"corrupt: malformed header line"};
	if (int version = std::stoi(tok[0]); version != kProfileVersion)
		return Error{"unsupported profile version " + std::to_string(version) + " (this usdtprof reads version " +
			std::to_string(kProfileVersion) + ")"};
	if (tok.size() != 3 || !all_digits(tok[1], 19) || tok[2].size() != 8 ||
	    tok[2].find_first_not_of("0123456789abcdef") != std::string::npos)
		return Error{"corrupt: malformed header line"};

	uint64_t announced = std::stoull(tok[1]);
	size_t present = bytes.size() - nl - 1;
	if (present < announced)
		return Error{"truncated: header announces " + tok[1] + " bytes, " + std::to_string(present) + " present"};
	if (present > announced)
		return Error{"corrupt: trailing data after the announced " + tok[1] + "-byte body"};
	std::string body = bytes.substr(nl + 1);
	if (crc_of(body) != static_cast<uint32_t>(std::stoul(tok[2], nullptr, 16)))
		return Error{"corrupt: checksum mismatch"};

	json j;
	try {
		j = json::parse(body);
	} catch (const json::exception &e) {
		return Error{"corrupt: invalid JSON: " + one_line(e.what())};
	}
	try {
		return profile_from_json(j);
	} catch (const Corrupt &c) {
		return Error{"corrupt: " + one_line(c.message)};
	}
}

Result<void> save_profile(const Profile &profile, const std::string &path)
{
	return write_output(path, serialize_profile(profile));
}

Result<Profile> load_profile(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return Error{path + ": " + strerror(errno)};
	std::string bytes;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			return Error{path + ": " + strerror(err)};
		}
		if (n == 0)
			break;
		bytes.append(buf, static_cast<size_t>(n));
	}
	close(fd);
	Result<Profile> r = parse_profile(bytes);
	if (!r)
		return Error{path + ": " + r.error().message};
	return r;
}

} // namespace usdtprof
