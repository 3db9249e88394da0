// Version 2 of the profile body (docs/profile-format.md): the few fields of
// the recording as a JSON object, then the function table and the call paths
// as binary records of LEB128 integers, written and read in one pass through
// a 64 KiB buffer. A million paths are ~25 MB instead of version 1's ~120 MB
// of JSON, and read without a parser's per-character work.
#include "profile/profile_body.h"

#include <cstdint>
#include <cstring>

#include "base/huge_pages.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

// Appends LEB128 integers and byte strings, handing them to the sink in chunks.
class Encoder {
public:
	explicit Encoder(Sink &out) : out_(out) { buf_.reserve(kChunk + 64); }
	~Encoder() { flush(); }

	void varint(uint64_t v)
	{
		while (v >= 0x80) {
			buf_.push_back(static_cast<char>(v | 0x80));
			v >>= 7;
		}
		buf_.push_back(static_cast<char>(v));
		if (buf_.size() >= kChunk)
			flush();
	}
	void bytes(std::string_view s)
	{
		varint(s.size());
		if (s.size() >= kChunk)
			flush(), out_.write(s);
		else
			buf_.append(s);
	}
	void flush()
	{
		out_.write(buf_);
		buf_.clear();
	}

private:
	static constexpr size_t kChunk = 1 << 16;
	Sink &out_;
	std::string buf_;
};

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Reads what Encoder wrote. `where` names the record for an error line: a
// callable returning it, called only on an error (a string built per field of
// a million nodes was a fifth of loading's time).
class Decoder {
public:
	explicit Decoder(BodyReader &body) : body_(body) {}

	template <class Where> uint64_t varint(const Where &where)
	{
		// Most integers are whole in the buffer: decode them without a check per byte.
		if (end_ - pos_ >= 10) {
			const uint8_t *p = reinterpret_cast<const uint8_t *>(buf_ + pos_);
			uint64_t v = 0;
			for (int shift = 0; shift < 64; shift += 7) {
				uint8_t b = *p++;
				if (shift == 63 && b > 1)
					break;
				v |= uint64_t(b & 0x7f) << shift;
				if (!(b & 0x80)) {
					pos_ = size_t(reinterpret_cast<const char *>(p) - buf_);
					return v;
				}
			}
			corrupt(where() + ": integer longer than 64 bits");
		}
		uint64_t v = 0;
		for (int shift = 0; shift < 64; shift += 7) {
			uint8_t b = byte(where);
			if (shift == 63 && b > 1)
				break;
			v |= uint64_t(b & 0x7f) << shift;
			if (!(b & 0x80))
				return v;
		}
		corrupt(where() + ": integer longer than 64 bits");
	}
	template <class Where> std::string bytes(const Where &where)
	{
		uint64_t n = varint(where);
		if (n > left())
			corrupt(where() + ": " + std::to_string(n) + " bytes announced, " + std::to_string(left()) + " left");
		std::string s(n, '\0');
		for (size_t at = 0; at < n;) {
			if (pos_ == end_)
				fill(where);
			size_t k = std::min<size_t>(n - at, end_ - pos_);
			memcpy(s.data() + at, buf_ + pos_, k);
			pos_ += k;
			at += k;
		}
		return s;
	}
	// Bytes not read yet.
	uint64_t left() const { return (end_ - pos_) + body_.left(); }

private:
	template <class Where> uint8_t byte(const Where &where)
	{
		if (pos_ == end_)
			fill(where);
		return static_cast<uint8_t>(buf_[pos_++]);
	}
	template <class Where> void fill(const Where &where)
	{
		pos_ = 0;
		end_ = body_.read(buf_, sizeof buf_);
		if (end_ == 0)
			corrupt(where() + ": the body ends inside it");
	}

	BodyReader &body_;
	char buf_[1 << 16];
	size_t pos_ = 0, end_ = 0;
};

// A fixed name for the error line.
auto named(const char *what)
{
	return [what] { return std::string(what); };
}

void write_functions(const Profile &profile, Encoder &out)
{
	out.varint(profile.functions.size());
	for (size_t f = 0; f < profile.functions.size(); f++) {
		out.bytes(valid_utf8(profile.functions[f]));
		if (!profile.locations.empty())
			out.bytes(valid_utf8(f < profile.locations.size() ? profile.locations[f] : ""));
		const auto &cal = profile.calibration;
		int32_t kind = cal && f < cal->function_kinds.size() ? cal->function_kinds[f] : -1;
		out.varint(static_cast<uint64_t>(kind + 1));
	}
}

void write_nodes(const Profile &profile, Encoder &out)
{
	out.varint(profile.nodes.size());
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		const PathNode &n = profile.nodes[i];
		out.varint(n.parent == kNoParent ? 0 : i - n.parent);
		out.varint(n.function);
		out.varint(zigzag(n.pid));
		out.varint(n.calls);
		out.varint(n.open);
		out.varint(n.self_ns);
		out.varint(n.self_offcpu_ns);
		out.varint(n.total_ns);
	}
}

// After the nodes, when the metadata has `distributions`: the nodes that
// have timed calls, each as the distance from the previous one (from -1),
// min_ns, max_ns, its number of non-zero buckets, then (bucket, count)
// pairs, buckets ascending. An older reader stops at "bytes after the last
// node" rather than misreading them.
void write_distributions(const Profile &profile, Encoder &out)
{
	size_t with = 0;
	for (size_t i = 0; i < profile.nodes.size(); i++)
		with += !node_dist(profile, i).empty();
	out.varint(with);
	size_t last = SIZE_MAX;
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		const Distribution &d = node_dist(profile, i);
		if (d.empty())
			continue;
		out.varint(i - last);
		last = i;
		out.varint(d.min_ns);
		out.varint(d.max_ns);
		out.varint(d.buckets.size());
		for (const auto &[b, n] : d.buckets) {
			out.varint(b);
			out.varint(n);
		}
	}
}

// After the nodes and their durations, when the metadata has `probe_time`:
// the nodes with probe time measured in band, each as the distance from the
// previous one (from -1) and its probe_ns.
void write_probe_time(const Profile &profile, Encoder &out)
{
	size_t with = 0;
	for (const PathNode &n : profile.nodes)
		with += n.probe_ns != 0;
	out.varint(with);
	size_t last = SIZE_MAX;
	for (size_t i = 0; i < profile.nodes.size(); i++) {
		if (!profile.nodes[i].probe_ns)
			continue;
		out.varint(i - last);
		last = i;
		out.varint(profile.nodes[i].probe_ns);
	}
}

void read_probe_time(Decoder &in, Profile &p)
{
	uint64_t count = in.varint(named("probe_time"));
	if (count > p.nodes.size())
		corrupt("probe_time: " + std::to_string(count) + " announced, more than the " +
			std::to_string(p.nodes.size()) + " nodes");
	size_t at = SIZE_MAX;
	for (uint64_t k = 0; k < count; k++) {
		std::string w = "probe_time[" + std::to_string(k) + "].";
		uint64_t step = in.varint([&w] { return w + "node"; });
		if (step == 0 || step > p.nodes.size() - (at + 1))
			corrupt(w + "node: not a later node");
		at += step;
		PathNode &node = p.nodes[at];
		node.probe_ns = in.varint([&w] { return w + "probe_ns"; });
		if (node.probe_ns > node.self_ns)
			corrupt(w + "probe_ns exceeds self_ns");
	}
}

void read_distributions(Decoder &in, Profile &p)
{
	uint64_t count = in.varint(named("distributions"));
	if (count > p.nodes.size())
		corrupt("distributions: " + std::to_string(count) + " announced, more than the " +
			std::to_string(p.nodes.size()) + " nodes");
	p.dists = huge_vector<Distribution>(p.nodes.size());
	size_t at = SIZE_MAX;
	for (uint64_t k = 0; k < count; k++) {
		std::string w = "distributions[" + std::to_string(k) + "].";
		auto at_field = [&w](const char *field) { return [&w, field] { return w + field; }; };
		uint64_t step = in.varint(at_field("node"));
		if (step == 0 || step > p.nodes.size() - (at + 1))
			corrupt(w + "node: not a later node");
		at += step;
		const PathNode &node = p.nodes[at];
		Distribution &d = p.dists[at];
		d.min_ns = in.varint(at_field("min_ns"));
		d.max_ns = in.varint(at_field("max_ns"));
		if (d.min_ns > d.max_ns)
			corrupt(w + "min_ns exceeds max_ns");
		uint64_t buckets = in.varint(at_field("buckets"));
		if (buckets == 0 || buckets > kDistBuckets)
			corrupt(w + "buckets: expected 1 to " + std::to_string(kDistBuckets));
		uint64_t counted = 0;
		for (uint64_t j = 0; j < buckets; j++) {
			uint64_t b = in.varint(at_field("bucket")), n = in.varint(at_field("count"));
			if (b >= kDistBuckets || (!d.buckets.empty() && b <= d.buckets.back().first) || n == 0)
				corrupt(w + "buckets: expected ascending buckets below " + std::to_string(kDistBuckets) +
					" with non-zero counts");
			counted += n;
			d.buckets.emplace_back(uint32_t(b), n);
		}
		if (counted > node.calls)
			corrupt(w + "buckets: more durations than calls");
	}
}

void read_functions(Decoder &in, Profile &p)
{
	bool locations = !p.locations.empty();
	p.locations.clear();
	uint64_t count = in.varint(named("functions"));
	if (count > in.left() / 2)
		corrupt("functions: " + std::to_string(count) + " announced, more than the body holds");
	std::vector<int32_t> kinds;
	int64_t known = p.calibration ? int64_t(p.calibration->kinds.size()) : 0;
	for (uint64_t f = 0; f < count; f++) {
		auto w = [f](const char *field) {
			return [f, field] { return "functions[" + std::to_string(f) + "]" + field; };
		};
		p.functions.push_back(in.bytes(w("")));
		if (locations)
			p.locations.push_back(in.bytes(w(".location")));
		uint64_t kind = in.varint(w(".kind"));
		if (kind > uint64_t(known))
			corrupt(w(".kind")() + ": expected 0 (none) or 1 + an index into calibration.kinds");
		kinds.push_back(int32_t(kind) - 1);
	}
	if (p.calibration)
		p.calibration->function_kinds = std::move(kinds);
}

// The same checks as version 1's (profile_json.cpp), in its words.
PathNode read_node(Decoder &in, size_t i, size_t functions)
{
	auto w = [i](const char *field) { return [i, field] { return "nodes[" + std::to_string(i) + "]." + field; }; };
	PathNode n;
	uint64_t up = in.varint(w("parent"));
	if (up > i)
		corrupt(w("parent")() + ": " + std::to_string(up) + " nodes up is before the first node");
	n.parent = up ? uint32_t(i - up) : kNoParent;
	uint64_t function = in.varint(w("function"));
	if (function >= functions)
		corrupt(w("function")() + ": index " + std::to_string(function) + " out of range (" +
			std::to_string(functions) + " functions)");
	n.function = uint32_t(function);
	int64_t pid = unzigzag(in.varint(w("pid")));
	if (pid < INT32_MIN || pid > INT32_MAX)
		corrupt(w("pid")() + ": expected an integer in [" + std::to_string(INT32_MIN) + ", " + std::to_string(INT32_MAX) + "]");
	n.pid = int32_t(pid);
	n.calls = in.varint(w("calls"));
	n.open = in.varint(w("open"));
	n.self_ns = in.varint(w("self_ns"));
	n.self_offcpu_ns = in.varint(w("self_offcpu_ns"));
	n.total_ns = in.varint(w("total_ns"));
	if (n.self_ns > n.total_ns)
		corrupt(w("self_ns exceeds total_ns")());
	if (n.self_offcpu_ns > n.self_ns)
		corrupt(w("self_offcpu_ns exceeds self_ns")());
	return n;
}

void read_nodes(Decoder &in, Profile &p)
{
	uint64_t count = in.varint(named("nodes"));
	// Each node takes at least 8 bytes: a count beyond that is not reserved for.
	if (count > in.left() / 8 || count >= kNoParent)
		corrupt("nodes: " + std::to_string(count) + " announced, more than the body holds");
	reserve_huge(p.nodes, count);
	for (uint64_t i = 0; i < count; i++)
		p.nodes.push_back(read_node(in, i, p.functions.size()));
}

} // namespace

void write_binary_body(const Profile &profile, Sink &out)
{
	Encoder enc(out);
	bool probe_time = has_probe_time(profile);
	enc.bytes(meta_json(profile, probe_time));
	write_functions(profile, enc);
	write_nodes(profile, enc);
	if (profile.distributions)
		write_distributions(profile, enc);
	if (probe_time)
		write_probe_time(profile, enc);
}

Profile read_binary_body(BodyReader &body)
{
	Decoder in(body);
	ProfileMeta meta = profile_from_meta(in.bytes(named("metadata")));
	Profile &p = meta.profile;
	read_functions(in, p);
	read_nodes(in, p);
	if (p.distributions)
		read_distributions(in, p);
	if (meta.probe_time)
		read_probe_time(in, p);
	check_thread_nodes(p);
	if (in.left())
		corrupt(std::to_string(in.left()) + " bytes after the last node");
	return std::move(meta.profile);
}

} // namespace usdtprof
