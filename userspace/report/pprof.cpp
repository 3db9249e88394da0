// pprof export: builds a perftools.profiles.Profile from the recorded call
// paths, serializes it and gzips it (docs/pprof.md).
#include "report/pprof.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <zlib.h>

#include "profile/compensation.h"
#include "proto/profile.pb.h"
#include "base/sink.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

namespace pp = perftools::profiles;

// pprof values are int64; usdtprof's are uint64 and saturate.
int64_t to_int64(uint64_t v)
{
	return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
									       : static_cast<int64_t>(v);
}

// Profile::string_table with deduplication; index 0 is always "". Protobuf
// strings must be UTF-8 and names need not be: ill-formed bytes become U+FFFD.
class StringTable {
public:
	explicit StringTable(pp::Profile &out) : out_(out) { index(""); }
	int64_t index(const std::string &name)
	{
		std::string s = valid_utf8(name);
		auto [it, inserted] = indices_.try_emplace(s, static_cast<int64_t>(out_.string_table_size()));
		if (inserted)
			out_.add_string_table(s);
		return it->second;
	}

private:
	pp::Profile &out_;
	std::unordered_map<std::string, int64_t> indices_;
};

// "file:line" -> {file, line}; "file" -> {file, 0}. A suffix after the last
// ':' that is not a positive decimal number belongs to the file name.
std::pair<std::string, int64_t> split_location(const std::string &location)
{
	size_t colon = location.rfind(':');
	if (colon == std::string::npos || colon + 1 == location.size())
		return {location, 0};
	const char *first = location.data() + colon + 1, *last = location.data() + location.size();
	int64_t line = 0;
	auto [end, ec] = std::from_chars(first, last, line);
	if (ec != std::errc() || end != last || line <= 0 || *first == '+' || *first == '-')
		return {location, 0};
	return {location.substr(0, colon), line};
}

std::string gzip(const std::string &data)
{
	z_stream zs{};
	// 15 window bits + 16: a gzip header and trailer instead of zlib's.
	if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		throw std::runtime_error("gzip: deflateInit2 failed");
	std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
	zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
	zs.avail_in = static_cast<uInt>(data.size());
	zs.next_out = reinterpret_cast<Bytef *>(out.data());
	zs.avail_out = static_cast<uInt>(out.size());
	int rc = deflate(&zs, Z_FINISH);
	out.resize(zs.total_out);
	deflateEnd(&zs);
	if (rc != Z_STREAM_END)
		throw std::runtime_error("gzip: deflate failed");
	return out;
}

// The one Mapping every Location is in: the profiled program, marked as
// already symbolized so pprof neither looks for the binary nor prints
// "Main binary filename not available.".
constexpr uint64_t kMainMapping = 1;

std::string main_program(const Profile &profile)
{
	if (!profile.command.empty())
		return profile.command.front();
	for (const ProfileProcess &p : profile.processes) {
		if (!p.cmdline.empty() && !p.cmdline.front().empty())
			return p.cmdline.front();
		if (!p.comm.empty())
			return p.comm;
	}
	return "[unknown program]";
}

void add_main_mapping(pp::Profile &out, StringTable &strings, const Profile &profile)
{
	pp::Mapping *m = out.add_mapping();
	m->set_id(kMainMapping);
	m->set_filename(strings.index(main_program(profile)));
	m->set_has_functions(true);
	m->set_has_filenames(true);
	m->set_has_line_numbers(true);
}

void set_value_type(pp::ValueType *vt, StringTable &strings, const char *type, const char *unit)
{
	vt->set_type(strings.index(type));
	vt->set_unit(strings.index(unit));
}

} // namespace

std::string render_pprof(const Profile &profile, TimeMode time)
{
	pp::Profile out;
	StringTable strings(out);

	bool has_offcpu = time != TimeMode::Wall;
	for (const PathNode &n : profile.nodes)
		has_offcpu |= n.self_offcpu_ns > 0;

	set_value_type(out.add_sample_type(), strings, "calls", "count");
	set_value_type(out.add_sample_type(), strings, "self_time", "nanoseconds");
	if (has_offcpu) {
		set_value_type(out.add_sample_type(), strings, "self_oncpu_time", "nanoseconds");
		set_value_type(out.add_sample_type(), strings, "self_offcpu_time", "nanoseconds");
	}

	add_main_mapping(out, strings, profile);

	std::map<int32_t, std::string> comms;
	for (const ProfileProcess &p : profile.processes)
		if (!p.comm.empty())
			comms.emplace(p.pid, p.comm);

	// Function index -> Function/Location id (the same number), in order of
	// first use; unused functions are left out.
	std::unordered_map<uint32_t, uint64_t> ids;
	auto id_of = [&](uint32_t function) {
		auto [it, inserted] = ids.try_emplace(function, ids.size() + 1);
		if (!inserted)
			return it->second;
		std::string name = function < profile.functions.size() ? profile.functions[function]
									: "[function " + std::to_string(function) + "]";
		auto [file, line] = function < profile.locations.size() ? split_location(profile.locations[function])
									  : std::pair<std::string, int64_t>{"", 0};
		pp::Function *f = out.add_function();
		f->set_id(it->second);
		f->set_name(strings.index(name));
		// system_name stays "": pprof rewrites a name as C++ (drops its
		// template arguments and parameters, so `Worker<T, N>::operator()`
		// and Python's `<module>` and `<lambda>` merge) only when system_name
		// equals name, i.e. when the name might still be mangled.
		f->set_filename(strings.index(file));
		f->set_start_line(line);
		pp::Location *loc = out.add_location();
		loc->set_id(it->second);
		loc->set_mapping_id(kMainMapping);
		pp::Line *l = loc->add_line();
		l->set_function_id(it->second);
		l->set_line(line);
		return it->second;
	};

	const int64_t pid_key = strings.index("pid"), process_key = strings.index("process");
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		const PathNode &n = profile.nodes[i];
		if (n.calls == 0 && n.self_ns == 0)
			continue;
		pp::Sample *s = out.add_sample();
		// Leaf first; parents always come before their children, which also
		// guards against cycles in a malformed profile.
		for (size_t j = i;;) {
			s->add_location_id(id_of(profile.nodes[j].function));
			size_t parent = profile.nodes[j].parent;
			if (parent >= j)
				break;
			j = parent;
		}
		s->add_value(to_int64(n.calls));
		s->add_value(to_int64(n.self_ns));
		if (has_offcpu) {
			uint64_t offcpu = std::min(n.self_offcpu_ns, n.self_ns);
			s->add_value(to_int64(n.self_ns - offcpu));
			s->add_value(to_int64(offcpu));
		}
		pp::Label *pid = s->add_label();
		pid->set_key(pid_key);
		pid->set_num(n.pid);
		if (auto it = comms.find(n.pid); it != comms.end()) {
			pp::Label *process = s->add_label();
			process->set_key(process_key);
			process->set_str(strings.index(it->second));
		}
	}

	out.set_time_nanos(profile.start_unix_ns);
	out.set_duration_nanos(to_int64(profile.duration_ns));
	set_value_type(out.mutable_period_type(), strings, "calls", "count");
	out.set_period(1);
	out.set_default_sample_type(strings.index(time == TimeMode::Cpu	   ? "self_oncpu_time"
						  : time == TimeMode::Offcpu ? "self_offcpu_time"
									     : "self_time"));
	if (profile.sampled_fraction < 1) {
		char comment[256];
		if (profile.sampled_fraction > 0)
			snprintf(comment, sizeof comment,
				 "sampled: probes attached for %.4g%% of the time; values are as measured, not scaled "
				 "(scale factor 1/%.4g = %.4g estimates the whole recording)",
				 profile.sampled_fraction * 100, profile.sampled_fraction, 1 / profile.sampled_fraction);
		else
			snprintf(comment, sizeof comment,
				 "sampled: probes attached for 0%% of the time; values are as measured, not scaled");
		out.add_comment(strings.index(comment));
	}

	std::string bytes;
	if (!out.SerializeToString(&bytes))
		throw std::runtime_error("pprof: cannot serialize the profile");
	return gzip(bytes);
}

} // namespace usdtprof

namespace usdtprof {

// The pprof row of formats.cpp: compensated unless --raw.
void pprof_profile(Profile measured, const ReportOptions &options, Sink &out)
{
	if (!options.raw)
		compensate_in_place(measured);
	out.write(render_pprof(measured, options.time));
}

} // namespace usdtprof
