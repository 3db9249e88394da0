// pprof export: a perftools.profiles.Profile written as it is made, through a
// gzip stream, holding only its small tables (docs/pprof.md).
#include "report/pprof.h"

#include "profile/spans.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <exception>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

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

bool has_offcpu_values(const Profile &profile, TimeMode time)
{
	if (time != TimeMode::Wall)
		return true;
	for (const PathNode &n : profile.nodes)
		if (n.self_offcpu_ns > 0)
			return true;
	return false;
}

// Function index -> Function/Location id (the same number), in order of
// first use; unused functions are left out. Every frame of every sample asks,
// so the function table's indices are looked up in a flat array.
class LocationTable {
public:
	LocationTable(const Profile &profile, pp::Profile &tail, StringTable &strings)
	    : profile_(profile), tail_(tail), strings_(strings), ids_(profile.functions.size(), 0)
	{
	}

	uint64_t id_of(uint32_t function)
	{
		if (function < ids_.size())
			return ids_[function] ? ids_[function] : (ids_[function] = add(function));
		auto [it, inserted] = others_.try_emplace(function, 0);
		return inserted ? (it->second = add(function)) : it->second;
	}

private:
	uint64_t add(uint32_t function)
	{
		uint64_t id = next_id_++;
		std::string name = function < profile_.functions.size() ? profile_.functions[function]
									 : "[function " + std::to_string(function) + "]";
		auto [file, line] = function < profile_.locations.size() ? split_location(profile_.locations[function])
									   : std::pair<std::string, int64_t>{"", 0};
		pp::Function *f = tail_.add_function();
		f->set_id(id);
		f->set_name(strings_.index(name));
		// system_name stays "": pprof rewrites a name as C++ (drops its
		// template arguments and parameters, so `Worker<T, N>::operator()`
		// and Python's `<module>` and `<lambda>` merge) only when system_name
		// equals name, i.e. when the name might still be mangled.
		f->set_filename(strings_.index(file));
		f->set_start_line(line);
		pp::Location *loc = tail_.add_location();
		loc->set_id(id);
		loc->set_mapping_id(kMainMapping);
		pp::Line *l = loc->add_line();
		l->set_function_id(id);
		l->set_line(line);
		return id;
	}

	const Profile &profile_;
	pp::Profile &tail_;
	StringTable &strings_;
	std::vector<uint64_t> ids_;			  // by function index; 0: not written yet
	std::unordered_map<uint32_t, uint64_t> others_; // indices beyond the function table
	uint64_t next_id_ = 1;
};

// Writes the samples, one per call path with calls or self time, as they are
// made: field 2 of Profile, one length-delimited record each. Functions,
// locations and strings go into the tables as the samples first use them.
class SampleWriter {
public:
	SampleWriter(const Profile &profile, bool has_offcpu, LocationTable &locations, StringTable &strings)
	    : profile_(profile), has_offcpu_(has_offcpu), locations_(locations), strings_(strings)
	{
		for (const ProfileProcess &p : profile.processes)
			if (!p.comm.empty())
				comms_.emplace(p.pid, p.comm);
		pid_key_ = strings.index("pid");
		process_key_ = strings.index("process");
	}

	void write_all(google::protobuf::io::CodedOutputStream &out)
	{
		constexpr uint32_t kSampleTag = (2 << 3) | 2; // field 2, length-delimited
		for (size_t i = 0; i < profile_.nodes.size(); i++) {
			const PathNode &n = profile_.nodes[i];
			if (n.calls == 0 && n.self_ns == 0)
				continue;
			fill(i);
			out.WriteVarint32(kSampleTag);
			out.WriteVarint32(static_cast<uint32_t>(sample_.ByteSizeLong()));
			sample_.SerializeWithCachedSizes(&out);
			if (i % 4096 == 0 && out.HadError())
				return; // the output failed: what follows would be thrown away
		}
	}

private:
	// One Sample, reused so that a path allocates nothing once the first few
	// have sized its arrays.
	void fill(size_t i)
	{
		const PathNode &n = profile_.nodes[i];
		sample_.Clear();
		// Leaf first; parents always come before their children, which also
		// guards against cycles in a malformed profile.
		for (size_t j = i;;) {
			sample_.add_location_id(locations_.id_of(profile_.nodes[j].function));
			size_t parent = profile_.nodes[j].parent;
			if (parent >= j)
				break;
			j = parent;
		}
		sample_.add_value(to_int64(n.calls));
		sample_.add_value(to_int64(n.self_ns));
		if (has_offcpu_) {
			uint64_t offcpu = std::min(n.self_offcpu_ns, n.self_ns);
			sample_.add_value(to_int64(n.self_ns - offcpu));
			sample_.add_value(to_int64(offcpu));
		}
		pp::Label *pid = sample_.add_label();
		pid->set_key(pid_key_);
		pid->set_num(n.pid);
		if (auto it = comms_.find(n.pid); it != comms_.end()) {
			pp::Label *process = sample_.add_label();
			process->set_key(process_key_);
			// Indexed at the process's first sample, as each sample did before.
			if (it->second.index < 0)
				it->second.index = strings_.index(it->second.comm);
			process->set_str(it->second.index);
		}
	}

	struct Comm {
		Comm(std::string c) : comm(std::move(c)) {}
		std::string comm;
		int64_t index = -1; // in the string table, once a sample used it
	};

	const Profile &profile_;
	bool has_offcpu_;
	LocationTable &locations_;
	StringTable &strings_;
	std::map<int32_t, Comm> comms_;
	int64_t pid_key_ = 0, process_key_ = 0;
	pp::Sample sample_;
};

// The Profile fields after the tables: its times, period and comment.
void add_profile_fields(pp::Profile &tail, StringTable &strings, const Profile &profile, TimeMode time)
{
	tail.set_time_nanos(profile.start_unix_ns);
	tail.set_duration_nanos(to_int64(profile.duration_ns));
	set_value_type(tail.mutable_period_type(), strings, "calls", "count");
	tail.set_period(1);
	tail.set_default_sample_type(strings.index(time == TimeMode::Cpu      ? "self_oncpu_time"
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
		tail.add_comment(strings.index(comment));
	}
	// record --span: intervals beside the call tree, in no sample; one
	// comment each (go tool pprof -comments), all processes added up.
	for (const ProfileSpan &s : spans_by_name(profile.spans))
		tail.add_comment(strings.index(
			"span " + s.name + ": " + std::to_string(s.count) + " ended, total_ns " + std::to_string(s.total_ns) +
			", min_ns " + std::to_string(s.min_ns) + ", p50_ns " + std::to_string(span_quantile(s, 0.5)) +
			", p99_ns " + std::to_string(span_quantile(s, 0.99)) + ", max_ns " + std::to_string(s.max_ns) +
			"; " + std::to_string(s.open) + " open, " + std::to_string(s.restarted) + " restarted, " +
			std::to_string(s.unstarted) + " unstarted (wall-clock, as measured; in no sample)"));
}

// A Profile message is its fields in any order, repeated ones appended as
// they come: `head` holds field 1 (sample_type), then the samples (field 2)
// are written one by one, then `tail` holds fields 3 and up (the mapping,
// locations, functions, string table, which the samples filled in, and the
// scalars). In field order, as protobuf serializes one whole message, so the
// bytes are those of the message built whole (which took 860 MB at 1M paths).
void write_profile_message(const Profile &profile, TimeMode time, google::protobuf::io::CodedOutputStream &out)
{
	pp::Profile head, tail;
	StringTable strings(tail);
	bool has_offcpu = has_offcpu_values(profile, time);
	set_value_type(head.add_sample_type(), strings, "calls", "count");
	set_value_type(head.add_sample_type(), strings, "self_time", "nanoseconds");
	if (has_offcpu) {
		set_value_type(head.add_sample_type(), strings, "self_oncpu_time", "nanoseconds");
		set_value_type(head.add_sample_type(), strings, "self_offcpu_time", "nanoseconds");
	}
	add_main_mapping(tail, strings, profile);
	head.SerializeToCodedStream(&out);

	LocationTable locations(profile, tail, strings);
	SampleWriter samples(profile, has_offcpu, locations, strings);
	samples.write_all(out);

	add_profile_fields(tail, strings, profile, time);
	tail.SerializeToCodedStream(&out);
}

// protobuf's output streams write into a Sink. What the Sink throws is kept
// and rethrown once protobuf has returned, not unwound through its code.
class SinkOutput : public google::protobuf::io::CopyingOutputStream {
public:
	explicit SinkOutput(Sink &sink) : sink_(sink) {}
	bool Write(const void *buffer, int size) override
	{
		try {
			sink_.write(static_cast<const char *>(buffer), static_cast<size_t>(size));
			return true;
		} catch (...) {
			error = std::current_exception();
			return false;
		}
	}
	std::exception_ptr error;

private:
	Sink &sink_;
};

// gzip level 1 (zlib's fastest). Measured on the protobuf of 1M paths, depth
// 40 (76 MB): level 1 0.8 s of CPU and 21.5 MB, level 6 (zlib's default) 1.3 s
// and 21.2 MB, level 9 (what was used before) 4.5 s and 20.0 MB. The
// compression is most of the export's time; a monitor writes (and pushes) a
// pprof every interval, and 1-7% more bytes cost less than 2-6x the CPU.
constexpr int kGzipLevel = 1;

} // namespace

void write_pprof(const Profile &profile, TimeMode time, Sink &sink)
{
	namespace io = google::protobuf::io;
	SinkOutput raw(sink);
	bool ok = true;
	{
		io::CopyingOutputStreamAdaptor buffered(&raw, 64 << 10);
		io::GzipOutputStream::Options options;
		options.format = io::GzipOutputStream::GZIP; // gzip's header and trailer, not zlib's
		options.compression_level = kGzipLevel;
		io::GzipOutputStream gz(&buffered, options);
		{
			io::CodedOutputStream coded(&gz);
			write_profile_message(profile, time, coded);
			ok = !coded.HadError();
		} // gives coded's unused buffer back to gz
		ok = gz.Close() && ok;
		ok = buffered.Flush() && ok;
	}
	if (raw.error)
		std::rethrow_exception(raw.error);
	if (!ok)
		throw std::runtime_error("pprof: cannot compress the profile");
}

std::string render_pprof(const Profile &profile, TimeMode time)
{
	StringSink out;
	write_pprof(profile, time, out);
	return std::move(out.text);
}

// The pprof row of formats.cpp: compensated unless --raw.
void pprof_profile(Profile measured, const ReportOptions &options, Sink &out)
{
	if (!options.raw)
		compensate_in_place(measured);
	write_pprof(measured, options.time, out);
}

} // namespace usdtprof
