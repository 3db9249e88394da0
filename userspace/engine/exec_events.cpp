#include "engine/exec_events.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <cstring>

#include "exec_events.skel.h"

namespace usdtprof {

namespace {

// bpf/exec_events.bpf.c's struct exec_event.
struct RawEvent {
	uint32_t pid, parent;
	uint64_t ns;
};

} // namespace

Result<std::unique_ptr<ExecEvents>> ExecEvents::load()
{
	std::unique_ptr<ExecEvents> events(new ExecEvents());
	events->skel_ = exec_events_bpf__open_and_load();
	if (!events->skel_)
		return Error{std::string("cannot load the exec and fork tracepoint programs: ") + strerror(errno)};
	if (int err = exec_events_bpf__attach(events->skel_))
		return Error{std::string("cannot attach to the sched_process_exec and sched_process_fork tracepoints: ") +
			     strerror(-err)};
	auto on_event = [](void *ctx, void *data, size_t size) {
		if (size >= sizeof(RawEvent)) {
			const auto *e = static_cast<const RawEvent *>(data);
			static_cast<ExecEvents *>(ctx)->pending_.push_back({int(e->pid), int(e->parent), e->ns});
		}
		return 0;
	};
	events->ring_ = ring_buffer__new(bpf_map__fd(events->skel_->maps.process_events), on_event, events.get(), nullptr);
	if (!events->ring_)
		return Error{std::string("cannot read the process events' ring buffer: ") + strerror(errno)};
	return events;
}

ExecEvents::~ExecEvents()
{
	ring_buffer__free(ring_);
	exec_events_bpf__destroy(skel_);
}

std::vector<ProcessStart> ExecEvents::take()
{
	ring_buffer__consume(ring_);
	std::vector<ProcessStart> out;
	out.swap(pending_);
	return out;
}

uint64_t ExecEvents::take_lost()
{
	uint64_t lost = __atomic_load_n(&skel_->bss->lost_events, __ATOMIC_RELAXED);
	uint64_t fresh = lost - lost_seen_;
	lost_seen_ = lost;
	return fresh;
}

void ExecEvents::watch(int pid)
{
	uint32_t key = uint32_t(pid);
	uint8_t one = 1;
	bpf_map_update_elem(bpf_map__fd(skel_->maps.watched), &key, &one, BPF_ANY);
}

void ExecEvents::unwatch(int pid)
{
	uint32_t key = uint32_t(pid);
	bpf_map_delete_elem(bpf_map__fd(skel_->maps.watched), &key);
}

} // namespace usdtprof
