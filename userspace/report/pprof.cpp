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

	// The function's id if it has one yet, else 0 (assigns none).
	uint64_t find(uint32_t function) const
	{
		if (function < ids_.size())
			return ids_[function];
		auto it = others_.find(function);
		return it == others_.end() ? 0 : it->second;
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

// Protobuf's base-128 varint of v into p; returns the end.
uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = uint8_t(v | 0x80);
		v >>= 7;
	}
	*p++ = uint8_t(v);
	return p;
}

// Writes the samples, one per call path with calls or self time, as they are
// made: field 2 of Profile, one length-delimited record each, encoded here
// field by field in the bytes protobuf's own serialization of a Sample gives
// (fields in number order, packed repeated scalars, zero scalars left out).
// Functions, locations and strings go into the tables as the samples first use
// them: each sample's frames leaf first, as they are written.
//
// A sample's location ids are its stack's, leaf first: the stack of the
// current path is kept (nodes come in depth-first order from a recording, each
// after its parent), its ids encoded once each, from the end of one buffer
// backwards, so that a path's ids are one run of bytes whatever its depth.
// Only a path whose parent is not on the current stack walks its ancestors.
class SampleWriter {
public:
	SampleWriter(const Profile &profile, const std::vector<uint64_t> &self_ns, bool has_offcpu,
		     LocationTable &locations, StringTable &strings)
	    : profile_(profile), self_ns_(self_ns), has_offcpu_(has_offcpu), locations_(locations), strings_(strings)
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
		const std::vector<PathNode> &nodes = profile_.nodes;
		// Each node's depth: a root (its parent not before it) is 0. Parents
		// always come before their children, which also guards against cycles.
		std::vector<uint32_t> depth(nodes.size());
		uint32_t max_depth = 0;
		for (size_t i = 0; i < nodes.size(); i++) {
			size_t parent = nodes[i].parent;
			depth[i] = parent >= i ? 0 : depth[parent] + 1;
			max_depth = std::max(max_depth, depth[i]);
		}
		stack_.clear();
		bytes_.assign((size_t(max_depth) + 1) * 10, 0);
		std::vector<uint8_t> sample;
		for (size_t i = 0; i < nodes.size(); i++) {
			const PathNode &n = nodes[i];
			push(i, depth);
			uint64_t self = self_ns_.empty() ? n.self_ns : self_ns_[i];
			if (n.calls == 0 && self == 0)
				continue;
			if (pending_)
				assign_ids();
			encode_sample(n, self, sample);
			out.WriteVarint32(kSampleTag);
			out.WriteVarint32(static_cast<uint32_t>(sample_size_));
			out.WriteRaw(sample.data(), static_cast<int>(sample_size_));
			if (i % 4096 == 0 && out.HadError())
				return; // the output failed: what follows would be thrown away
		}
	}

private:
	struct Frame {
		uint32_t node = 0;
		uint32_t function = 0;
		size_t begin = 0;     // where its id's bytes start in bytes_ (they end at the frame below's begin)
		bool pending = false; // its function has no id yet: encoded once a sample assigns it one
	};

	size_t below(size_t level) const { return level ? stack_[level - 1].begin : bytes_.size(); }

	// Node i on top of the stack, at its depth, its parent below it.
	void push(size_t i, const std::vector<uint32_t> &depth)
	{
		uint32_t d = depth[i];
		const PathNode &n = profile_.nodes[i];
		if (d > 0 && !(stack_.size() >= d && stack_[d - 1].node == n.parent)) {
			// Not the current stack's: its ancestors, walked once.
			stack_.assign(d, Frame{});
			for (size_t j = n.parent, level = d; level-- > 0; j = profile_.nodes[j].parent)
				stack_[level] = {uint32_t(j), profile_.nodes[j].function, 0, false};
			pending_ = 0;
			encode_from(0);
		}
		for (size_t level = d; level < stack_.size(); level++)
			pending_ -= stack_[level].pending;
		stack_.resize(d);
		stack_.push_back({uint32_t(i), n.function, 0, false});
		encode_from(d);
	}

	// The stack's ids from level on, each below the one above it in bytes_.
	void encode_from(size_t level)
	{
		for (; level < stack_.size(); level++) {
			Frame &f = stack_[level];
			uint64_t id = locations_.find(f.function);
			if (f.pending)
				pending_--;
			f.pending = id == 0;
			pending_ += f.pending;
			uint8_t buf[10];
			size_t length = id ? size_t(put_varint(buf, id) - buf) : 0;
			f.begin = below(level) - length;
			std::copy(buf, buf + length, bytes_.begin() + long(f.begin));
		}
	}

	// Ids for the stack's functions that have none, leaf first (the order in
	// which the samples first use them), then the stack's bytes again.
	void assign_ids()
	{
		for (size_t level = stack_.size(); level-- > 0;)
			locations_.id_of(stack_[level].function);
		encode_from(0);
	}

	// The sample's bytes into sample, sized once for the deepest stack:
	// written through a pointer, not appended byte run by byte run.
	void encode_sample(const PathNode &n, uint64_t self_ns, std::vector<uint8_t> &sample)
	{
		size_t begin = stack_.back().begin, length = bytes_.size() - begin;
		// Location ids, then two tags and lengths (10 bytes each at most),
		// four values of 10, two labels of 2 + 33: 144 bytes besides the ids.
		if (sample.size() < length + 160)
			sample.resize(length + 160);
		uint8_t *p = sample.data();
		if (length) {
			*p++ = (1 << 3) | 2; // location_id, packed
			p = put_varint(p, length);
			p = std::copy(bytes_.begin() + long(begin), bytes_.end(), p);
		}
		uint64_t values[4] = {uint64_t(to_int64(n.calls)), uint64_t(to_int64(self_ns)), 0, 0};
		size_t count = 2;
		if (has_offcpu_) {
			uint64_t offcpu = std::min(n.self_offcpu_ns, self_ns);
			values[count++] = uint64_t(to_int64(self_ns - offcpu));
			values[count++] = uint64_t(to_int64(offcpu));
		}
		uint8_t packed[40], *end = packed;
		for (size_t k = 0; k < count; k++)
			end = put_varint(end, values[k]);
		*p++ = (2 << 3) | 2; // value, packed
		p = put_varint(p, size_t(end - packed));
		p = std::copy(packed, end, p);
		// label: {key, num} pid, then {key, str} process when known; int64
		// fields as protobuf writes them (a negative one in ten bytes), 0 left out.
		p = label(p, pid_key_, 0, n.pid);
		if (auto it = comms_.find(n.pid); it != comms_.end()) {
			// Indexed at the process's first sample, as each sample did before.
			if (it->second.index < 0)
				it->second.index = strings_.index(it->second.comm);
			p = label(p, process_key_, it->second.index, 0);
		}
		sample_size_ = size_t(p - sample.data());
	}

	static uint8_t *label(uint8_t *p, int64_t key, int64_t str, int64_t num)
	{
		uint8_t body[33], *end = body;
		for (auto [tag, v] : {std::pair{uint8_t(1 << 3), key}, {uint8_t(2 << 3), str}, {uint8_t(3 << 3), num}})
			if (v != 0) {
				*end++ = tag;
				end = put_varint(end, uint64_t(v));
			}
		*p++ = (3 << 3) | 2; // label, length-delimited
		*p++ = uint8_t(end - body); // under 128 bytes
		return std::copy(body, end, p);
	}

	struct Comm {
		Comm(std::string c) : comm(std::move(c)) {}
		std::string comm;
		int64_t index = -1; // in the string table, once a sample used it
	};

	const Profile &profile_;
	const std::vector<uint64_t> &self_ns_; // each node's, when not its own (compensated)
	bool has_offcpu_;
	LocationTable &locations_;
	StringTable &strings_;
	std::map<int32_t, Comm> comms_;
	int64_t pid_key_ = 0, process_key_ = 0;
	std::vector<Frame> stack_;   // the current path, root first
	std::vector<uint8_t> bytes_; // the stack's location ids, encoded, the root's last
	size_t pending_ = 0;	     // frames whose function has no id yet
	size_t sample_size_ = 0;     // the bytes of encode_sample's last sample
};

// "sampled: [who]probes attached for N% of the time ...", for a fraction below 1.
std::string sampled_comment(double fraction, const std::string &who)
{
	char comment[256];
	if (fraction > 0)
		snprintf(comment, sizeof comment,
			 "probes attached for %.4g%% of the time; values are as measured, not scaled "
			 "(scale factor 1/%.4g = %.4g estimates the whole recording)",
			 fraction * 100, fraction, 1 / fraction);
	else
		snprintf(comment, sizeof comment, "probes attached for 0%% of the time; values are as measured, not scaled");
	return "sampled: " + who + comment;
}

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
	if (profile.sampled_fraction < 1)
		tail.add_comment(strings.index(sampled_comment(profile.sampled_fraction, "")));
	// monitor -p A,B, --all: each process had its own window; the profile's
	// fraction above is the smallest.
	if (profile.processes.size() > 1)
		for (const ProfileProcess &p : profile.processes)
			if (p.sampled_fraction < 1)
				tail.add_comment(strings.index(sampled_comment(
					p.sampled_fraction, "pid " + std::to_string(p.pid) + " (" + p.comm + ") ")));
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
void write_profile_message(const Profile &profile, const std::vector<uint64_t> &self_ns, TimeMode time,
			   google::protobuf::io::CodedOutputStream &out)
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
	SampleWriter samples(profile, self_ns, has_offcpu, locations, strings);
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

void write_pprof(const Profile &profile, TimeMode time, Sink &sink, const std::vector<uint64_t> &self_ns)
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
			write_profile_message(profile, self_ns, time, coded);
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
	drop_distributions(measured);
	if (!options.raw)
		compensate_in_place(measured);
	write_pprof(measured, options.time, out);
}

// The same bytes from the profile as it is: of what compensation changes,
// pprof shows only the self times, and those alone are computed (8 MB at a
// million paths, where a copy of the profile was ~60 MB).
void pprof_as_is(const Profile &measured, const ReportOptions &options, Sink &out)
{
	write_pprof(measured, options.time, out, options.raw ? std::vector<uint64_t>() : compensated_self_ns(measured));
}

} // namespace usdtprof
