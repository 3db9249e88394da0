// Version 1 of the profile body: one JSON object (docs/profile-format.md).
// It is read through nlohmann's SAX interface: every field but the call paths
// goes into a small document and is checked there; the call paths, nearly all
// of a large file, go straight into Profile::nodes (NodeStream), so loading a
// million paths never builds a document of them.
#include "profile/profile_body.h"
#include "usdtprof/bpf_shared.h"

#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <istream>
#include <streambuf>

#include <nlohmann/json.hpp>

namespace usdtprof {

namespace {

using nlohmann::json;

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

// functions: how many function_kinds to expect; -1 when they are kept elsewhere (version 2).
Calibration calibration_from_json(const json &c, int64_t functions)
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
		if (e.contains("rounds"))
			cost.rounds = static_cast<uint32_t>(get_uint(e, "rounds", k, UINT32_MAX));
		cost.uncompensated_ns = get_number(e, "uncompensated_ns", k, -1);
		cal.kinds.push_back(cost);
	}
	if (functions >= 0) {
		for (const json &v : typed(c, "function_kinds", w, json::value_t::array)) {
			if (!v.is_number_integer() || v.get<int64_t>() < -1 || v.get<int64_t>() >= int64_t(cal.kinds.size()))
				corrupt(w + "function_kinds: expected -1 or an index into kinds");
			cal.function_kinds.push_back(static_cast<int32_t>(v.get<int64_t>()));
		}
		if (int64_t(cal.function_kinds.size()) != functions)
			corrupt(w + "function_kinds: expected one per function");
	}
	cal.cost_ns = get_uint(c, "cost_ns", w);
	cal.offcpu_hook = get_bool(c, "offcpu_hook", w);
	cal.trace = get_bool(c, "trace", w);
	return cal;
}

// One field of a streamed node as the file had it, before it is checked.
struct RawField {
	enum Kind : uint8_t { Missing, Null, Unsigned, Negative, Other } kind = Missing;
	uint64_t u = 0; // Unsigned
	int64_t i = 0;  // Negative
};

// The fields of a node, in the order they are checked.
const char *const kNodeFields[] = {"parent",	 "function",	   "pid",      "calls",	  "open",
				   "self_ns", "self_offcpu_ns", "total_ns", "probe_ns"};
enum NodeField { kParent, kFunction, kPid, kCalls, kOpen, kSelf, kSelfOffcpu, kTotal, kProbe, kNodeFieldCount };

int node_field(const std::string &key)
{
	for (int f = 0; f < kNodeFieldCount; f++)
		if (key == kNodeFields[f])
			return f;
	return -1;
}

// The DOM reader's checks (field, get_uint, get_int), with its messages.
uint64_t raw_uint(const RawField &v, const char *key, const std::string &where, uint64_t max = UINT64_MAX)
{
	if (v.kind == RawField::Missing)
		corrupt(where + key + ": missing");
	if (v.kind != RawField::Unsigned || v.u > max)
		corrupt(where + key + ": expected an unsigned integer up to " + std::to_string(max));
	return v.u;
}

int64_t raw_int(const RawField &v, const char *key, const std::string &where, int64_t min, int64_t max)
{
	if (v.kind == RawField::Missing)
		corrupt(where + key + ": missing");
	bool fits = v.kind == RawField::Unsigned ? v.u <= static_cast<uint64_t>(max)
		: v.kind == RawField::Negative && v.i >= min && v.i <= max;
	if (!fits)
		corrupt(where + key + ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
	return v.kind == RawField::Unsigned ? static_cast<int64_t>(v.u) : v.i;
}

// An optional "sampled_fraction" in (0, 1] of j into fraction; where: the field's path.
void read_fraction(const json &j, const std::string &where, double &fraction)
{
	if (j.contains("sampled_fraction")) {
		const json &f = j["sampled_fraction"];
		if (!f.is_number() || f.get<double>() <= 0 || f.get<double>() > 1)
			corrupt(where + "sampled_fraction: expected a number in (0, 1]");
		fraction = f.get<double>();
	}
}

// The call paths as they stream past, checked one by one in file order. The
// first bad node's message is kept, to be raised where the DOM reader checked
// the nodes (after the fields before them); the function index range is
// checked then too, when the functions are known wherever they stood.
class NodeStream {
public:
	void restart() { *this = NodeStream(); }
	void begin_node() { fields_ = {}; }
	RawField *field(const std::string &key)
	{
		int f = node_field(key);
		return f < 0 ? nullptr : &fields_[f];
	}
	void end_node() { add(nullptr); }
	void not_an_object() { add("expected object"); }

	std::vector<PathNode> take(size_t functions)
	{
		for (size_t i = 0; i < nodes_.size(); i++)
			check_function(nodes_[i].function, i, functions);
		if (error_) {
			if (error_after_function_)
				check_function(error_function_, nodes_.size(), functions);
			corrupt(*error_);
		}
		return std::move(nodes_);
	}

private:
	static void check_function(uint32_t function, size_t i, size_t functions)
	{
		if (function >= functions)
			corrupt("nodes[" + std::to_string(i) + "].function: index " + std::to_string(function) +
				" out of range (" + std::to_string(functions) + " functions)");
	}

	void add(const char *not_object)
	{
		size_t i = count_++;
		if (error_)
			return;
		std::string where = "nodes[" + std::to_string(i) + "].";
		try {
			if (not_object)
				corrupt(where.substr(0, where.size() - 1) + ": " + not_object);
			nodes_.push_back(checked(i, where));
		} catch (Corrupt &c) {
			error_ = std::move(c.message);
		}
	}

	PathNode checked(size_t i, const std::string &w)
	{
		const auto &f = fields_;
		PathNode n;
		if (f[kParent].kind == RawField::Missing)
			corrupt(w + "parent: missing");
		if (f[kParent].kind != RawField::Null) {
			n.parent = static_cast<uint32_t>(raw_uint(f[kParent], "parent", w, UINT32_MAX - 1));
			// Parents first: this also rules out cycles.
			if (n.parent >= i)
				corrupt(w + "parent: " + std::to_string(n.parent) + " is not an earlier node");
		}
		n.function = static_cast<uint32_t>(raw_uint(f[kFunction], "function", w, UINT32_MAX));
		error_function_ = n.function;
		error_after_function_ = true;
		n.pid = static_cast<int32_t>(raw_int(f[kPid], "pid", w, INT32_MIN, INT32_MAX));
		n.calls = raw_uint(f[kCalls], "calls", w);
		n.open = raw_uint(f[kOpen], "open", w);
		n.self_ns = raw_uint(f[kSelf], "self_ns", w);
		n.self_offcpu_ns = raw_uint(f[kSelfOffcpu], "self_offcpu_ns", w);
		n.total_ns = raw_uint(f[kTotal], "total_ns", w);
		if (n.self_ns > n.total_ns)
			corrupt(w + "self_ns exceeds total_ns");
		if (n.self_offcpu_ns > n.self_ns)
			corrupt(w + "self_offcpu_ns exceeds self_ns");
		// Optional: profiles without probe time measured in band have none.
		if (f[kProbe].kind != RawField::Missing)
			n.probe_ns = raw_uint(f[kProbe], "probe_ns", w);
		if (n.probe_ns > n.self_ns)
			corrupt(w + "probe_ns exceeds self_ns");
		error_after_function_ = false;
		return n;
	}

	std::array<RawField, kNodeFieldCount> fields_;
	std::vector<PathNode> nodes_;
	size_t count_ = 0;
	std::optional<std::string> error_;
	bool error_after_function_ = false; // the bad node's function was read before its error
	uint32_t error_function_ = 0;
};

// The fields both versions keep in JSON, in the order they are checked.
Profile meta_from_json(const json &j, int version)
{
	if (!j.is_object())
		corrupt(std::string("body: expected object, got ") + j.type_name());
	if (get_string(j, "format", "") != "usdtprof")
		corrupt("format: expected \"usdtprof\"");
	if (get_uint(j, "version", "") != static_cast<uint64_t>(version))
		corrupt("version: does not match the header");
	if (get_string(typed(j, "units", "", json::value_t::object), "time", "units.") != "ns")
		corrupt("units.time: expected \"ns\"");

	Profile p;
	p.command = get_strings(j, "command", "");
	for (const json &e : typed(j, "processes", "", json::value_t::array)) {
		std::string w = "processes[" + std::to_string(p.processes.size()) + "].";
		require_object(e, w);
		ProfileProcess proc;
		proc.pid = static_cast<int32_t>(get_int(e, "pid", w, INT32_MIN, INT32_MAX));
		proc.comm = get_string(e, "comm", w);
		proc.cmdline = get_strings(e, "cmdline", w);
		// The container identity: absent from profiles of processes without one.
		if (e.contains("ns_pid"))
			proc.ns_pid = static_cast<int32_t>(get_int(e, "ns_pid", w, 0, INT32_MAX));
		for (auto [key, field] : {std::pair{"cgroup", &proc.cgroup}, {"container_runtime", &proc.container_runtime},
					  {"container_id", &proc.container_id}})
			if (e.contains(key))
				*field = get_string(e, key, w);
		read_fraction(e, w, proc.sampled_fraction);
		p.processes.push_back(std::move(proc));
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
	return p;
}

void sampled_fraction_from_json(const json &j, Profile &p) { read_fraction(j, "", p.sampled_fraction); }

// record --per-thread: "per_thread": true and its threads' frames, node
// indices ascending (checked against the nodes by check_thread_nodes).
void threads_from_json(const json &j, Profile &p)
{
	if (j.contains("per_thread") && !get_bool(j, "per_thread", ""))
		corrupt("per_thread: expected true");
	p.per_thread = j.contains("per_thread");
	if (!j.contains("thread_nodes"))
		return;
	for (const json &n : typed(j, "thread_nodes", "", json::value_t::array)) {
		if (!n.is_number_unsigned() || n.get<uint64_t>() >= kNoParent ||
		    (!p.thread_nodes.empty() && n.get<uint64_t>() <= p.thread_nodes.back()))
			corrupt("thread_nodes: expected ascending node indices");
		p.thread_nodes.push_back(n.get<uint32_t>());
	}
}

void spans_from_json(const json &j, Profile &p)
{
	if (!j.contains("spans"))
		return;
	const json &spans = typed(j, "spans", "", json::value_t::array);
	for (size_t k = 0; k < spans.size(); k++) {
		std::string w = "spans[" + std::to_string(k) + "].";
		const json &e = spans[k];
		if (!e.is_object())
			corrupt("spans[" + std::to_string(k) + "]: expected object");
		ProfileSpan sp;
		sp.name = get_string(e, "name", w);
		sp.pid = int32_t(get_int(e, "pid", w, INT32_MIN, INT32_MAX));
		sp.count = get_uint(e, "count", w);
		sp.total_ns = get_uint(e, "total_ns", w);
		sp.min_ns = get_uint(e, "min_ns", w);
		sp.max_ns = get_uint(e, "max_ns", w);
		sp.open = get_uint(e, "open", w);
		sp.restarted = get_uint(e, "restarted", w);
		sp.unstarted = get_uint(e, "unstarted", w);
		const json &buckets = typed(e, "buckets", w, json::value_t::array);
		for (const json &b : buckets) {
			if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
			    b[0].get<uint64_t>() >= USDTPROF_SPAN_BUCKETS ||
			    (!sp.buckets.empty() && b[0].get<uint64_t>() <= sp.buckets.back().first))
				corrupt(w + "buckets: expected ascending [bucket, count] pairs, bucket below " +
					std::to_string(USDTPROF_SPAN_BUCKETS));
			sp.buckets.emplace_back(b[0].get<uint32_t>(), b[1].get<uint64_t>());
		}
		p.spans.push_back(std::move(sp));
	}
}

Profile profile_from_json(const json &j, NodeStream &nodes)
{
	Profile p = meta_from_json(j, kProfileVersionJson);
	p.functions = get_strings(j, "functions", "");
	if (j.contains("locations")) {
		p.locations = get_strings(j, "locations", "");
		if (p.locations.size() != p.functions.size())
			corrupt("locations: expected one per function");
	}
	sampled_fraction_from_json(j, p);

	// The nodes were streamed past the document (NodeStream); the document
	// holds an empty array in their place, or what "nodes" was if not an array.
	typed(j, "nodes", "", json::value_t::array);
	p.nodes = nodes.take(p.functions.size());
	if (j.contains("calibration"))
		p.calibration = calibration_from_json(j["calibration"], int64_t(p.functions.size()));
	spans_from_json(j, p);
	threads_from_json(j, p);
	check_thread_nodes(p);
	return p;
}


// nlohmann's SAX events: into the small document (json_sax_dom_parser), except
// the elements of the top-level "nodes" array, which go to a NodeStream.
class BodyHandler {
public:
	using string_t = json::string_t;

	json document;
	NodeStream nodes;
	std::string parse_error_text;

	bool null() { return value(RawField{RawField::Null}) || dom_.null(); }
	bool boolean(bool v) { return value(RawField{RawField::Other}) || dom_.boolean(v); }
	bool number_integer(json::number_integer_t v)
	{
		return value(RawField{v < 0 ? RawField::Negative : RawField::Unsigned, uint64_t(v), v}) ||
		       dom_.number_integer(v);
	}
	bool number_unsigned(json::number_unsigned_t v)
	{
		return value(RawField{RawField::Unsigned, v, 0}) || dom_.number_unsigned(v);
	}
	bool number_float(json::number_float_t v, const string_t &s)
	{
		return value(RawField{RawField::Other}) || dom_.number_float(v, s);
	}
	bool string(string_t &v) { return value(RawField{RawField::Other}) || dom_.string(v); }
	bool binary(json::binary_t &v) { return value(RawField{RawField::Other}) || dom_.binary(v); }

	bool start_object(size_t len)
	{
		if (!open_container(true))
			return dom_.start_object(len);
		return true;
	}
	bool start_array(size_t len)
	{
		if (!open_container(false))
			return dom_.start_array(len);
		return true;
	}
	bool end_object() { return close_container() || dom_.end_object(); }
	bool end_array() { return close_container() || dom_.end_array(); }

	bool key(string_t &k)
	{
		nodes_pending_ = false;
		if (in_nodes_) {
			if (depth_ == kNodeDepth)
				field_ = nodes.field(k);
			return true;
		}
		nodes_pending_ = depth_ == 1 && root_object_ && k == "nodes";
		return dom_.key(k);
	}

	bool parse_error(size_t, const std::string &, const nlohmann::detail::exception &e)
	{
		parse_error_text = e.what();
		return false;
	}

private:
	// Depths while streaming: the "nodes" array's elements sit at 2, a node's fields at 3.
	static constexpr size_t kElementDepth = 2, kNodeDepth = 3;

	// A scalar. True when the node stream took it (not for the document).
	bool value(RawField v)
	{
		nodes_pending_ = false;
		if (!in_nodes_)
			return false;
		if (depth_ == kElementDepth)
			nodes.not_an_object();
		else if (depth_ == kNodeDepth && field_)
			*field_ = v;
		return true;
	}

	// True when the node stream took it.
	bool open_container(bool object)
	{
		if (depth_ == 0)
			root_object_ = object;
		bool starts_nodes = std::exchange(nodes_pending_, false) && !object;
		depth_++;
		if (starts_nodes) {
			in_nodes_ = true;
			nodes.restart(); // a repeated key: the last one counts, as in a document
			return true;
		}
		if (!in_nodes_)
			return false;
		if (depth_ == kNodeDepth) {
			element_object_ = object;
			field_ = nullptr;
			if (object)
				nodes.begin_node();
		} else if (depth_ == kNodeDepth + 1 && field_) {
			*field_ = RawField{RawField::Other}; // a field holding an array or object
			field_ = nullptr;
		}
		return true;
	}

	bool close_container()
	{
		depth_--;
		if (!in_nodes_)
			return false;
		if (depth_ == kElementDepth) {
			if (element_object_)
				nodes.end_node();
			else
				nodes.not_an_object();
		} else if (depth_ == 1) {
			// The array ends: the document gets an empty one in its place.
			in_nodes_ = false;
			dom_.start_array(0);
			dom_.end_array();
		}
		return true;
	}

	nlohmann::detail::json_sax_dom_parser<json> dom_{document, false};
	size_t depth_ = 0;          // containers open
	bool root_object_ = false;
	bool nodes_pending_ = false; // the last key was the top-level "nodes"
	bool in_nodes_ = false;
	bool element_object_ = false;
	RawField *field_ = nullptr; // the node field the next value is for
};

// The body as a std::streambuf, for nlohmann's stream input.
class BodyStreamBuf : public std::streambuf {
public:
	explicit BodyStreamBuf(BodyReader &body) : body_(body) {}

protected:
	int_type underflow() override
	{
		size_t n = body_.read(buf_, sizeof buf_);
		if (n == 0)
			return traits_type::eof();
		setg(buf_, buf_, buf_ + n);
		return traits_type::to_int_type(buf_[0]);
	}

private:
	BodyReader &body_;
	char buf_[1 << 16];
};

std::string one_line(std::string s)
{
	for (char &c : s)
		if (c == '\n' || c == '\r')
			c = ' ';
	return s;
}

} // namespace

Profile read_json_body(BodyReader &body)
{
	BodyHandler handler;
	{
		auto buf = std::make_unique<BodyStreamBuf>(body);
		std::istream in(buf.get());
		if (!json::sax_parse(in, &handler))
			corrupt("invalid JSON: " + one_line(handler.parse_error_text));
	}
	return profile_from_json(handler.document, handler.nodes);
}

namespace {

using ojson = nlohmann::ordered_json; // ordered, so that "format" and "version" lead

// A process; its container identity only when it has one.
ojson process_object(const ProfileProcess &p)
{
	ojson o = {{"pid", p.pid}, {"comm", p.comm}, {"cmdline", p.cmdline}};
	if (p.ns_pid)
		o["ns_pid"] = p.ns_pid;
	for (auto [key, value] : {std::pair{"cgroup", &p.cgroup}, {"container_runtime", &p.container_runtime},
				  {"container_id", &p.container_id}})
		if (!value->empty())
			o[key] = *value;
	if (p.sampled_fraction < 1)
		o["sampled_fraction"] = p.sampled_fraction;
	return o;
}

// The fields before "functions", as both versions write them.
ojson meta_object(const Profile &profile, int version)
{
	ojson processes = ojson::array(), probes = ojson::array();
	for (const ProfileProcess &p : profile.processes)
		processes.push_back(process_object(p));
	for (const ProfileProbe &p : profile.probes)
		probes.push_back({{"binary", p.binary}, {"provider", p.provider}, {"name", p.name},
			{"role", p.role}, {"sites", p.sites}});
	return {
		{"format", "usdtprof"},
		{"version", version},
		{"units", {{"time", "ns"}}},
		{"command", profile.command},
		{"processes", processes},
		{"probes", probes},
		{"start_unix_ns", profile.start_unix_ns},
		{"stop_unix_ns", profile.stop_unix_ns},
		{"duration_ns", profile.duration_ns},
		{"anomalies", profile.anomalies},
	};
}

// The fields after "nodes"; version 2 keeps the function kinds in its function table.
void add_tail(ojson &body, const Profile &profile, bool with_function_kinds)
{
	if (!profile.locations.empty())
		body["locations"] = profile.locations;
	if (profile.sampled_fraction < 1.0)
		body["sampled_fraction"] = profile.sampled_fraction;
	if (const auto &cal = profile.calibration) {
		ojson kinds = ojson::array();
		for (const ProbeCost &k : cal->kinds)
			kinds.push_back({{"kind", k.kind}, {"own_ns", k.own_ns}, {"caller_ns", k.caller_ns},
				{"own_spread_ns", k.own_spread_ns}, {"caller_spread_ns", k.caller_spread_ns},
				{"batches", k.batches}, {"rounds", k.rounds}, {"uncompensated_ns", k.uncompensated_ns}});
		ojson c = {{"kinds", kinds}};
		if (with_function_kinds) {
			std::vector<int32_t> function_kinds = cal->function_kinds;
			function_kinds.resize(profile.functions.size(), -1);
			c["function_kinds"] = function_kinds;
		}
		c["cost_ns"] = cal->cost_ns;
		c["offcpu_hook"] = cal->offcpu_hook;
		c["trace"] = cal->trace;
		body["calibration"] = c;
	}
	if (!profile.spans.empty()) {
		ojson spans = ojson::array();
		for (const ProfileSpan &sp : profile.spans) {
			ojson buckets = ojson::array();
			for (const auto &[i, n] : sp.buckets)
				buckets.push_back({i, n});
			spans.push_back({{"name", sp.name}, {"pid", sp.pid}, {"count", sp.count},
				{"total_ns", sp.total_ns}, {"min_ns", sp.min_ns}, {"max_ns", sp.max_ns},
				{"open", sp.open}, {"restarted", sp.restarted}, {"unstarted", sp.unstarted},
				{"buckets", buckets}});
		}
		body["spans"] = spans;
	}
	if (profile.per_thread) {
		body["per_thread"] = true;
		body["thread_nodes"] = profile.thread_nodes;
	}
}

// Names come from target binaries and may not be UTF-8: replaced rather than thrown.
std::string dump(const ojson &j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

} // namespace

void check_thread_nodes(const Profile &p)
{
	if (!p.thread_nodes.empty() && p.thread_nodes.back() >= p.nodes.size())
		corrupt("thread_nodes: node " + std::to_string(p.thread_nodes.back()) + " of " +
			std::to_string(p.nodes.size()));
}

std::string json_body(const Profile &profile)
{
	ojson nodes = ojson::array();
	for (const PathNode &n : profile.nodes) {
		nodes.push_back({{"parent", n.parent == kNoParent ? ojson(nullptr) : ojson(n.parent)},
			{"function", n.function}, {"pid", n.pid}, {"calls", n.calls}, {"open", n.open},
			{"self_ns", n.self_ns}, {"self_offcpu_ns", n.self_offcpu_ns}, {"total_ns", n.total_ns}});
		if (n.probe_ns)
			nodes.back()["probe_ns"] = n.probe_ns;
	}
	ojson body = meta_object(profile, kProfileVersionJson);
	body["functions"] = profile.functions;
	body["nodes"] = std::move(nodes);
	add_tail(body, profile, true);
	return dump(body) + "\n";
}

std::string meta_json(const Profile &profile, bool probe_time)
{
	ojson meta = meta_object(profile, kProfileVersionBinary);
	if (!profile.locations.empty())
		meta["locations"] = true;
	if (profile.distributions)
		meta["distributions"] = true;
	if (probe_time)
		meta["probe_time"] = true;
	Profile rest;
	rest.sampled_fraction = profile.sampled_fraction;
	rest.calibration = profile.calibration;
	rest.spans = profile.spans;
	rest.per_thread = profile.per_thread;
	rest.thread_nodes = profile.thread_nodes;
	add_tail(meta, rest, false);
	return dump(meta);
}

ProfileMeta profile_from_meta(const std::string &text)
{
	json j;
	try {
		j = json::parse(text);
	} catch (const json::exception &e) {
		corrupt("invalid JSON: " + one_line(e.what()));
	}
	Profile p = meta_from_json(j, kProfileVersionBinary);
	if (j.contains("locations") && !get_bool(j, "locations", ""))
		corrupt("locations: expected true");
	if (j.contains("locations"))
		p.locations.push_back(""); // a mark: the function table holds them
	if (j.contains("distributions") && !get_bool(j, "distributions", ""))
		corrupt("distributions: expected true");
	p.distributions = j.contains("distributions");
	if (j.contains("probe_time") && !get_bool(j, "probe_time", ""))
		corrupt("probe_time: expected true");
	sampled_fraction_from_json(j, p);
	if (j.contains("calibration"))
		p.calibration = calibration_from_json(j["calibration"], -1);
	spans_from_json(j, p);
	threads_from_json(j, p);
	return {std::move(p), j.contains("probe_time")};
}

} // namespace usdtprof
