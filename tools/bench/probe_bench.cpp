// `make bench`: what a probe hit costs, side by side in one run.
//   plain     the loop without probes
//   untraced  the loop with the header's probes, no profiler attached
//   empty     an empty BPF program on the same sites: the uprobe floor
//   usdtprof  usdtprof's entry/exit programs on the same sites
// Each round runs all four; the medians are reported.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <bpf/libbpf.h>

#include "bench_empty.skel.h"
#include "engine.h"
#include "probes.h"
#include "process.h"

using namespace usdtprof;

namespace {

enum class Mode { Plain, Untraced, Empty, Usdtprof };

[[noreturn]] void die(const std::string &msg)
{
	fprintf(stderr, "probe_bench: %s\n", msg.c_str());
	exit(1);
}

double run_loop(const std::string &binary, unsigned long calls, Mode mode)
{
	std::string out = "/tmp/usdtprof-bench." + std::to_string(getpid());
	auto child = HeldChild::launch({binary, std::to_string(calls), out});
	if (!child)
		die(child.error().message);
	std::unique_ptr<Engine> engine;
	bench_empty_bpf *empty = nullptr;
	std::vector<UniqueFd> empty_links;
	if (mode == Mode::Empty || mode == Mode::Usdtprof) {
		auto maps = read_proc_maps(child->pid());
		if (!maps)
			die(maps.error().message);
		auto sites = find_native_sites(*maps);
		if (mode == Mode::Usdtprof) {
			auto loaded = Engine::load(1024);
			if (!loaded)
				die(loaded.error().message);
			engine = std::move(*loaded);
			attach_sites(*engine, child->pid(), sites);
		} else {
			// Attached exactly as usdtprof's programs are: one multi link.
			empty = bench_empty_bpf__open();
			if (!empty)
				die("cannot open the empty program");
			use_uprobe_multi(empty->progs.empty);
			if (bench_empty_bpf__load(empty))
				die("cannot load the empty program");
			std::vector<UprobeSite> uprobes;
			for (const FoundSite &f : sites)
				uprobes.push_back({f.site.pc_offset, f.site.semaphore_offset, 0});
			auto link = attach_uprobe_multi(bpf_program__fd(empty->progs.empty), child->pid(),
							sites.at(0).binary, uprobes);
			if (!link)
				die(link.error().message);
			empty_links.push_back(std::move(*link));
		}
	}
	if (auto r = child->release(); !r)
		die(r.error().message);
	if (child->wait() != 0)
		die(binary + " failed");
	empty_links.clear();
	bench_empty_bpf__destroy(empty);
	double ns = 0;
	std::ifstream(out) >> ns;
	unlink(out.c_str());
	if (ns <= 0)
		die("no result from " + binary);
	return ns;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3)
		die("usage: probe_bench LOOP_PLAIN LOOP_PROBED");
	const unsigned long calls = 1000000, traced_calls = 500000;
	const int rounds = 7;
	std::vector<double> plain, untraced, empty, ours;
	for (int r = 0; r < rounds; r++) {
		plain.push_back(run_loop(argv[1], calls, Mode::Plain));
		untraced.push_back(run_loop(argv[2], calls, Mode::Untraced));
		empty.push_back(run_loop(argv[2], traced_calls, Mode::Empty));
		ours.push_back(run_loop(argv[2], traced_calls, Mode::Usdtprof));
		fprintf(stderr, "round %d: plain %.2f untraced %.2f empty %.1f usdtprof %.1f ns/call\n", r + 1,
			plain.back(), untraced.back(), empty.back(), ours.back());
	}
	// Two probe hits per call (entry and exit).
	double p = median(plain), u = median(untraced), e = median(empty), o = median(ours);
	double empty_hit = (e - u) / 2, ours_hit = (o - u) / 2;
	printf("| what | ns per call | ns per probe |\n|---|---|---|\n");
	printf("| no probes | %.2f | |\n", p);
	printf("| probes, not traced | %.2f | %.2f added |\n", u, (u - p) / 2);
	printf("| empty BPF program (floor) | %.1f | %.1f added |\n", e, empty_hit);
	printf("| usdtprof | %.1f | %.1f added |\n", o, ours_hit);
	printf("\nusdtprof / floor, added cost per hit: %.3fx (goal <= 1.15x); usdtprof's own BPF work: %.1f ns per hit\n",
	       ours_hit / empty_hit, ours_hit - empty_hit);
	return 0;
}
