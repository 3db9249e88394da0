#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <random>
#include <sys/stat.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "report/formats.h"
#include "profile/profile.h"

using namespace usdtprof;
using nlohmann::json;

namespace {

Profile sample_profile()
{
	Profile p;
	p.command = {"./app", "--flag", "arg with space"};
	p.processes = {{100, "app", {"./app", "--flag"}}, {101, "app-child", {}}};
	p.probes = {{"/usr/bin/app", "usdtprof", "func_entry", "entry", 3}, {"/usr/bin/app", "usdtprof", "func_exit", "exit", 3}};
	p.start_unix_ns = 1700000000123456789;
	p.stop_unix_ns = 1700000001123456789;
	p.duration_ns = 1000000000;
	p.anomalies = {{"exit_mismatch", 2}, {"agg_full", 0}};
	p.functions = {"int main(int, char**)", "void work(int)", "quote\"back\\slash;semi%pct\x01"};
	p.nodes = {
		{kNoParent, 0, 100, 1, 0, 1000, 6000},
		{0, 1, 100, 10, 1, 3000, 5000, 1200},
		{1, 2, 100, 4, 0, 2000, 2000},
		{kNoParent, 0, 101, 1, 1, UINT64_MAX - 1, UINT64_MAX},
	};
	return p;
}

// Header + body with a correct size and checksum, to reach the JSON checks.
std::string wrap(const std::string &body)
{
	uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef *>(body.data()), static_cast<uInt>(body.size())));
	char header[64];
	snprintf(header, sizeof header, "usdtprof-profile 1 %zu %08x\n", body.size(), crc);
	return header + body;
}

json sample_body()
{
	std::string bytes = serialize_profile(sample_profile(), kProfileVersionJson);
	return json::parse(bytes.substr(bytes.find('\n') + 1));
}

std::string error_of(const std::string &bytes)
{
	Result<Profile> r = parse_profile(bytes);
	return r ? "" : r.error().message;
}

bool starts_with(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }

struct TempDir {
	std::string path;
	TempDir()
	{
		char tmpl[] = "/tmp/usdtprof-test-XXXXXX";
		REQUIRE(mkdtemp(tmpl));
		path = tmpl;
	}
	~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
	std::vector<std::string> entries() const
	{
		std::vector<std::string> out;
		DIR *d = opendir(path.c_str());
		while (dirent *e = readdir(d))
			if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
				out.push_back(e->d_name);
		closedir(d);
		return out;
	}
};

} // namespace

TEST_CASE("profile: serialize then parse gives the same profile", "[profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	INFO("version " << version);
	Profile p = sample_profile();
	std::string bytes = serialize_profile(p, version);
	CHECK(starts_with(bytes, "usdtprof-profile " + std::to_string(version) + " "));
	Result<Profile> r = parse_profile(bytes);
	REQUIRE(r.ok());
	CHECK(r->command == p.command);
	REQUIRE(r->processes.size() == 2);
	CHECK(r->processes[0].cmdline == p.processes[0].cmdline);
	CHECK(r->processes[1].comm == "app-child");
	REQUIRE(r->probes.size() == 2);
	CHECK(r->probes[1].role == "exit");
	CHECK(r->probes[1].sites == 3);
	CHECK(r->start_unix_ns == p.start_unix_ns);
	CHECK(r->stop_unix_ns == p.stop_unix_ns);
	CHECK(r->duration_ns == p.duration_ns);
	CHECK(r->anomalies == p.anomalies);
	CHECK(r->functions == p.functions);
	REQUIRE(r->nodes.size() == p.nodes.size());
	for (size_t i = 0; i < p.nodes.size(); i++) {
		const PathNode &a = p.nodes[i], &b = r->nodes[i];
		CHECK((a.parent == b.parent && a.function == b.function && a.pid == b.pid && a.calls == b.calls &&
			a.open == b.open && a.self_ns == b.self_ns && a.total_ns == b.total_ns &&
			a.self_offcpu_ns == b.self_offcpu_ns));
	}
	CHECK(serialize_profile(*r, version) == bytes);
}

TEST_CASE("profile: record writes version 2", "[profile]")
{
	CHECK(starts_with(serialize_profile(sample_profile()), "usdtprof-profile 2 "));
}

TEST_CASE("profile: the body is self-describing JSON", "[profile]")
{
	json j = sample_body();
	CHECK(j["format"] == "usdtprof");
	CHECK(j["version"] == 1);
	CHECK(j["units"]["time"] == "ns");
	CHECK(j["nodes"][0]["parent"].is_null());
	CHECK(j["nodes"][1]["parent"] == 0);
}

TEST_CASE("profile: an empty profile round-trips", "[profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	Result<Profile> r = parse_profile(serialize_profile(Profile{}, version));
	REQUIRE(r.ok());
	CHECK(r->nodes.empty());
	CHECK(r->functions.empty());
}

TEST_CASE("profile: save then load through a file", "[profile]")
{
	TempDir dir;
	std::string path = dir.path + "/out.profile";
	REQUIRE(save_profile(sample_profile(), path).ok());
	// Overwriting an existing profile works too.
	REQUIRE(save_profile(sample_profile(), path).ok());
	CHECK(dir.entries() == std::vector<std::string>{"out.profile"});
	Result<Profile> r = load_profile(path);
	REQUIRE(r.ok());
	CHECK(serialize_profile(*r) == serialize_profile(sample_profile()));
	CHECK(starts_with(serialize_profile(*r), "usdtprof-profile 2 "));
}

TEST_CASE("profile: save failures leave no file behind", "[profile]")
{
	TempDir dir;
	std::string missing = dir.path + "/no/such/dir/out.profile";
	Result<void> r = save_profile(sample_profile(), missing);
	REQUIRE_FALSE(r.ok());
	CHECK(r.error().message == "cannot write " + missing + ": No such file or directory");
	CHECK(dir.entries().empty());

	// rename() onto a directory fails after the temp file was written: it is removed.
	std::string taken = dir.path + "/taken";
	REQUIRE(mkdir(taken.c_str(), 0755) == 0);
	r = save_profile(sample_profile(), taken);
	REQUIRE_FALSE(r.ok());
	CHECK(starts_with(r.error().message, "cannot write " + taken + ": "));
	CHECK(dir.entries() == std::vector<std::string>{"taken"});
}

TEST_CASE("profile: load errors name the file", "[profile]")
{
	TempDir dir;
	std::string path = dir.path + "/p";
	Result<Profile> r = load_profile(path);
	REQUIRE_FALSE(r.ok());
	CHECK(r.error().message == path + ": No such file or directory");

	std::ofstream(path) << "hello\n";
	r = load_profile(path);
	REQUIRE_FALSE(r.ok());
	CHECK(r.error().message == path + ": not a usdtprof profile");

	std::ofstream(path, std::ios::trunc).flush();
	CHECK(load_profile(path).error().message == path + ": empty file");
	CHECK(load_profile(dir.path).error().message == dir.path + ": Is a directory");
}

TEST_CASE("profile: rejects empty and foreign files", "[profile]")
{
	CHECK(error_of("") == "empty file");
	CHECK(error_of("hello world\n") == "not a usdtprof profile");
	CHECK(error_of("{\"format\":\"usdtprof\"}") == "not a usdtprof profile");
	CHECK(error_of(std::string("\x7f" "ELF\x02\x01\x01", 7)) == "not a usdtprof profile");
	CHECK(error_of("usdtprof-profile x 1 00000000\n{") == "corrupt: malformed header line");
	CHECK(error_of("usdtprof-profile 1 2 0000000\n{}") == "corrupt: malformed header line");
	CHECK(error_of("usdtprof-profile 1 2\n{}") == "corrupt: malformed header line");
}

TEST_CASE("profile: rejects every truncation", "[profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	std::string bytes = serialize_profile(sample_profile(), version);
	size_t header = bytes.find('\n') + 1;
	for (size_t len = 1; len < bytes.size(); len++) {
		std::string e = error_of(bytes.substr(0, len));
		INFO("length " << len << ": " << e);
		CHECK(starts_with(e, "truncated: "));
	}
	std::string body_size = std::to_string(bytes.size() - header);
	CHECK(error_of(bytes.substr(0, header + 10)) == "truncated: header announces " + body_size + " bytes, 10 present");
	CHECK(error_of(bytes.substr(0, header)) == "truncated: header announces " + body_size + " bytes, 0 present");
}

TEST_CASE("profile: rejects any flipped byte", "[profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	std::string bytes = serialize_profile(sample_profile(), version);
	size_t header = bytes.find('\n') + 1;
	for (size_t i = 0; i < bytes.size(); i++) {
		std::string bad = bytes;
		bad[i] ^= 0x01;
		std::string e = error_of(bad);
		INFO("byte " << i << ": " << e);
		CHECK_FALSE(e.empty());
		CHECK(e.find('\n') == std::string::npos);
		if (i >= header)
			CHECK(e == "corrupt: checksum mismatch");
	}
}

TEST_CASE("profile: rejects other versions and trailing bytes", "[profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	std::string bytes = serialize_profile(sample_profile(), version);
	std::string v3 = bytes;
	v3[17] = '3';
	CHECK(error_of(v3) == "unsupported profile version 3 (this usdtprof reads versions 1 and 2)");
	CHECK(error_of("usdtprof-profile 17 a new header layout\n") ==
		"unsupported profile version 17 (this usdtprof reads versions 1 and 2)");
	CHECK(starts_with(error_of(bytes + "x"), "corrupt: trailing data after the announced "));
	CHECK(starts_with(error_of(bytes + bytes), "corrupt: "));
}

TEST_CASE("profile: rejects bad JSON and structural errors", "[profile]")
{
	CHECK(starts_with(error_of(wrap("{\"format\": ")), "corrupt: invalid JSON: "));
	CHECK(error_of(wrap("[]")) == "corrupt: body: expected object, got array");

	auto with = [](const std::function<void(json &)> &edit) {
		json j = sample_body();
		edit(j);
		return error_of(wrap(j.dump()));
	};
	CHECK(with([](json &) {}) == "");
	CHECK(with([](json &j) { j["nodes"][1]["parent"] = 1; }) == "corrupt: nodes[1].parent: 1 is not an earlier node");
	CHECK(with([](json &j) { j["nodes"][1]["parent"] = 3; }) == "corrupt: nodes[1].parent: 3 is not an earlier node");
	CHECK(with([](json &j) { j["nodes"][0]["parent"] = 0; }) == "corrupt: nodes[0].parent: 0 is not an earlier node");
	CHECK(with([](json &j) { j["nodes"][2]["function"] = 3; }) ==
		"corrupt: nodes[2].function: index 3 out of range (3 functions)");
	CHECK(with([](json &j) { j["nodes"][2]["self_ns"] = 2001; }) == "corrupt: nodes[2].self_ns exceeds total_ns");
	CHECK(with([](json &j) { j["nodes"][2].erase("calls"); }) == "corrupt: nodes[2].calls: missing");
	CHECK(starts_with(with([](json &j) { j["nodes"][2]["calls"] = "4"; }), "corrupt: nodes[2].calls: expected an unsigned"));
	CHECK(starts_with(with([](json &j) { j["nodes"][2]["calls"] = -4; }), "corrupt: nodes[2].calls: expected an unsigned"));
	CHECK(starts_with(with([](json &j) { j["nodes"][2]["calls"] = 4.5; }), "corrupt: nodes[2].calls: expected an unsigned"));
	CHECK(starts_with(with([](json &j) { j["nodes"][2]["pid"] = 1LL << 40; }), "corrupt: nodes[2].pid: expected an integer"));
	CHECK(with([](json &j) { j["nodes"][2] = 7; }) == "corrupt: nodes[2]: expected object");
	CHECK(with([](json &j) { j["functions"][0] = 7; }) == "corrupt: functions: expected an array of strings");
	CHECK(with([](json &j) { j["anomalies"]["agg_full"] = "x"; }) == "corrupt: anomalies.agg_full: expected an unsigned integer");
	CHECK(with([](json &j) { j.erase("processes"); }) == "corrupt: processes: missing");
	CHECK(with([](json &j) { j["probes"] = json::object(); }) == "corrupt: probes: expected array, got object");
	CHECK(with([](json &j) { j["format"] = "other"; }) == "corrupt: format: expected \"usdtprof\"");
	CHECK(with([](json &j) { j["version"] = 2; }) == "corrupt: version: does not match the header");
	CHECK(with([](json &j) { j["units"]["time"] = "us"; }) == "corrupt: units.time: expected \"ns\"");
}

TEST_CASE("profile: streamed call paths are checked as a document's were", "[profile]")
{
	auto with = [](const std::function<void(json &)> &edit) {
		json j = sample_body();
		edit(j);
		return error_of(wrap(j.dump()));
	};
	// Unknown fields, nested or not, are ignored; a field holding a container is a wrong type.
	CHECK(with([](json &j) { j["nodes"][1]["extra"] = {{"calls", "x"}, {"parent", {1, 2}}}; }) == "");
	CHECK(starts_with(with([](json &j) { j["nodes"][1]["calls"] = {1}; }), "corrupt: nodes[1].calls: expected an unsigned"));
	CHECK(starts_with(with([](json &j) { j["nodes"][1]["open"] = {{"a", 1}}; }), "corrupt: nodes[1].open: expected an unsigned"));
	CHECK(with([](json &j) { j["nodes"][2] = {1, 2}; }) == "corrupt: nodes[2]: expected object");
	CHECK(with([](json &j) { j["nodes"][2] = json::array({json::object()}); }) == "corrupt: nodes[2]: expected object");
	CHECK(with([](json &j) { j["nodes"] = json::object(); }) == "corrupt: nodes: expected array, got object");
	CHECK(with([](json &j) { j.erase("nodes"); }) == "corrupt: nodes: missing");
	// The first bad node is reported, after the fields checked before the nodes.
	CHECK(with([](json &j) { j["nodes"][3]["pid"] = "x"; j["nodes"][1]["function"] = 9; }) ==
		"corrupt: nodes[1].function: index 9 out of range (3 functions)");
	CHECK(with([](json &j) { j["nodes"][1]["function"] = 9; j["nodes"][1]["pid"] = "x"; }) ==
		"corrupt: nodes[1].function: index 9 out of range (3 functions)");
	CHECK(starts_with(with([](json &j) { j["nodes"][1]["pid"] = "x"; j["nodes"][2]["function"] = 9; }),
		"corrupt: nodes[1].pid: "));
	CHECK(with([](json &j) { j["nodes"][1]["pid"] = "x"; j.erase("functions"); }) == "corrupt: functions: missing");
	// A repeated key: the last one counts, as in a document.
	std::string body = sample_body().dump();
	std::string twice = body.substr(0, body.size() - 1) + ",\"nodes\":[]}";
	Result<Profile> r = parse_profile(wrap(twice));
	REQUIRE(r.ok());
	CHECK(r->nodes.empty());
	CHECK(error_of(wrap(body.substr(0, body.size() - 1) + ",\"nodes\":7}")) == "corrupt: nodes: expected array, got number");
}

namespace {

// A large profile as tools/gen_profile makes one: a random walk over a stack of
// at most 40 frames, 2000 names, two processes, a calibration.
Profile walk_profile(size_t paths)
{
	Profile p;
	std::mt19937_64 rng(7);
	p.processes = {{10, "a", {"a"}}, {11, "b", {"b", "-x"}}};
	for (int f = 0; f < 2000; f++) {
		p.functions.push_back("org.example.Class" + std::to_string(f % 97) + ".method" + std::to_string(f));
		p.locations.push_back(f % 3 ? "Class.java:" + std::to_string(f) : "");
	}
	p.calibration = Calibration{{{"native", 120.0, 80.0, 3.0, 2.0, 24, 0}}, std::vector<int32_t>(2000, 0)};
	p.calibration->function_kinds[5] = -1;
	std::vector<uint32_t> stack;
	for (size_t i = 0; i < paths; i++) {
		PathNode n;
		if (i < 2 || stack.empty()) {
			n.pid = 10 + int32_t(i % 2);
			stack.assign(1, uint32_t(i));
		} else {
			n.parent = stack.back();
			n.pid = p.nodes[n.parent].pid;
			if (stack.size() < 40 && rng() % 20)
				stack.push_back(uint32_t(i));
			else
				stack.resize(1 + rng() % stack.size());
		}
		n.function = uint32_t(rng() % 2000);
		n.calls = 1 + rng() % 1000;
		n.open = rng() % 50 == 0;
		n.self_ns = n.calls * (200 + rng() % 50000);
		n.self_offcpu_ns = rng() % (n.self_ns / 4 + 1);
		p.nodes.push_back(n);
	}
	for (auto &n : p.nodes)
		n.total_ns = n.self_ns;
	for (size_t i = p.nodes.size(); i-- > 0;)
		if (p.nodes[i].parent != kNoParent)
			p.nodes[p.nodes[i].parent].total_ns += p.nodes[i].total_ns;
	return p;
}

} // namespace

TEST_CASE("profile: a 100k-path profile loads and reports identically from both versions", "[profile]")
{
	Profile p = walk_profile(100000);
	std::string v1 = serialize_profile(p, kProfileVersionJson), v2 = serialize_profile(p, kProfileVersionBinary);
	CHECK(v2.size() * 3 < v1.size());
	Result<Profile> a = parse_profile(v1), b = parse_profile(v2);
	REQUIRE(a.ok());
	REQUIRE(b.ok());
	// Each reads back to the same file, in its own version and in the other.
	CHECK(serialize_profile(*a, kProfileVersionJson) == v1);
	CHECK(serialize_profile(*b, kProfileVersionJson) == v1);
	CHECK(serialize_profile(*a, kProfileVersionBinary) == v2);
	ReportOptions tree;
	tree.view = "tree";
	for (const Format &f : formats()) {
		if (f.timeline)
			continue;
		INFO(f.name);
		CHECK(render_profile(f, *a, ReportOptions{}) == render_profile(f, *b, ReportOptions{}));
		CHECK(render_profile(f, *a, tree) == render_profile(f, *b, tree));
	}
}

TEST_CASE("profile: a per-thread profile's thread frames round-trip; older files are not per thread", "[profile][per_thread]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	INFO("version " << version);
	Result<Profile> old = parse_profile(serialize_profile(sample_profile(), version));
	REQUIRE(old.ok());
	CHECK_FALSE(old->per_thread);
	CHECK(serialize_profile(sample_profile(), version).find("per_thread") == std::string::npos);

	Profile p = sample_profile();
	p.per_thread = true;
	p.thread_nodes = {0, 3};
	std::string bytes = serialize_profile(p, version);
	Result<Profile> r = parse_profile(bytes);
	REQUIRE(r.ok());
	CHECK(r->per_thread);
	CHECK(r->thread_nodes == std::vector<uint32_t>{0, 3});
	CHECK(serialize_profile(*r, version) == bytes);

	p.thread_nodes = {0, 4}; // no node 4
	CHECK(error_of(serialize_profile(p, version)).find("thread_nodes") != std::string::npos);
	p.thread_nodes = {3, 0};
	CHECK(error_of(serialize_profile(p, version)).find("thread_nodes: expected ascending") != std::string::npos);
}

TEST_CASE("profile: profile_file_size is the size of the bytes written", "[profile]")
{
	CHECK(profile_file_size(Profile{}) == serialize_profile(Profile{}).size());
	for (size_t paths : {1, 10, 100000}) {
		Profile p = walk_profile(paths);
		CHECK(profile_file_size(p) == serialize_profile(p).size());
	}
}

TEST_CASE("profile: probe time measured in band round-trips in both versions; a path's can not exceed its self time",
	  "[profile]")
{
	int version = GENERATE(kProfileVersionJson, kProfileVersionBinary);
	INFO("version " << version);
	Profile p = sample_profile();
	REQUIRE(p.nodes.size() >= 2);
	p.nodes[1].probe_ns = p.nodes[1].self_ns / 2;
	std::string bytes = serialize_profile(p, version);
	Result<Profile> r = parse_profile(bytes);
	REQUIRE(r.ok());
	CHECK(has_probe_time(*r));
	for (size_t i = 0; i < p.nodes.size(); i++)
		CHECK(r->nodes[i].probe_ns == p.nodes[i].probe_ns);
	CHECK(serialize_profile(*r, version) == bytes);
	// Without any, the file is as an older usdtprof wrote it.
	Profile none = sample_profile();
	Result<Profile> back = parse_profile(serialize_profile(none, version));
	REQUIRE(back.ok());
	CHECK_FALSE(has_probe_time(*back));
	// More than the self time it is part of: corrupt.
	p.nodes[1].probe_ns = p.nodes[1].self_ns + 1;
	Result<Profile> bad = parse_profile(serialize_profile(p, version));
	REQUIRE_FALSE(bad.ok());
	CHECK(bad.error().message.find("probe_ns exceeds self_ns") != std::string::npos);
}
