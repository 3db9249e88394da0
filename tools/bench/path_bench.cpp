// `make bench`: reading and forgetting a million call paths in the kernel's table,
// side by side: in batches (bpf_map_lookup_batch / bpf_map_delete_batch, what
// record and monitor do) against one key per system call (what they did before,
// and still do on kernels without batch operations).
//
//   path_bench PATH_FILL [B] [ROUNDS [SAVE_DIR]]
//   path_bench --replay SAVE_DIR [PROFILE]
//   path_bench --monitor PATH_FILL [B [FILL_ROUNDS]]
//
// ROUNDS 0: only what record's stop pays (one batched read, then
// add_call_paths), timed; SAVE_DIR keeps that read (records.bin, the records
// as read_paths returns them, and names.tsv, each function id's name) so that
// --replay can run add_call_paths again on the same recording (two builds
// side by side, tools/bench/record_stop.sh) and write the profile
// (PROFILE) for cmp.
//
// --monitor: what a `monitor` interval pays for a million paths
// (MonitorSession::run's steps, each timed): `path_fill B FILL_ROUNDS` makes
// the same 1 + B + B^2 paths FILL_ROUNDS times (default 3), stopped between
// rounds; after each round an interval reads the table (read_paths and a
// look at each process), takes the deltas (PathDeltas), names them into the
// interval's profile (add_call_paths with the FunctionNamer), and writes its
// files (trim_profile at monitor's default 32 MB, then each monitor format,
// rendered as IntervalFilesSink does); after the first round, an interval in
// which nothing ran too. The last interval, after path_fill's exit, reports
// and forgets what is left. The deltas must add up to every path's calls.
//
// PATH_FILL (tools/bench/path_fill.c) runs under the engine's own probes, as
// `record` attaches them, and makes 1 + B + B^2 call paths (B = 1000: 1,001,001)
// in a table of 2^20 (record's default --max-paths). Once it has exited (its
// thread's exit added its path cache to the table), each round reads the
// whole table both ways, alternately (the order swapped every round, so that a
// trend in the machine's load weighs on both alike), timed by the wall clock
// and this process's CPU clock; the medians are printed. Then the paths are
// named and turned into profile nodes as `record` does (add_call_paths with the
// FunctionNamer), timed once; then forgotten, in chunks of 100,000, batched and
// key by key alternately, timed per path. Kernel memory: the tables' memlock
// (fdinfo, the kernel's own accounting) empty and full, per path.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <signal.h>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <vector>

#include "engine/call_paths.h"
#include "profile/profile.h"
#include "engine/engine.h"
#include "engine/probes.h"
#include "report/formats.h"
#include "session/interval.h"
#include "target/process.h"

using namespace usdtprof;

namespace {

[[noreturn]] void die(const std::string &msg)
{
	fprintf(stderr, "path_bench: %s\n", msg.c_str());
	exit(1);
}

// This process's CPU clock: all its threads (a read's upper half runs in a
// thread of its own, path_batches.h).
double cpu_now()
{
	timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double wall_now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// This process's minor page faults so far: the first touch of fresh memory,
// most of a first interval's cost beside the kernel's lookups.
long minor_faults_now()
{
	rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

struct Timed {
	double wall = 0, cpu = 0;
	long faults = 0; // minor page faults
};

template <typename F>
Timed timed(F &&f)
{
	double w = wall_now(), c = cpu_now();
	long m = minor_faults_now();
	f();
	return {wall_now() - w, cpu_now() - c, minor_faults_now() - m};
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

// SAVE_DIR: records.bin (each record's path id and its kernel record, the
// bytes the kernel gave) and names.tsv ("tgid func
// cost_kind name location" per function id, tab-separated; path_fill's names
// hold no tab or newline).
void save_recording(const std::string &dir, const PathColumns &records, const NameLookup &lookup)
{
	FILE *f = fopen((dir + "/records.bin").c_str(), "wb");
	bool written = f != nullptr;
	for (size_t i = 0; i < records.size(); i++) {
		usdtprof_path_stats s = kernel_stats_of(records.stats(i));
		written = written && fwrite(&records.path[i], sizeof(uint64_t), 1, f) == 1 &&
			  fwrite(&s, sizeof s, 1, f) == 1;
	}
	if (!written || fclose(f))
		die("cannot write " + dir + "/records.bin");
	std::set<std::pair<uint32_t, uint64_t>> ids;
	for (size_t i = 0; i < records.size(); i++)
		ids.insert({records.tgid(i), records.func[i]});
	f = fopen((dir + "/names.tsv").c_str(), "w");
	if (!f)
		die("cannot write " + dir + "/names.tsv");
	for (auto [tgid, func] : ids) {
		FunctionName n = function_name(lookup, tgid, func);
		fprintf(f, "%u\t%llu\t%d\t%s\t%s\n", tgid, (unsigned long long)func, n.cost_kind, n.name.c_str(),
			n.location.c_str());
	}
	fclose(f);
}

int replay(const std::string &dir, const char *profile_path)
{
	PathColumns records; // as record reads them
	FILE *f = fopen((dir + "/records.bin").c_str(), "rb");
	if (!f)
		die("cannot read " + dir + "/records.bin");
	uint64_t path;
	usdtprof_path_stats s;
	while (fread(&path, sizeof path, 1, f) == 1) {
		if (fread(&s, sizeof s, 1, f) != 1)
			die("cannot read " + dir + "/records.bin");
		records.append(path, s);
	}
	fclose(f);
	std::map<std::pair<uint32_t, uint64_t>, FunctionName> names;
	std::ifstream in(dir + "/names.tsv");
	for (std::string line; std::getline(in, line);) {
		std::vector<std::string> col;
		for (size_t at = 0;; at = line.find('\t', at) + 1) {
			col.push_back(line.substr(at, line.find('\t', at) - at));
			if (line.find('\t', at) == std::string::npos)
				break;
		}
		if (col.size() != 5)
			die("bad line in names.tsv: " + line);
		names[{uint32_t(std::stoul(col[0])), std::stoull(col[1])}] = {col[3], col[4], std::stoi(col[2])};
	}
	Profile profile;
	Timed t = timed([&] {
		add_call_paths(profile, records, [&](uint32_t tgid, uint64_t func) -> Result<FunctionName> {
			return names.at({tgid, func});
		});
	});
	printf("%zu call paths replayed: add_call_paths %.3f s (CPU %.3f)\n", records.size(), t.wall, t.cpu);
	if (profile_path)
		if (auto r = save_profile(profile, profile_path); !r)
			die(r.error().message);
	return 0;
}

long peak_rss_mb()
{
	rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_maxrss / 1024;
}

struct IntervalCost {
	Timed read, delta, named, files;
	size_t records = 0, reported = 0, forgotten = 0;
	uint64_t calls = 0, file_bytes = 0;
	long rss_read = 0, rss_delta = 0, rss_named = 0; // peak RSS after each step, MB
};

// One monitor interval, as MonitorSession::run does it (the window's end
// bumps the flush epoch; no sleep: path_fill is stopped or gone).
// The naming includes the namer's making: monitor makes one per interval
// (the names captured so far, the maps read then).
// Engine::read_paths into out's memory where the build has it (monitor's
// read since it does), else into a new vector (a baseline build's).
template <class E, class R> void read_into(const E &engine, R &out)
{
	if constexpr (requires { engine.read_paths(out, true); })
		engine.read_paths(out, true);
	else
		out = engine.read_paths();
}

// Whether this build's monitor streams its files (write_format); a
// baseline build before it renders each file whole.
template <class P> constexpr bool streams_files()
{
	return requires(const Format &format, P &profile, Sink &out) { write_format(format, profile, ReportOptions{}, out); };
}

// A monitor format's bytes as IntervalFilesSink makes them.
template <class P> size_t file_bytes(const Format &format, P &profile)
{
	if constexpr (streams_files<P>()) {
		ByteCounter out;
		write_format(format, profile, ReportOptions{}, out);
		return out.bytes;
	} else {
		return render_profile(format, profile, ReportOptions{}).size();
	}
}

// The read fills the last interval's records again (read_buffer), as
// monitor's does.
IntervalCost monitor_interval(Engine &engine, PathDeltas &deltas, const std::function<FunctionNamer()> &make_namer,
			      PathColumns &read_buffer)
{
	IntervalCost c;
	engine.bump_flush_epoch();
	PathColumns records = std::move(read_buffer);
	std::set<uint32_t> dead, alive;
	c.read = timed([&] {
		read_into(engine, records);
		for (const PathNode &r : records.nodes) // each process looked at once, as read_records does
			if (uint32_t tgid = uint32_t(r.pid); !dead.count(tgid) && !alive.count(tgid))
				(process_exists(int(tgid)) ? alive : dead).insert(tgid);
	});
	c.rss_read = peak_rss_mb();
	c.records = records.size();
	IntervalDelta delta;
	c.delta = timed([&] { delta = deltas.next(std::move(records), [&](uint32_t tgid) { return !dead.count(tgid); }); });
	c.rss_delta = peak_rss_mb();
	Profile profile;
	c.named = timed([&] {
		FunctionNamer namer = make_namer();
		add_call_paths(profile, delta.paths, [&](uint32_t tgid, uint64_t func) { return namer(tgid, func); });
	});
	c.rss_named = peak_rss_mb();
	for (const PathNode &n : profile.nodes)
		c.calls += n.calls;
	c.files = timed([&] {
		if (trim_profile(profile, 32ull << 20))
			die("the interval's profile was trimmed");
		for (const Format &f : formats())
			if (f.uses & kUseMonitor)
				c.file_bytes += file_bytes(f, profile);
	});
	engine.delete_paths(delta.forget, delta.forget_slots); // as monitor frees them
	c.reported = profile.nodes.size();
	read_buffer = std::move(delta.paths); // and the profile's nodes, as monitor keeps them
	read_buffer.nodes = std::move(profile.nodes);
	read_buffer.dists = std::move(profile.dists);
	c.forgotten = delta.forget.size();
	return c;
}

void print_interval(const char *what, const IntervalCost &c)
{
	printf("| %s | %zu | %zu | %.3f (%.3f) | %.3f (%.3f) | %.3f (%.3f) | **%.3f (%.3f)** | %ld, %ld, %ld | %.3f (%.3f) | %.1f MB | %ld, %ld, %ld, %ld MB |\n",
	       what, c.records, c.reported, c.read.wall, c.read.cpu, c.delta.wall, c.delta.cpu, c.named.wall,
	       c.named.cpu, c.read.wall + c.delta.wall + c.named.wall, c.read.cpu + c.delta.cpu + c.named.cpu,
	       c.read.faults, c.delta.faults, c.named.faults, c.files.wall, c.files.cpu, double(c.file_bytes) / 1e6,
	       c.rss_read, c.rss_delta, c.rss_named, peak_rss_mb());
	fflush(stdout);
}

// Waits until the child has stopped itself (true) or exited (false).
bool wait_stopped(int pid)
{
	int status;
	while (waitpid(pid, &status, WUNTRACED) < 0)
		if (errno != EINTR)
			die("waitpid: " + std::string(strerror(errno)));
	if (WIFSTOPPED(status))
		return true;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("path_fill failed");
	return false;
}

// path_fill launched and held, an engine of 1 << 20 paths loaded, its
// native probes attached (released by the caller).
struct HeldFill {
	HeldChild child;
	std::unique_ptr<Engine> engine;
	std::vector<Mapping> maps;
	TargetFiles opened;
	AttachedProbes attached;
};

std::unique_ptr<HeldFill> held_fill(const std::vector<std::string> &argv)
{
	auto child = HeldChild::launch(argv);
	if (!child)
		die(child.error().message);
	auto loaded = Engine::load(1u << 20);
	if (!loaded)
		die(loaded.error().message);
	auto maps = read_proc_maps(child->pid());
	if (!maps)
		die(maps.error().message);
	auto f = std::unique_ptr<HeldFill>(new HeldFill{std::move(*child), std::move(*loaded), std::move(*maps), {}, {}});
	int pid = f->child.pid();
	f->attached = attach_sites(*f->engine, find_sites(f->opened.of_process(pid, f->maps), pid, native_probe_roles()));
	return f;
}

int monitor_bench(const char *fill, int b, int fill_rounds)
{
	auto held = held_fill({fill, std::to_string(b), std::to_string(fill_rounds)});
	Engine &engine = *held->engine;
	HeldChild *child = &held->child;
	int pid = child->pid();
	const std::vector<Mapping> *maps = &held->maps;
	TargetFiles &opened = held->opened;
	AttachedProbes &attached = held->attached;
	if (auto r = child->release(); !r)
		die(r.error().message);
	PathDeltas deltas;
	PathColumns read_buffer;
	printf("monitor intervals of path_fill %d %d (%d paths a round), elapsed (CPU) s:\n\n", b, fill_rounds,
	       1 + b + b * b);
	printf("| interval | paths read | paths reported | read | deltas | naming | read + deltas + naming "
	       "| minor faults: read, deltas, naming | files (.data, .pb.gz) | files' bytes "
	       "| peak RSS after the read, deltas, naming, files |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
	uint64_t calls = 0;
	for (int round = 1;; round++) {
		bool stopped = wait_stopped(pid);
		if (!stopped)
			engine.stop();
		auto namer = [&] { return FunctionNamer(attached, engine.read_names(), {{pid, *maps}}, opened); };
		IntervalCost c = monitor_interval(engine, deltas, namer, read_buffer);
		calls += c.calls;
		std::string what = stopped ? "after round " + std::to_string(round) : "path_fill gone (forgotten)";
		print_interval(what.c_str(), c);
		if (stopped && round == 1) {
			IntervalCost idle = monitor_interval(engine, deltas, namer, read_buffer);
			calls += idle.calls;
			print_interval("nothing ran", idle);
		}
		if (!stopped)
			break;
		kill(pid, SIGCONT);
	}
	child->wait();
	uint64_t expected = uint64_t(fill_rounds) * uint64_t(1 + b + b * b);
	if (calls != expected)
		die("the intervals' calls add up to " + std::to_string(calls) + ", not " + std::to_string(expected));
	if (size_t left = engine.read_paths().size())
		die(std::to_string(left) + " paths left after the last interval");
	auto a = engine.anomalies();
	if (a[USDTPROF_ANOM_AGG_FULL] || a[USDTPROF_ANOM_DROPPED_NS])
		die("the table overflowed: agg_full " + std::to_string(a[USDTPROF_ANOM_AGG_FULL]));
	printf("\nthe intervals' calls add up to %llu, every path's, none lost\n", (unsigned long long)calls);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 2 && std::string(argv[1]) == "--replay")
		return replay(argv[2], argc > 3 ? argv[3] : nullptr);
	if (argc > 2 && std::string(argv[1]) == "--monitor")
		return monitor_bench(argv[2], argc > 3 ? atoi(argv[3]) : 1000, argc > 4 ? atoi(argv[4]) : 3);
	if (argc < 2)
		die("usage: path_bench PATH_FILL [B] [ROUNDS [SAVE_DIR]] | --replay SAVE_DIR [PROFILE]");
	int b = argc > 2 ? atoi(argv[2]) : 1000;
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	auto held = held_fill({argv[1], std::to_string(b)});
	Engine &engine = *held->engine;
	uint64_t empty_bytes = engine.path_tables_bytes();
	HeldChild *child = &held->child;
	const std::vector<Mapping> *maps = &held->maps;
	TargetFiles &opened = held->opened;
	AttachedProbes &attached = held->attached;
	Timed fill;
	fill = timed([&] {
		if (auto r = child->release(); !r)
			die(r.error().message);
		if (child->wait() != 0)
			die(std::string(argv[1]) + " failed");
	});
	engine.stop();
	uint64_t full_bytes = engine.path_tables_bytes();

	std::vector<double> batch_wall, batch_cpu, key_wall, key_cpu;
	size_t paths = 0;
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			bool batched = (r + k) % 2 == 0;
			std::vector<PathRecord> records;
			Timed t = timed([&] { records = engine.read_paths(batched); });
			if (paths && records.size() != paths)
				die("the two reads differ: " + std::to_string(records.size()) + " against " + std::to_string(paths));
			paths = records.size();
			(batched ? batch_wall : key_wall).push_back(t.wall);
			(batched ? batch_cpu : key_cpu).push_back(t.cpu);
		}
		fprintf(stderr, "round %d: batched %.3f s (CPU %.3f), key by key %.3f s (CPU %.3f)\n", r + 1,
			batch_wall.back(), batch_cpu.back(), key_wall.back(), key_cpu.back());
	}
	auto a = engine.anomalies();
	if (a[USDTPROF_ANOM_AGG_FULL] || a[USDTPROF_ANOM_DROPPED_NS])
		die("the table overflowed: agg_full " + std::to_string(a[USDTPROF_ANOM_AGG_FULL]));

	PathColumns records; // as record reads them
	Timed read = timed([&] { engine.read_paths(records); });
	Profile profile;
	FunctionNamer namer(attached, engine.read_names(), {{child->pid(), *maps}}, opened);
	if (rounds == 0 && argc > 4) { // before add_call_paths takes the nodes; a namer of its own (no names cached)
		FunctionNamer names(attached, engine.read_names(), {{child->pid(), *maps}}, opened);
		save_recording(argv[4], records, [&](uint32_t tgid, uint64_t func) { return names(tgid, func); });
	}
	Timed named = timed([&] {
		add_call_paths(profile, records, [&](uint32_t tgid, uint64_t func) { return namer(tgid, func); });
	});
	if (profile.nodes.size() != records.size() || profile.functions.size() < size_t(b))
		die("add_call_paths made " + std::to_string(profile.nodes.size()) + " nodes of " +
		    std::to_string(profile.functions.size()) + " functions");
	if (rounds == 0) {
		// What record's stop pays, alone (for perf): one batched read, then the naming.
		printf("%zu call paths: read (batched) %.3f s (CPU %.3f, %ld minor faults), add_call_paths %.3f s "
		       "(CPU %.3f, %ld minor faults)\n",
		       records.size(), read.wall, read.cpu, read.faults, named.wall, named.cpu, named.faults);
		return 0;
	}

	// Forgotten in chunks, batched and key by key alternately.
	std::vector<uint64_t> ids = records.path;
	std::vector<uint32_t> slots = records.slot;
	Timed del_batch, del_key;
	size_t n_batch = 0, n_key = 0;
	const size_t chunk = 100000;
	for (size_t i = 0, c = 0; i < ids.size(); i += chunk, c++) {
		size_t end = std::min(ids.size(), i + chunk);
		std::vector<uint64_t> part(ids.begin() + long(i), ids.begin() + long(end));
		std::vector<uint32_t> part_slots(slots.begin() + long(i), slots.begin() + long(end));
		bool batched = c % 2 == 0;
		Timed t = timed([&] { engine.delete_paths(part, part_slots, batched); });
		Timed &sum = batched ? del_batch : del_key;
		sum.wall += t.wall;
		sum.cpu += t.cpu;
		(batched ? n_batch : n_key) += part.size();
	}
	if (size_t left = engine.read_paths().size())
		die(std::to_string(left) + " paths left after deleting them all");

	double per_path = double(full_bytes - empty_bytes) / double(paths);
	printf("%zu call paths (path_fill %d, filled in %.1f s under the probes), %d rounds, medians:\n\n", paths, b,
	       fill.wall, rounds);
	printf("| what | elapsed | CPU |\n|---|---|---|\n");
	printf("| read, batched (4096 per call) | %.3f s | %.3f s |\n", median(batch_wall), median(batch_cpu));
	printf("| read, key by key | %.3f s | %.3f s |\n", median(key_wall), median(key_cpu));
	printf("| ratio key by key / batched | %.2f | %.2f |\n", median(key_wall) / median(batch_wall),
	       median(key_cpu) / median(batch_cpu));
	printf("| name and build the nodes (add_call_paths) | %.3f s | %.3f s |\n", named.wall, named.cpu);
	printf("| forget, batched, per 1M paths | %.3f s | %.3f s |\n", del_batch.wall / double(n_batch) * 1e6,
	       del_batch.cpu / double(n_batch) * 1e6);
	printf("| forget, key by key, per 1M paths | %.3f s | %.3f s |\n", del_key.wall / double(n_key) * 1e6,
	       del_key.cpu / double(n_key) * 1e6);
	printf("\nkernel memory (memlock of the call-path table: paths, its slots and other_paths): %llu bytes empty, %llu full: %.1f bytes per path\n",
	       (unsigned long long)empty_bytes, (unsigned long long)full_bytes, per_path);
	return 0;
}
