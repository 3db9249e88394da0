#include "engine.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "usdtprof.skel.h"

namespace usdtprof {

void LinkDeleter::operator()(bpf_link *link) const
{
	bpf_link__destroy(link);
}

namespace {

std::string errno_text(int err)
{
	return std::strerror(err < 0 ? -err : err);
}

} // namespace

Result<std::unique_ptr<Engine>> Engine::load(uint32_t max_paths)
{
	std::unique_ptr<Engine> engine(new Engine());
	engine->skel_ = usdtprof_bpf__open();
	if (!engine->skel_)
		return Error{"cannot open BPF programs: " + errno_text(errno)};
	bpf_map__set_max_entries(engine->skel_->maps.paths, max_paths);
	if (int err = usdtprof_bpf__load(engine->skel_)) {
		std::string why = errno_text(err);
		if (err == -EPERM || err == -EACCES)
			why += " (usdtprof must run as root)";
		return Error{"cannot load BPF programs: " + why};
	}
	engine->exit_hook_.reset(bpf_program__attach(engine->skel_->progs.flush_exiting_thread));
	if (!engine->exit_hook_)
		return Error{"cannot attach the thread-exit hook: " + errno_text(errno)};
	return engine;
}

Engine::~Engine()
{
	detach_probes();
	exit_hook_.reset();
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

Result<void> Engine::attach_site(int pid, const std::string &binary, uint64_t pc_offset,
				 uint64_t semaphore_offset, uint32_t spec_index)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = semaphore_offset, .bpf_cookie = spec_index);
	const bpf_program *prog = specs_.at(spec_index).role == USDTPROF_ROLE_ENTRY
					  ? skel_->progs.usdt_entry
					  : skel_->progs.usdt_exit;
	LinkPtr link(bpf_program__attach_uprobe_opts(prog, pid, binary.c_str(), pc_offset, &opts));
	if (!link)
		return Error{"cannot attach to " + binary + ": " + errno_text(errno)};
	probe_links_.push_back(std::move(link));
	return {};
}

void Engine::detach_probes()
{
	while (!probe_links_.empty())
		probe_links_.pop_back();
}

Result<void> Engine::flush_open_frames()
{
	LinkPtr link(bpf_program__attach_iter(skel_->progs.flush_open_frames, nullptr));
	if (!link)
		return Error{"cannot attach the flush iterator: " + errno_text(errno)};
	int fd = bpf_iter_create(bpf_link__fd(link.get()));
	if (fd < 0)
		return Error{"cannot run the flush iterator: " + errno_text(errno)};
	char buf[256];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	int err = errno;
	close(fd);
	if (n < 0)
		return Error{"flush iterator failed: " + errno_text(err)};
	return {};
}

std::vector<PathRecord> Engine::read_paths() const
{
	std::vector<PathRecord> out;
	int fd = bpf_map__fd(skel_->maps.paths);
	uint64_t key, next;
	uint64_t *prev = nullptr;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		PathRecord rec;
		rec.path = next;
		if (bpf_map_lookup_elem(fd, &next, &rec.stats) == 0)
			out.push_back(rec);
		key = next;
		prev = &key;
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
