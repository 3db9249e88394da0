#include "engine/engine.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <new>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/huge_pages.h"
#include "base/id_index.h"
#include "engine/steal_clock.h"
#include "target/proc_maps.h"
#include "target/usdt.h"
#include "usdtprof.skel.h"

namespace usdtprof {

void LinkDeleter::operator()(bpf_link *link) const
{
	bpf_link__destroy(link);
}

namespace {

// libbpf prints to stderr on its own (probing noise, verifier logs); usdtprof
// reports each failure as one line, so libbpf's messages only show with
// USDTPROF_DEBUG=1.
int libbpf_print(libbpf_print_level, const char *format, va_list args)
{
	static const bool debug = [] {
		const char *v = getenv("USDTPROF_DEBUG");
		return v && std::strcmp(v, "1") == 0;
	}();
	return debug ? vfprintf(stderr, format, args) : 0;
}

uint64_t monotonic_now_ns()
{
	timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return uint64_t(now.tv_sec) * 1000000000 + uint64_t(now.tv_nsec);
}

std::string errno_text(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

// From the kernel UAPI (>= 6.6); Debian 12's headers predate it.
constexpr int kBpfTraceUprobeMulti = 48;
constexpr int kBpfLinkCreate = 28;

// union bpf_attr's link_create member, as used for uprobe_multi.
struct UprobeMultiAttr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid;
	uint8_t zero[64]; // the rest of union bpf_attr must be zero
};

} // namespace

void use_uprobe_multi(bpf_program *prog)
{
	bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
}

Result<UniqueFd> attach_uprobe_multi(int prog_fd, int pid, const std::string &kernel_path, const std::string &name,
				     const std::vector<UprobeSite> &sites)
{
	std::vector<uint64_t> offsets, ref_ctrs, cookies;
	for (const UprobeSite &s : sites) {
		offsets.push_back(s.offset);
		ref_ctrs.push_back(s.ref_ctr);
		cookies.push_back(s.cookie);
	}
	UprobeMultiAttr attr{};
	attr.prog_fd = uint32_t(prog_fd);
	attr.attach_type = kBpfTraceUprobeMulti;
	attr.path = reinterpret_cast<uintptr_t>(kernel_path.c_str());
	attr.offsets = reinterpret_cast<uintptr_t>(offsets.data());
	attr.ref_ctr_offsets = reinterpret_cast<uintptr_t>(ref_ctrs.data());
	attr.cookies = reinterpret_cast<uintptr_t>(cookies.data());
	attr.cnt = uint32_t(sites.size());
	attr.pid = uint32_t(pid);
	int fd = int(syscall(__NR_bpf, kBpfLinkCreate, &attr, sizeof(attr)));
	if (fd < 0) {
		std::string why = errno_text(errno);
		if (errno == ESRCH)
			why = "the process is gone";
		return Error{"cannot attach to " + name + ": " + why};
	}
	return UniqueFd(fd);
}

// The benchmarks' switches (docs/benchmarks.md), read from the environment
// before the programs load (their read-only data); whether every probe is to
// run an empty program (the floor).
static bool bench_knobs(usdtprof_bpf *skel, bool &per_process)
{
	bool empty_programs = false;
	if (const char *floor = getenv("USDTPROF_BENCH_FLOOR"); floor && std::string(floor) == "1") {
		empty_programs = true;
		fprintf(stderr, "usdtprof: USDTPROF_BENCH_FLOOR=1: every probe runs an empty program; "
				"nothing is recorded (docs/benchmarks.md)\n");
	}
	if (const char *off = getenv("USDTPROF_BENCH_NO_DURATIONS"); off && std::string(off) == "1") {
		skel->rodata->durations_off = true;
		fprintf(stderr, "usdtprof: USDTPROF_BENCH_NO_DURATIONS=1: no duration distributions "
				"are kept (docs/benchmarks.md)\n");
	}
	if (const char *rehash = getenv("USDTPROF_BENCH_SQL_REHASH"); rehash && std::string(rehash) == "1") {
		skel->rodata->sql_rehash = true;
		fprintf(stderr, "usdtprof: USDTPROF_BENCH_SQL_REHASH=1: each query__done hashes its text again "
				"(docs/benchmarks.md)\n");
	}
	if (const char *hits = getenv("USDTPROF_BENCH_PROCESS_HITS"); hits && std::string(hits) == "1") {
		per_process = true;
		fprintf(stderr, "usdtprof: USDTPROF_BENCH_PROCESS_HITS=1: hits are counted per process "
				"(docs/benchmarks.md)\n");
	}
	return empty_programs;
}

Result<std::unique_ptr<Engine>> Engine::load(uint32_t max_paths, uint32_t trace_buffer_bytes, bool offcpu,
					     bool per_thread, bool per_process)
{
	libbpf_set_print(libbpf_print);
	std::unique_ptr<Engine> engine(new Engine());
	engine->skel_ = usdtprof_bpf__open();
	if (!engine->skel_)
		return Error{"cannot open BPF programs: " + errno_text(errno)};
	bpf_map__set_max_entries(engine->skel_->maps.paths, max_paths);
	PathSlots::size(engine->skel_, max_paths);
	// At most one [other] child per path (and a root one per process), but
	// far fewer in practice: a quarter keeps its buckets' up-front cost small
	// (docs/design.md, "Call-path table"); beyond it, time is lost (dropped_ns).
	bpf_map__set_max_entries(engine->skel_->maps.other_paths, max_paths / 4 + 4096);
	engine->max_paths_ = max_paths;
	engine->empty_programs_ = bench_knobs(engine->skel_, per_process);
	engine->skel_->rodata->per_thread = per_thread;
	engine->skel_->rodata->per_process = per_process;
	// Stolen time is taken out of on-CPU time where on-CPU time is kept.
	if (const char *steal = getenv("USDTPROF_BENCH_NO_STEAL"); steal && std::string(steal) == "1")
		fprintf(stderr, "usdtprof: USDTPROF_BENCH_NO_STEAL=1: time stolen by the hypervisor is "
				"on-CPU time (docs/benchmarks.md)\n");
	else if (offcpu)
		engine->skel_->rodata->steal_time_from_rq = steal_time_from_rq();
	engine->per_thread_ = per_thread;
	use_uprobe_multi(engine->skel_->progs.usdt_entry);
	use_uprobe_multi(engine->skel_->progs.usdt_exit);
	use_uprobe_multi(engine->skel_->progs.usdt_semaphore);
	use_uprobe_multi(engine->skel_->progs.usdt_span);
	if (trace_buffer_bytes) {
		engine->skel_->rodata->trace_events = true;
		bpf_map__set_max_entries(engine->skel_->maps.events, trace_buffer_bytes);
	}
	if (int err = usdtprof_bpf__load(engine->skel_)) {
		std::string why = errno_text(err);
		if (err == -EPERM || err == -EACCES)
			why += " (usdtprof must run as root)";
		else if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
			// libbpf's CO-RE relocation needs it; its error alone reads "No such process".
			why = "the kernel has no BTF (/sys/kernel/btf/vmlinux)";
		return Error{"cannot load BPF programs: " + why};
	}
	auto slots = PathSlots::start(engine->skel_);
	if (!slots)
		return slots.error();
	engine->slots_ = std::move(*slots);
	for (bpf_program *prog : {engine->skel_->progs.flush_exiting_thread, engine->skel_->progs.flush_on_exec,
				  engine->skel_->progs.track_offcpu}) {
		if (prog == engine->skel_->progs.track_offcpu && !offcpu)
			continue;
		LinkPtr link(bpf_program__attach(prog));
		if (!link)
			return Error{std::string("cannot attach ") + bpf_program__name(prog) + ": " + errno_text(errno)};
		engine->scheduler_hooks_.push_back(std::move(link));
	}
	if (trace_buffer_bytes) {
		auto on_event = [](void *ctx, void *data, size_t size) {
			auto *self = static_cast<Engine *>(ctx);
			if (size >= sizeof(usdtprof_event) && self->sink_)
				(*self->sink_)(*static_cast<const usdtprof_event *>(data));
			return 0;
		};
		engine->events_.reset(
			ring_buffer__new(bpf_map__fd(engine->skel_->maps.events), on_event, engine.get(), nullptr));
		if (!engine->events_)
			return Error{"cannot open the trace ring buffer: " + errno_text(errno)};
	}
	return engine;
}

Engine::~Engine()
{
	detach_probes();
	own_links_.clear();
	scheduler_hooks_.clear();
	slots_.reset(); // its grower reads the skeleton
	usdtprof_bpf__destroy(skel_);
}

Result<uint32_t> Engine::add_spec(const usdtprof_probe_spec &spec)
{
	for (uint32_t i = 0; i < specs_.size(); i++)
		if (std::memcmp(&specs_[i], &spec, sizeof(spec)) == 0)
			return i;
	if (specs_.size() >= USDTPROF_MAX_SPECS)
		return Error{"too many distinct probe argument layouts"};
	uint32_t index = specs_.size();
	if (bpf_map__update_elem(skel_->maps.probe_specs, &index, sizeof(index), &spec, sizeof(spec), 0))
		return Error{"cannot store a probe spec: " + errno_text(errno)};
	specs_.push_back(spec);
	return index;
}

const bpf_program *Engine::program_of(usdtprof_role role) const
{
	if (empty_programs_)
		return skel_->progs.usdt_semaphore;
	switch (role) {
	case USDTPROF_ROLE_EXIT:
	case USDTPROF_ROLE_TASK_END: return skel_->progs.usdt_exit;
	case USDTPROF_ROLE_SPAN_START:
	case USDTPROF_ROLE_SPAN_END: return skel_->progs.usdt_span;
	default: return skel_->progs.usdt_entry;
	}
}

Result<void> Engine::attach(int pid, const TargetFile &file, usdtprof_role role, const std::vector<UprobeSite> &sites)
{
	if (!skel_->bss->start_ns)
		skel_->bss->start_ns = monotonic_now_ns();
	auto link = attach_uprobe_multi(bpf_program__fd(program_of(role)), pid, file.fd_path(), file.path, sites);
	if (!link)
		return link.error();
	probe_links_.push_back({pid, std::move(*link)});
	attached_sites_ += sites.size();
	return {};
}

Result<void> Engine::hold_semaphore(int pid, const TargetFile &file, uint64_t ref_ctr)
{
	auto entry = entry_point_offset(file.fd.get(), file.path);
	if (!entry)
		return entry.error();
	auto link = attach_uprobe_multi(bpf_program__fd(skel_->progs.usdt_semaphore), pid, file.fd_path(), file.path,
					{{*entry, ref_ctr, 0}});
	if (!link)
		return link.error();
	// Detached last: the probes it makes fire go first.
	probe_links_.insert(probe_links_.begin(), {pid, std::move(*link)});
	return {};
}

Result<void> Engine::attach_own(usdtprof_role role, const std::string &binary, const std::vector<UprobeSite> &sites)
{
	auto link = attach_uprobe_multi(bpf_program__fd(program_of(role)), getpid(), "/proc/self/exe", binary, sites);
	if (!link)
		return link.error();
	own_links_.push_back(std::move(*link));
	return {};
}

void Engine::forget_own_records(const std::vector<uint64_t> &paths)
{
	delete_paths(paths);
	delete_names(uint32_t(getpid()));
	// A task storage map is keyed by a pidfd: the calling thread's stack goes.
	// (PIDFD_THREAD, which is O_EXCL, for a thread that is not the leader.)
	int pidfd = int(syscall(SYS_pidfd_open, gettid(), gettid() == getpid() ? 0 : O_EXCL));
	if (pidfd >= 0) {
		bpf_map_delete_elem(bpf_map__fd(skel_->maps.stacks), &pidfd);
		close(pidfd);
	}
}

uint64_t Engine::pause()
{
	// `paused` first, then the clock: a hit that reads its clock after
	// close_ns sees `paused` (the programs test it after their clock read).
	__atomic_store_n(&skel_->bss->paused, 1, __ATOMIC_SEQ_CST);
	uint64_t close = monotonic_now_ns();
	__atomic_store_n(&skel_->bss->close_ns, close, __ATOMIC_SEQ_CST);
	return close;
}

uint64_t Engine::stop()
{
	uint64_t stop_ns = pause();
	detach_probes();
	return stop_ns;
}

uint64_t Engine::start_ns() const
{
	return skel_->bss->start_ns;
}

void Engine::set_start_ns(uint64_t ns)
{
	skel_->bss->start_ns = ns;
}

void Engine::detach_probes()
{
	while (!probe_links_.empty())
		probe_links_.pop_back();
}

namespace {

// Every key of a BPF map, in the map's order.
template <typename Key>
std::vector<Key> map_keys(int fd)
{
	std::vector<Key> keys;
	Key next{};
	while (bpf_map_get_next_key(fd, keys.empty() ? nullptr : &keys.back(), &next) == 0)
		keys.push_back(next);
	return keys;
}

// Runs a task iterator program once over every thread (or, given a tgid,
// over that process's threads only).
Result<void> run_task_iterator(bpf_program *prog, int tgid = 0)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	bpf_iter_link_info info{};
	info.task.pid = uint32_t(tgid);
	opts.link_info = &info;
	opts.link_info_len = sizeof info;
	LinkPtr link(bpf_program__attach_iter(prog, tgid ? &opts : nullptr));
	if (!link)
		return Error{std::string("cannot attach the ") + bpf_program__name(prog) + " iterator: " + errno_text(errno)};
	int fd = bpf_iter_create(bpf_link__fd(link.get()));
	if (fd < 0)
		return Error{std::string("cannot run the ") + bpf_program__name(prog) + " iterator: " + errno_text(errno)};
	char buf[256];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	int err = errno;
	close(fd);
	if (n < 0)
		return Error{std::string(bpf_program__name(prog)) + " iterator failed: " + errno_text(err)};
	return {};
}

} // namespace

Result<void> Engine::flush_open_frames()
{
	return run_task_iterator(skel_->progs.flush_open_frames);
}

Result<uint64_t> Engine::close_window()
{
	uint64_t close = pause();
	// Detaching waits for the probes in flight: then no probe touches a stack.
	detach_probes();
	skel_->bss->windowed = 1;
	if (auto r = run_task_iterator(skel_->progs.close_window); !r)
		return r.error();
	return close;
}

uint64_t Engine::open_window()
{
	__atomic_store_n(&skel_->bss->close_ns, 0, __ATOMIC_SEQ_CST);
	// The clock first: every hit of the window reads a later one.
	uint64_t open = monotonic_now_ns();
	__atomic_store_n(&skel_->bss->paused, 0, __ATOMIC_SEQ_CST);
	return open;
}

std::map<uint32_t, uint64_t> Engine::process_hits() const
{
	std::map<uint32_t, uint64_t> hits;
	int fd = bpf_map__fd(skel_->maps.process_hits);
	for (uint32_t tgid : map_keys<uint32_t>(fd)) {
		uint64_t n = 0;
		if (bpf_map_lookup_elem(fd, &tgid, &n) == 0)
			hits[tgid] = n;
	}
	return hits;
}

size_t Engine::max_process_hits() const { return bpf_map__max_entries(skel_->maps.process_hits); }

Result<uint64_t> Engine::close_process_window(int pid)
{
	// As pause(): the process's flag first, then the clock.
	uint32_t tgid = uint32_t(pid);
	uint64_t one = 1;
	if (bpf_map_update_elem(bpf_map__fd(skel_->maps.closed_processes), &tgid, &one, BPF_ANY) != 0)
		return Error{"cannot close the window of " + std::to_string(pid) + ": " + errno_text(errno)};
	closed_.insert(pid);
	__atomic_store_n(&skel_->bss->processes_closed, uint32_t(closed_.size()), __ATOMIC_SEQ_CST);
	uint64_t close = monotonic_now_ns();
	// Detaching waits for the probes in flight: then none touches its stacks.
	detach_process_probes(pid);
	skel_->bss->windowed = 1;
	__atomic_store_n(&skel_->bss->process_close_ns, close, __ATOMIC_SEQ_CST);
	if (auto r = run_task_iterator(skel_->progs.close_process, pid); !r)
		return r.error();
	return close;
}

uint64_t Engine::open_process_window(int pid)
{
	// The clock first: every hit of the window reads a later one.
	uint64_t open = monotonic_now_ns();
	forget_closed(pid);
	return open;
}

void Engine::forget_closed(int pid)
{
	uint32_t tgid = uint32_t(pid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.closed_processes), &tgid);
	closed_.erase(pid);
	__atomic_store_n(&skel_->bss->processes_closed, uint32_t(closed_.size()), __ATOMIC_SEQ_CST);
}

void Engine::detach_process_probes(int pid)
{
	for (size_t i = probe_links_.size(); i-- > 0;)
		if (probe_links_[i].pid == pid)
			probe_links_.erase(probe_links_.begin() + ptrdiff_t(i));
}

void Engine::forget_process(int pid)
{
	detach_process_probes(pid);
	uint32_t tgid = uint32_t(pid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.process_hits), &tgid);
	if (closed_.count(pid))
		forget_closed(pid);
}

std::map<uint32_t, uint64_t> Engine::steal_seen() const
{
	std::map<uint32_t, uint64_t> seen;
	for (uint32_t cpu = 0; cpu < std::size(skel_->bss->steal_seen); cpu++)
		if (uint64_t s = __atomic_load_n(&skel_->bss->steal_seen[cpu], __ATOMIC_RELAXED))
			seen[cpu] = s;
	return seen;
}

uint64_t Engine::note_attach(int pid)
{
	uint32_t tgid = uint32_t(pid);
	uint64_t now = monotonic_now_ns();
	// Full (65536 processes): the process is charged from its exec or the start, as before.
	(void)bpf_map_update_elem(bpf_map__fd(skel_->maps.process_attached), &tgid, &now, BPF_ANY);
	return now;
}

void Engine::forget_attach(int pid)
{
	uint32_t tgid = uint32_t(pid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.process_attached), &tgid);
}

uint64_t Engine::exited_cpu_ns() const
{
	return __atomic_load_n(&skel_->bss->exited_cpu_ns, __ATOMIC_ACQUIRE);
}

void Engine::bump_flush_epoch()
{
	__atomic_fetch_add(&skel_->bss->flush_epoch, 1, __ATOMIC_RELEASE);
}

void Engine::share_tables(size_t processes)
{
	uint64_t shares = processes + 1;
	__atomic_store_n(&skel_->bss->path_share, uint32_t(std::max<uint64_t>(1, max_paths_ / shares)), __ATOMIC_RELAXED);
	__atomic_store_n(&skel_->bss->name_share,
			 uint32_t(std::max<uint64_t>(1, bpf_map__max_entries(skel_->maps.names) / shares)), __ATOMIC_RELAXED);
}

namespace {

// Deletes keys from the map fd: in batches where the kernel has them (5.6),
// else one at a time. Returns the keys the map did not hold.
std::vector<uint64_t> delete_keys(int fd, const std::vector<uint64_t> &keys, bool batched)
{
	std::vector<uint64_t> missing;
	size_t i = 0;
	// A batch stops at the first key the map does not hold (ENOENT): that
	// one is set aside and the batch goes on after it.
	while (batched && i < keys.size()) {
		__u32 count = uint32_t(std::min<size_t>(keys.size() - i, 1 << 16));
		int err = bpf_map_delete_batch(fd, &keys[i], &count, nullptr) ? errno : 0;
		i += count;
		if (err == ENOENT && i < keys.size())
			missing.push_back(keys[i++]);
		else if (err && count == 0)
			break; // no batch deletes here: the rest key by key
	}
	for (; i < keys.size(); i++)
		if (bpf_map_delete_elem(fd, &keys[i]) != 0)
			missing.push_back(keys[i]);
	return missing;
}

} // namespace

std::vector<uint32_t> Engine::slots_of(const std::vector<uint64_t> &paths) const
{
	std::vector<uint32_t> slots;
	slots.reserve(paths.size());
	// A few paths among many: each looked up (~1 us); else every slot
	// read (~0.2 us a slot) and those of the paths kept.
	if (paths.size() * 4 < slots_->made()) {
		int fd = bpf_map__fd(skel_->maps.paths);
		for (uint64_t path : paths)
			if (uint32_t slot; bpf_map_lookup_elem(fd, &path, &slot) == 0)
				slots.push_back(slot);
		return slots;
	}
	IdIndex wanted(paths.size());
	for (size_t i = 0; i < paths.size(); i++)
		wanted.set(paths[i], uint32_t(i));
	slots_->read(
		[&](uint32_t slot, const usdtprof_path_stats &s) {
			if (wanted.find(s.path) != IdIndex::kNone)
				slots.push_back(slot);
		},
		true);
	return slots;
}

void Engine::delete_paths(const std::vector<uint64_t> &paths, const std::vector<uint32_t> &slots, bool batched)
{
	if (paths.empty())
		return;
	// The paths' slots, before the hash forgets them: as read with them,
	// else found. (A path whose slot a program has taken but not yet named
	// is not found by the slots' read: only paths of processes gone or
	// stopped are deleted.)
	std::vector<uint32_t> freed;
	if (slots.size() == paths.size())
		std::copy_if(slots.begin(), slots.end(), std::back_inserter(freed),
			     [](uint32_t s) { return s != USDTPROF_NO_SLOT; });
	else
		freed = slots_of(paths);
	// A path is in one of the two maps; its id says which only by lookup:
	// what `paths` does not hold is tried in `other_paths`.
	delete_keys(bpf_map__fd(skel_->maps.other_paths),
		    delete_keys(bpf_map__fd(skel_->maps.paths), paths, batched), batched);
	slots_->free(std::move(freed));
}

void Engine::delete_paths(const std::vector<uint64_t> &paths, bool batched)
{
	delete_paths(paths, {}, batched);
}

void Engine::delete_names(uint32_t tgid)
{
	int fd = bpf_map__fd(skel_->maps.names);
	for (const usdtprof_name_key &k : map_keys<usdtprof_name_key>(fd))
		if (k.tgid == tgid)
			bpf_map_delete_elem(fd, &k);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.process_comms), &tgid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.process_titles), &tgid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.statements), &tgid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.worker_statements), &tgid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.process_usage), &tgid);
}

} // namespace usdtprof

// For measure_trap_ns(): a nop to probe, like a USDT site (an instruction
// the kernel emulates instead of single-stepping), then a return.
extern "C" void usdtprof_calibration_site();
asm(".pushsection .text\n"
    ".globl usdtprof_calibration_site\n"
    ".type usdtprof_calibration_site, @function\n"
    "usdtprof_calibration_site:\n"
    "\tnop\n"
    "\tret\n"
    ".size usdtprof_calibration_site, .-usdtprof_calibration_site\n"
    ".popsection\n");

namespace usdtprof {

Result<double> Engine::measure_trap_ns()
{
	auto maps = read_proc_maps(getpid());
	if (!maps)
		return maps.error();
	uint64_t addr = reinterpret_cast<uintptr_t>(&usdtprof_calibration_site);
	auto m = mapping_for(*maps, addr);
	if (!m || m->path.empty())
		return Error{"cannot find usdtprof's own code to calibrate the probe cost"};
	// Timed by this thread's CPU clock (the trap and the program are its
	// system time): time spent preempted by other load is not the probe's.
	// On a loaded machine the wall clock read 22 us a hit against ~0.5 us,
	// and the overhead budget then sampled a target for nothing.
	constexpr int kCalls = 5000;
	auto time_calls = [] {
		timespec a, b;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		for (int i = 0; i < kCalls; i++)
			usdtprof_calibration_site();
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		return double(b.tv_sec - a.tv_sec) * 1e9 + double(b.tv_nsec - a.tv_nsec);
	};
	double plain = std::min({time_calls(), time_calls(), time_calls()});
	char self[96];
	snprintf(self, sizeof self, "/proc/self/map_files/%llx-%llx", (unsigned long long)m->start,
		 (unsigned long long)m->end);
	auto link = attach_uprobe_multi(bpf_program__fd(skel_->progs.usdt_semaphore), getpid(), self, m->path,
					{{addr - m->start + m->offset, 0, 0}});
	if (!link)
		return link.error();
	// The best of five: other load only ever adds (cache misses, interrupts).
	double probed = std::min({time_calls(), time_calls(), time_calls(), time_calls(), time_calls()});
	return std::max(0.0, (probed - plain) / kCalls);
}

void Engine::RingBufferDeleter::operator()(ring_buffer *rb) const
{
	ring_buffer__free(rb);
}

void Engine::drain_events(const std::function<void(const usdtprof_event &)> &sink)
{
	if (!events_)
		return;
	sink_ = &sink;
	ring_buffer__consume(events_.get());
	sink_ = nullptr;
}

std::pair<uint64_t, uint64_t> Engine::run_stats(const char *program) const
{
	bpf_prog_info info{};
	uint32_t len = sizeof(info);
	bpf_program *prog = bpf_object__find_program_by_name(skel_->obj, program);
	if (!prog || bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return {0, 0};
	return {info.run_time_ns, info.run_cnt};
}

namespace {

void append_path(std::vector<PathRecord> &out, uint64_t path, const usdtprof_path_stats &s,
		 uint32_t slot = USDTPROF_NO_SLOT)
{
	out.push_back({path, path_stats_of(s), slot});
}
void append_path(PathColumns &out, uint64_t path, const usdtprof_path_stats &s, uint32_t slot = USDTPROF_NO_SLOT)
{
	out.append(path, s, slot);
}
void truncate_paths(std::vector<PathRecord> &out, size_t n)
{
	out.resize(n);
}
void truncate_paths(PathColumns &out, size_t n)
{
	out.truncate(n);
}

// Every record of a paths map: in batches of thousands per system call where
// the kernel has batch lookups (5.6) and batched is true, else one key at a time.
template <class Out> void read_path_map(int fd, Out &out, bool batched)
{
	std::vector<uint64_t> keys(4096);
	std::vector<usdtprof_path_stats> values(keys.size());
	uint32_t in_batch = 0, out_batch = 0;
	size_t first = out.size();
	for (bool start = true; batched;) {
		__u32 count = uint32_t(keys.size());
		int err = bpf_map_lookup_batch(fd, start ? nullptr : &in_batch, &out_batch, keys.data(), values.data(),
					       &count, nullptr);
		int why = err ? errno : 0;
		for (__u32 i = 0; i < count; i++)
			append_path(out, keys[i], values[i]);
		if (err && why == ENOSPC && count == 0) {
			// A hash bucket holds more entries than a batch: larger batches.
			keys.resize(keys.size() * 2);
			values.resize(keys.size());
			continue;
		}
		if (err && why == ENOENT)
			return;
		if (err) {
			truncate_paths(out, first); // no batch lookups here: key by key
			break;
		}
		in_batch = out_batch;
		start = false;
	}
	for (uint64_t path : map_keys<uint64_t>(fd)) {
		usdtprof_path_stats stats;
		if (bpf_map_lookup_elem(fd, &path, &stats) == 0)
			append_path(out, path, stats);
	}
}

} // namespace

std::vector<PathRecord> Engine::read_paths(bool batched) const
{
	std::vector<PathRecord> out;
	read_paths(out, batched);
	return out;
}

void Engine::read_paths(std::vector<PathRecord> &out, bool batched) const
{
	// Room for both tables full, reserved (not touched) up front, in the
	// pages fresh memory is cheaper in here (reserve_fresh): growing the
	// vector by doubling copied its hundreds of MB (1M paths: reading took
	// 4 s of CPU instead of ~1). Each record is kept compact (PathStats): the pages the kernel
	// zeroes on first touch were most of the rest.
	// (Address space only: a refusal, for a huge --max-paths, just grows it.)
	out.clear();
	try {
		reserve_fresh(out, size_t(bpf_map__max_entries(skel_->maps.paths)) +
					   bpf_map__max_entries(skel_->maps.other_paths));
	} catch (const std::bad_alloc &) {
	}
	slots_->read([&](uint32_t slot, const usdtprof_path_stats &s) { append_path(out, s.path, s, slot); }, batched);
	read_path_map(bpf_map__fd(skel_->maps.other_paths), out, batched);
}

void Engine::read_paths(PathColumns &out, bool batched) const
{
	// As above, each path straight into the node it becomes (PathColumns).
	out.clear();
	try {
		out.reserve(size_t(bpf_map__max_entries(skel_->maps.paths)) +
			    bpf_map__max_entries(skel_->maps.other_paths));
	} catch (const std::bad_alloc &) {
	}
	slots_->read([&](uint32_t slot, const usdtprof_path_stats &s) { append_path(out, s.path, s, slot); }, batched);
	read_path_map(bpf_map__fd(skel_->maps.other_paths), out, batched);
}

uint64_t Engine::path_tables_bytes() const
{
	return bpf_map_memlock(bpf_map__fd(skel_->maps.paths)) +
	       bpf_map_memlock(bpf_map__fd(skel_->maps.other_paths)) + slots_->kernel_bytes();
}

std::map<uint32_t, std::string> Engine::read_process_comms() const
{
	return read_comms(bpf_map__fd(skel_->maps.process_comms));
}

std::map<uint32_t, std::string> Engine::read_thread_comms() const
{
	return read_comms(bpf_map__fd(skel_->maps.thread_comms));
}

std::map<uint32_t, std::string> Engine::read_process_titles() const
{
	return read_comms(bpf_map__fd(skel_->maps.process_titles), USDTPROF_TITLE_LEN);
}

std::map<uint32_t, uint64_t> Engine::read_worker_statements() const
{
	int fd = bpf_map__fd(skel_->maps.worker_statements);
	std::map<uint32_t, uint64_t> out;
	for (uint32_t tgid : map_keys<uint32_t>(fd))
		if (uint64_t path = 0; bpf_map_lookup_elem(fd, &tgid, &path) == 0)
			out[tgid] = path;
	return out;
}

std::map<uint32_t, uint64_t> Engine::pair_mismatches() const
{
	int fd = bpf_map__fd(skel_->maps.pair_mismatches);
	std::map<uint32_t, uint64_t> out;
	for (uint32_t tag : map_keys<uint32_t>(fd))
		if (uint64_t n; bpf_map_lookup_elem(fd, &tag, &n) == 0)
			out[tag] = n;
	return out;
}

std::vector<SpanRecord> Engine::read_spans() const
{
	std::map<std::pair<uint32_t, uint32_t>, SpanRecord> spans;
	int fd = bpf_map__fd(skel_->maps.span_stats);
	for (const usdtprof_span_key &k : map_keys<usdtprof_span_key>(fd)) {
		SpanRecord r{k.tgid, k.span, {}, 0};
		if (bpf_map_lookup_elem(fd, &k, &r.stats) == 0)
			spans[{k.tgid, k.span}] = r;
	}
	int starts = bpf_map__fd(skel_->maps.span_starts);
	for (const usdtprof_span_start_key &k : map_keys<usdtprof_span_start_key>(starts))
		if (auto s = spans.find({k.tgid, k.span}); s != spans.end())
			s->second.open++;
	std::vector<SpanRecord> out;
	for (auto &[key, r] : spans)
		out.push_back(r);
	return out;
}

std::map<uint32_t, std::string> Engine::read_comms(int fd, size_t size)
{
	std::map<uint32_t, std::string> out;
	std::vector<char> text(size);
	for (uint32_t tgid : map_keys<uint32_t>(fd))
		if (bpf_map_lookup_elem(fd, &tgid, text.data()) == 0)
			out[tgid] = std::string(text.data(), strnlen(text.data(), size));
	return out;
}

std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> Engine::read_names() const
{
	std::map<std::pair<uint32_t, uint64_t>, usdtprof_name> out;
	int fd = bpf_map__fd(skel_->maps.names);
	for (const usdtprof_name_key &k : map_keys<usdtprof_name_key>(fd)) {
		usdtprof_name name;
		if (bpf_map_lookup_elem(fd, &k, &name) == 0)
			out[{k.tgid, k.func}] = name;
	}
	return out;
}

std::array<uint64_t, USDTPROF_ANOM_COUNT> Engine::anomalies() const
{
	std::array<uint64_t, USDTPROF_ANOM_COUNT> out{};
	std::memcpy(out.data(), skel_->bss->anomalies, sizeof(skel_->bss->anomalies));
	return out;
}

} // namespace usdtprof
