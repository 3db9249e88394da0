// Writes a large synthetic profile that usdtprof reads as a valid recording:
// the bench (tools/bench/profile_scale.sh) and the format tests use it.
//
//   gen_profile [--paths N] [--functions F] [--depth D] [--processes P]
//               [--seed S] [--version V] -o FILE
//
// The call paths are a random walk over a stack of at most D frames: each new
// path is a child of the current innermost one, and now and then the walk
// returns (once in D/2 paths) to a random shallower depth, so depths spread
// over [1, D] and deepen with D (max and mean are printed). Each process has its own root; names look like
// runtime methods of ~30 characters, drawn from F of them. Counts and times
// are random but consistent (self <= total, total = self + children's
// totals), and the profile carries a calibration as `record` writes one, so
// reports compensate as they do for a real recording. Same arguments, same
// file.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/output_file.h"
#include "profile/profile.h"

namespace {

struct Options {
	uint64_t paths = 100000, functions = 10000, depth = 40, processes = 1, seed = 1;
	int version = usdtprof::kProfileVersion;
	std::string output;
};

[[noreturn]] void usage(const char *why)
{
	fprintf(stderr, "gen_profile: %s\nusage: gen_profile [--paths N] [--functions F] [--depth D] "
		"[--processes P] [--seed S] [--version V] -o FILE\n", why);
	exit(2);
}

Options parse(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (i + 1 >= argc)
			usage(("missing value after " + a).c_str());
		const char *v = argv[++i];
		char *end = nullptr;
		uint64_t n = strtoull(v, &end, 10);
		bool number = *v && !*end;
		if (a == "-o")
			o.output = v;
		else if (!number)
			usage(("not a number: " + a + " " + v).c_str());
		else if (a == "--paths")
			o.paths = n;
		else if (a == "--functions")
			o.functions = n;
		else if (a == "--depth")
			o.depth = n;
		else if (a == "--processes")
			o.processes = n;
		else if (a == "--seed")
			o.seed = n;
		else if (a == "--version")
			o.version = int(n);
		else
			usage(("unknown option " + a).c_str());
	}
	if (o.output.empty())
		usage("no -o FILE");
	if (!o.functions || !o.depth || !o.processes || o.paths < o.processes || o.paths >= UINT32_MAX)
		usage("need functions, depth, processes >= 1 and processes <= paths < 2^32");
	return o;
}

// "org.example.pkg17.Class0042.method0123": ~30-40 characters, unique per index.
std::string function_name(uint64_t i)
{
	char buf[96];
	snprintf(buf, sizeof buf, "org.example.pkg%02llu.Class%04llu.method%05llu",
		 (unsigned long long)(i % 97), (unsigned long long)(i / 7 % 10000), (unsigned long long)i);
	return buf;
}

usdtprof::Profile generate(const Options &o)
{
	usdtprof::Profile p;
	std::mt19937_64 rng(o.seed);
	auto below = [&](uint64_t n) { return n ? rng() % n : 0; };
	p.command = {"/usr/bin/synthetic", "--paths", std::to_string(o.paths)};
	for (uint64_t i = 0; i < o.processes; i++)
		p.processes.push_back({int32_t(1000 + i), "synthetic", {"/usr/bin/synthetic"}});
	p.probes = {{"/usr/bin/synthetic", "usdtprof", "entry", "entry", 1},
		    {"/usr/bin/synthetic", "usdtprof", "exit", "exit", 1}};
	p.start_unix_ns = 1'800'000'000'000'000'000;
	p.duration_ns = 60'000'000'000;
	p.stop_unix_ns = p.start_unix_ns + int64_t(p.duration_ns);
	for (const char *a : {"exit_mismatch", "exit_no_frame", "depth_overflow", "agg_full", "dropped_ns", "no_storage"})
		p.anomalies[a] = 0;
	for (uint64_t f = 0; f < o.functions; f++)
		p.functions.push_back(function_name(f));
	p.locations.assign(o.functions, "");
	for (uint64_t f = 0; f < o.functions; f++)
		p.locations[f] = "org/example/Class" + std::to_string(f / 7 % 10000) + ".java:" + std::to_string(10 + f % 500);

	p.nodes.reserve(o.paths);
	std::vector<uint32_t> stack; // the walk's current path, root first
	std::vector<uint32_t> depth_of;
	uint64_t depth_sum = 0;
	for (uint64_t i = 0; i < o.paths; i++) {
		usdtprof::PathNode n;
		if (i < o.processes) {
			n.pid = int32_t(1000 + i);
			n.function = uint32_t(i % o.functions);
			stack.assign(1, uint32_t(i));
		} else {
			if (stack.empty())
				stack.assign(1, uint32_t(below(o.processes)));
			n.parent = stack.back();
			n.pid = p.nodes[n.parent].pid;
			n.function = uint32_t(below(o.functions));
			// Deeper, unless at the limit or on a return to a shallower depth
			// (one in depth/2 paths: deeper limits make deeper walks).
			if (stack.size() + 1 < o.depth && below(std::max<uint64_t>(2, o.depth / 2)))
				stack.push_back(uint32_t(i));
			else
				stack.resize(1 + below(stack.size()));
		}
		n.calls = 1 + below(1000);
		n.self_ns = n.calls * (200 + below(50000));
		n.self_offcpu_ns = below(n.self_ns / 4 + 1);
		depth_of.push_back(n.parent == usdtprof::kNoParent ? 1 : depth_of[n.parent] + 1);
		depth_sum += depth_of.back();
		p.nodes.push_back(n);
	}
	// Inclusive times: parents come first, so add each subtree upwards.
	for (auto &n : p.nodes)
		n.total_ns = n.self_ns;
	for (size_t i = p.nodes.size(); i-- > 0;)
		if (p.nodes[i].parent != usdtprof::kNoParent)
			p.nodes[p.nodes[i].parent].total_ns += p.nodes[i].total_ns;

	usdtprof::Calibration cal;
	cal.kinds.push_back({"native", 120.0, 80.0, 3.0, 2.0, 24, 0});
	cal.function_kinds.assign(o.functions, 0);
	cal.cost_ns = 5'000'000;
	p.calibration = cal;
	uint32_t max_depth = 0;
	for (uint32_t d : depth_of)
		max_depth = std::max(max_depth, d);
	fprintf(stderr, "gen_profile: %llu paths, %llu functions, %llu processes, depth max %u, mean %.1f\n",
		(unsigned long long)o.paths, (unsigned long long)o.functions, (unsigned long long)o.processes,
		max_depth, double(depth_sum) / double(o.paths));
	return p;
}

} // namespace

int main(int argc, char **argv)
{
	Options o = parse(argc, argv);
	if (o.version != usdtprof::kProfileVersionJson && o.version != usdtprof::kProfileVersionBinary) {
		fprintf(stderr, "gen_profile: versions %d and %d only\n", usdtprof::kProfileVersionJson,
			usdtprof::kProfileVersionBinary);
		return 2;
	}
	usdtprof::Profile p = generate(o);
	auto write = [&](usdtprof::Sink &out) { usdtprof::write_profile(p, out, o.version); };
	if (auto r = usdtprof::write_output(o.output, write); !r) {
		fprintf(stderr, "gen_profile: %s\n", r.error().message.c_str());
		return 1;
	}
	return 0;
}
