// `make bench`: what a probe hit costs, side by side in one run.
//   plain     the loop without probes
//   untraced  the loop with the header's probes, no profiler attached
//   empty     an empty BPF program on the same sites: the uprobe floor
//             (the engine object's usdt_semaphore, loaded alone)
//   usdtprof  usdtprof's entry/exit programs on the same sites
//   trace     the same in trace mode: every hit also a ring-buffer event
//   pointer   usdtprof keying the function by an argument's value, its name
//             captured in the kernel (runtime presets: interned names)
//   content   usdtprof keying it by the content of the string an argument
//             points to (Ruby class names, PHP names, --pair ...:argN:str)
// Each round runs all five; the medians are reported. Then the context-switch
// program's own cost per switch, from the kernel's run-time statistics.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <functional>
#include <poll.h>

#include "engine/engine.h"
#include "engine/probes.h"
#include "target/process.h"
#include "usdtprof.skel.h"

using namespace usdtprof;

namespace {

enum class Mode { Plain, Untraced, Empty, Usdtprof, Trace, Pointer, Content };


[[noreturn]] void die(const std::string &msg)
{
	fprintf(stderr, "probe_bench: %s\n", msg.c_str());
	exit(1);
}

std::vector<ProbeRole> roles_for(Mode mode)
{
	if (mode != Mode::Pointer && mode != Mode::Content)
		return native_probe_roles();
	auto pair = parse_pair_spec(mode == Mode::Pointer ? "usdtprof:enter/exit:arg0:int" : "usdtprof:enter/exit:arg0:str");
	if (!pair)
		die(pair.error().message);
	return *pair;
}

double run_loop(const std::string &binary, unsigned long calls, Mode mode)
{
	std::string out = "/tmp/usdtprof-bench." + std::to_string(getpid());
	auto child = HeldChild::launch({binary, std::to_string(calls), out});
	if (!child)
		die(child.error().message);
	std::unique_ptr<Engine> engine;
	usdtprof_bpf *empty = nullptr;
	std::vector<UniqueFd> empty_links;
	if (mode != Mode::Plain && mode != Mode::Untraced) {
		auto maps = read_proc_maps(child->pid());
		if (!maps)
			die(maps.error().message);
		auto sites = find_sites(*maps, roles_for(mode));
		if (mode != Mode::Empty) {
			auto loaded = Engine::load(1024, mode == Mode::Trace ? 64 << 20 : 0);
			if (!loaded)
				die(loaded.error().message);
			engine = std::move(*loaded);
			attach_sites(*engine, child->pid(), sites);
		} else {
			// The engine object's empty program (usdt_semaphore), loaded
			// alone: no other program is loaded, so nothing else runs (and
			// the skeleton's attach step, which would attach the rest, is
			// never called). Attached exactly as usdtprof's programs are:
			// one multi link.
			empty = usdtprof_bpf__open();
			if (!empty)
				die("cannot open the empty program");
			bpf_program *prog;
			bpf_object__for_each_program(prog, empty->obj)
				bpf_program__set_autoload(prog, prog == empty->progs.usdt_semaphore);
			use_uprobe_multi(empty->progs.usdt_semaphore);
			if (usdtprof_bpf__load(empty))
				die("cannot load the empty program");
			std::vector<UprobeSite> uprobes;
			for (const FoundSite &f : sites)
				uprobes.push_back({f.site.pc_offset, f.site.semaphore_offset, 0});
			auto link = attach_uprobe_multi(bpf_program__fd(empty->progs.usdt_semaphore), child->pid(),
							sites.at(0).binary, uprobes);
			if (!link)
				die(link.error().message);
			empty_links.push_back(std::move(*link));
		}
	}
	if (auto r = child->release(); !r)
		die(r.error().message);
	// Trace mode: drain the events while the loop runs, as `usdtprof trace` does.
	size_t events = 0;
	std::function<void(const usdtprof_event &)> count = [&](const usdtprof_event &) { events++; };
	for (int pidfd = open_pidfd(child->pid()); engine;) {
		pollfd p = {pidfd, POLLIN, 0};
		bool done = poll(&p, 1, 10) == 1;
		engine->drain_events(count);
		if (done) {
			close(pidfd);
			break;
		}
	}
	if (child->wait() != 0)
		die(binary + " failed");
	if (mode == Mode::Trace && (events != 2 * calls || engine->anomalies()[USDTPROF_ANOM_LOST_EVENTS]))
		die("trace mode lost events");
	empty_links.clear();
	usdtprof_bpf__destroy(empty);
	double ns = 0;
	std::ifstream(out) >> ns;
	unlink(out.c_str());
	if (ns <= 0)
		die("no result from " + binary);
	return ns;
}

// Mean ns of one run of the context-switch program: on switches of threads
// that are not profiled (the early return), and of profiled threads.
std::pair<double, double> switch_cost(const std::string &pingpong)
{
	int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats < 0)
		die("cannot enable BPF run-time statistics");
	auto measure = [&](bool attach) {
		std::string out = "/tmp/usdtprof-bench." + std::to_string(getpid());
		auto child = HeldChild::launch({pingpong, "100000", out});
		if (!child)
			die(child.error().message);
		auto engine = Engine::load(1024);
		if (!engine)
			die(engine.error().message);
		if (attach)
			attach_sites(**engine, child->pid(), find_sites(*read_proc_maps(child->pid()), native_probe_roles()));
		if (auto r = child->release(); !r || child->wait() != 0)
			die("pingpong failed");
		unlink(out.c_str());
		auto [ns, runs] = (*engine)->run_stats("track_offcpu");
		return runs ? double(ns) / double(runs) : 0.0;
	};
	auto result = std::make_pair(measure(false), measure(true));
	close(stats);
	return result;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 4)
		die("usage: probe_bench LOOP_PLAIN LOOP_PROBED PINGPONG");
	const unsigned long calls = 1000000, traced_calls = 500000;
	const int rounds = 7;
	std::vector<double> plain, untraced, empty, ours, trace, pointer, content;
	for (int r = 0; r < rounds; r++) {
		plain.push_back(run_loop(argv[1], calls, Mode::Plain));
		untraced.push_back(run_loop(argv[2], calls, Mode::Untraced));
		empty.push_back(run_loop(argv[2], traced_calls, Mode::Empty));
		ours.push_back(run_loop(argv[2], traced_calls, Mode::Usdtprof));
		trace.push_back(run_loop(argv[2], traced_calls, Mode::Trace));
		pointer.push_back(run_loop(argv[2], traced_calls, Mode::Pointer));
		content.push_back(run_loop(argv[2], traced_calls, Mode::Content));
		fprintf(stderr,
			"round %d: plain %.2f untraced %.2f empty %.1f usdtprof %.1f trace %.1f pointer %.1f content %.1f "
			"ns/call\n",
			r + 1, plain.back(), untraced.back(), empty.back(), ours.back(), trace.back(), pointer.back(),
			content.back());
	}
	// Two probe hits per call (entry and exit).
	double p = median(plain), u = median(untraced), e = median(empty), o = median(ours), t = median(trace);
	double empty_hit = (e - u) / 2, ours_hit = (o - u) / 2;
	printf("| what | ns per call | ns per probe |\n|---|---|---|\n");
	printf("| no probes | %.2f | |\n", p);
	printf("| probes, not traced | %.2f | %.2f added |\n", u, (u - p) / 2);
	printf("| empty BPF program (floor) | %.1f | %.1f added |\n", e, empty_hit);
	printf("| usdtprof | %.1f | %.1f added |\n", o, ours_hit);
	printf("| usdtprof trace | %.1f | %.1f added |\n", t, (t - u) / 2);
	double pt = median(pointer), ct = median(content);
	printf("| usdtprof, keyed by value + captured name | %.1f | %.1f added |\n", pt, (pt - u) / 2);
	printf("| usdtprof, keyed by string content (4 bytes) + captured name | %.1f | %.1f added |\n", ct, (ct - u) / 2);
	printf("\nusdtprof / floor, added cost per hit: %.3fx (goal <= 1.15x); usdtprof's own BPF work: %.1f ns per hit\n",
	       ours_hit / empty_hit, ours_hit - empty_hit);
	printf("trace mode: %.1f ns more per event than aggregation alone\n", (t - o) / 2);
	printf("identity: keyed by value + captured name %.1f ns more per hit than by a static name's address; by "
	       "content %.1f ns more\n",
	       (pt - o) / 2, (ct - o) / 2);
	auto [idle, profiled] = switch_cost(argv[3]);
	printf("sched_switch program: %.1f ns per switch between unprofiled threads, %.1f ns per switch of a "
	       "profiled thread (kernel run-time statistics, which add their own ~30 ns)\n",
	       idle, profiled);
	return 0;
}
