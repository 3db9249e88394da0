// The loaded BPF engine: owns the skeleton and every link (RAII).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "engine/call_paths.h"
#include "engine/path_slots.h"
#include "base/result.h"
#include "target/target_file.h"
#include "base/unique_fd.h"
#include "usdtprof/bpf_shared.h"

struct usdtprof_bpf;
struct bpf_link;
struct bpf_program;
struct ring_buffer;

namespace usdtprof {

struct LinkDeleter {
	void operator()(bpf_link *link) const;
};
using LinkPtr = std::unique_ptr<bpf_link, LinkDeleter>;

// One uprobe site of a multi-uprobe link.
struct UprobeSite {
	uint64_t offset = 0;     // file offset of the probed instruction
	uint64_t ref_ctr = 0;    // file offset of the USDT semaphore, 0 if none
	uint64_t cookie = 0;     // bpf_get_attach_cookie() in the program
};

// One span's statistics in one process (usdt_span), and its starts left open.
struct SpanRecord {
	uint32_t tgid = 0;
	uint32_t span = 0; // the span's id (usdtprof_probe_spec.pair)
	usdtprof_span_stats stats{};
	uint64_t open = 0;
};

// Attaches prog (loaded with expected attach type BPF_TRACE_UPROBE_MULTI) to
// every site of the file at kernel_path (a /proc/self/fd/N or map_files
// link: the file itself) in one link (kernel >= 6.6), for pid only (0: every
// process); name is for messages. One link per binary and program
// instead of one per site: detaching a uprobe waits for an RCU grace period
// (~100 ms here), which a multi link pays once for all its sites.
Result<UniqueFd> attach_uprobe_multi(int prog_fd, int pid, const std::string &kernel_path, const std::string &name,
				     const std::vector<UprobeSite> &sites);
// Marks a program for attach_uprobe_multi(); call before loading.
void use_uprobe_multi(bpf_program *prog);

class Engine {
public:
	// Opens and loads the programs, sizing the aggregation map, and attaches
	// the thread-exit, exec and (with offcpu) context-switch hooks. A trace
	// buffer size (a power of two, >= 4096) turns on per-event records for
	// `usdtprof trace`. Without offcpu, self time is not split into on- and off-CPU.
	// With per_thread (record --per-thread) each thread's roots hang under
	// its own root id (USDTPROF_THREAD_ROOT) instead of the process's.
	// With per_process (`monitor` of several processes: -p A,B, --all) each
	// process's probe hits are counted (process_hits) and its sampling
	// window closes and opens on its own; without, the programs have
	// neither (the verifier drops them).
	static Result<std::unique_ptr<Engine>> load(uint32_t max_paths, uint32_t trace_buffer_bytes = 0,
						   bool offcpu = true, bool per_thread = false,
						   bool per_process = false);
	bool per_thread() const { return per_thread_; }
	~Engine();
	Engine(const Engine &) = delete;
	Engine &operator=(const Engine &) = delete;

	// Index of a probe spec for the uprobe cookie; identical specs share one.
	Result<uint32_t> add_spec(const usdtprof_probe_spec &spec);
	// Attaches the program serving role to sites of one open file, for pid
	// only (0: every process), raising the sites' semaphores while attached.
	// Site cookies are spec indexes.
	Result<void> attach(int pid, const TargetFile &file, usdtprof_role role, const std::vector<UprobeSite> &sites);
	// Holds the USDT semaphore at ref_ctr (a file offset in file) up for
	// pid while attached, probing only the entry point, which never runs again.
	Result<void> hold_semaphore(int pid, const TargetFile &file, uint64_t ref_ctr);
	// Ends recording now: the probes stop counting at once, then are
	// detached in the reverse order of attachment. Returns the stop time
	// (monotonic ns): no hit is counted after it, open frames end there.
	uint64_t stop();
	// The monotonic time recording started: set at the first attach, before
	// any probe can fire. A launched command, held while probes attach, sets
	// it when it releases the command.
	uint64_t start_ns() const;
	void set_start_ns(uint64_t ns);
	size_t attached_sites() const { return attached_sites_; }
	// Charges frames still open on every thread up to the stop, as open activations.
	Result<void> flush_open_frames();

	// `usdtprof monitor`'s sampling windows. close_window() pauses the
	// probes, takes the close time, detaches them, charges open frames up to
	// that time as open activations and empties every stack; it returns the
	// close time (monotonic ns), after which nothing is charged. Attach
	// again, then open_window(), which returns the time the window opens:
	// no hit of the window is earlier.
	Result<uint64_t> close_window();
	uint64_t open_window();
	// CPU time of profiled processes that have exited (all their threads), ns.
	uint64_t exited_cpu_ns() const;
	// Makes each thread add its path cache to the paths map at its next exit.
	void bump_flush_epoch();
	// Several processes share the path and name tables (--binary): each may
	// hold at most a 1/(processes + 1) share of them, so that none can fill
	// them and make the others' paths drop; the rest stays for processes to come.
	void share_tables(size_t processes);
	// Forgets paths (already reported) and the names (and command name) of a
	// process that is gone. Paths go in batches (bpf_map_delete_batch) where
	// the kernel has them, else, or when batched is false, one at a time;
	// their slots go back to the programs (PathSlots::free).
	void delete_paths(const std::vector<uint64_t> &paths, bool batched = true);
	// The same, given each path's slot as read (PathColumns::slot): none to find.
	void delete_paths(const std::vector<uint64_t> &paths, const std::vector<uint32_t> &slots,
			  bool batched = true);
	void delete_names(uint32_t tgid);

	// The probe specs added so far, by index.
	const std::vector<usdtprof_probe_spec> &specs() const { return specs_; }
	// Overhead calibration (calibration.h): attaches role's program to sites
	// of usdtprof's own binary for this process only, until the engine is
	// destroyed (never detached by stop() or a monitor window).
	Result<void> attach_own(usdtprof_role role, const std::string &binary, const std::vector<UprobeSite> &sites);
	// Forgets what the probes recorded in this process (its paths, names,
	// command name and the calling thread's stack), so that no profile shows it.
	void forget_own_records(const std::vector<uint64_t> &paths);

	// Measures what one uprobe hit costs this process with an empty program
	// (the trap, in and out of the kernel), in ns: the floor of a probe's cost.
	Result<double> measure_trap_ns();

	// Trace mode: hands each event waiting in the ring buffer to sink.
	void drain_events(const std::function<void(const usdtprof_event &)> &sink);

	// The kernel's run-time statistics of one program (while
	// bpf_enable_stats(BPF_STATS_RUN_TIME) is in force): total ns and runs.
	std::pair<uint64_t, uint64_t> run_stats(const char *program) const;

	// Every path of both tables: in batches (bpf_map_lookup_batch, thousands
	// of paths per system call) where the kernel has them, else, or when
	// batched is false (the bench compares the two), one key at a time.
	std::vector<PathRecord> read_paths(bool batched = true) const;
	// The same into out, emptied first: its memory is used again. monitor
	// reads the table every interval; at a million paths the fresh pages
	// of a new vector (~110 MB) were a fifth of the read's CPU.
	void read_paths(std::vector<PathRecord> &out, bool batched = true) const;
	// Into columns (PathColumns: what record and monitor read, the nodes
	// their profiles are made of), out's memory reused.
	void read_paths(PathColumns &out, bool batched = true) const;
	// What the call-path table (the hash and its slots) and other_paths
	// hold in kernel memory now, by the kernel's own accounting (memlock in
	// the maps' fdinfo, from their contents on kernels 6.4+), bytes.
	uint64_t path_tables_bytes() const;
	// The command name of each process a probe fired in, by tgid.
	std::map<uint32_t, std::string> read_process_comms() const;
	// The name of each probed thread that has exited, by tid, as it was at its exit.
	std::map<uint32_t, std::string> read_thread_comms() const;
	// Each such process's title as its argument area showed it at its first
	// event (what /proc/PID/cmdline shows of it), by tgid.
	std::map<uint32_t, std::string> read_process_titles() const;
	// The path of the leader's statement of each PostgreSQL parallel worker,
	// as the worker's first event found it, by the worker's tgid.
	std::map<uint32_t, uint64_t> read_worker_statements() const;
	// Names the kernel captured for runtime probes, by (tgid, function id).
	std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> read_names() const;
	std::array<uint64_t, USDTPROF_ANOM_COUNT> anomalies() const;
	// The steal clock (ns) each CPU's last switch of a profiled thread read,
	// by CPU (0: none read); for the check against /proc/stat.
	std::map<uint32_t, uint64_t> steal_seen() const;
	// Custom pairs' frames that did not nest with the calls around them, by pair tag.
	std::map<uint32_t, uint64_t> pair_mismatches() const;

	// Spans' statistics per process, and how many were left open (record --span).
	std::vector<SpanRecord> read_spans() const;

	// Detaches every probe, the last attached first.
	void detach_probes();

	// Loaded with per_process: the probe hits counted of each process so far (cumulative), by tgid.
	std::map<uint32_t, uint64_t> process_hits() const;
	// How many processes process_hits() can count (the rest count none).
	size_t max_process_hits() const;
	// One process's window, as close_window() and open_window() for all:
	// its probes do nothing from the returned close time on, are detached
	// (its links only), its threads' open frames are charged up to it and
	// their stacks emptied. Attach its sites again, then open it.
	Result<uint64_t> close_process_window(int pid);
	uint64_t open_process_window(int pid);
	// Detaches the probes attached for pid only, the last attached first.
	void detach_process_probes(int pid);
	// Forgets a process that has gone: its probes, hits and closed window.
	void forget_process(int pid);
	// Called just before pid's probes are attached after the start (a
	// process found later, or its new program after an exec): a function
	// running then is charged from now, not from the start. Returns now.
	uint64_t note_attach(int pid);
	// A process that has gone: its attach time goes.
	void forget_attach(int pid);

private:
	Engine() = default;
	// A map of command names (char[16]) by id.
	// A map of NUL-terminated texts of `size` bytes (comms, titles) by id.
	static std::map<uint32_t, std::string> read_comms(int fd, size_t size = 16);
	// The program a probe of this role runs.
	const bpf_program *program_of(usdtprof_role role) const;
	// Makes the probes do nothing from now on; returns the time taken after that.
	uint64_t pause();
	// The process's own window is no longer closed.
	void forget_closed(int pid);
	// The slots of those of paths that `paths` holds.
	std::vector<uint32_t> slots_of(const std::vector<uint64_t> &paths) const;

	usdtprof_bpf *skel_ = nullptr;
	std::unique_ptr<PathSlots> slots_; // the call-path table's totals
	std::vector<LinkPtr> scheduler_hooks_; // thread exit, exec, context switch
	struct ProbeLink {
		int pid; // attached for this process only; 0: every process of the file
		UniqueFd fd;
	};
	std::vector<ProbeLink> probe_links_;
	std::set<int> closed_; // processes whose own window is closed
	std::vector<UniqueFd> own_links_; // calibration: usdtprof's own sites
	size_t attached_sites_ = 0;
	uint32_t max_paths_ = 0;
	bool per_thread_ = false;
	// USDTPROF_BENCH_FLOOR=1 (benchmarks only): every probe runs the empty
	// program, attached as the real ones are: the floor a hit cannot go below.
	bool empty_programs_ = false;
	std::vector<usdtprof_probe_spec> specs_;
	struct RingBufferDeleter {
		void operator()(ring_buffer *rb) const;
	};
	std::unique_ptr<ring_buffer, RingBufferDeleter> events_;
	const std::function<void(const usdtprof_event &)> *sink_ = nullptr;
};

} // namespace usdtprof
