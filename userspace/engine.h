// The loaded BPF engine: owns the skeleton and every link (RAII).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "result.h"
#include "usdtprof/bpf_shared.h"

struct usdtprof_bpf;
struct bpf_link;

namespace usdtprof {

struct LinkDeleter {
	void operator()(bpf_link *link) const;
};
using LinkPtr = std::unique_ptr<bpf_link, LinkDeleter>;

struct PathRecord {
	uint64_t path = 0;
	usdtprof_path_stats stats{};
};

class Engine {
public:
	// Opens and loads the programs, sizing the aggregation map, and attaches
	// the thread-exit hook.
	static Result<std::unique_ptr<Engine>> load(uint32_t max_paths);
	~Engine();
	Engine(const Engine &) = delete;
	Engine &operator=(const Engine &) = delete;

	// Index of a probe spec for the uprobe cookie; identical specs share one.
	Result<uint32_t> add_spec(const usdtprof_probe_spec &spec);
	// Attaches the entry or exit program (per spec role) to one site, for pid
	// only, raising the site's semaphore while attached.
	Result<void> attach_site(int pid, const std::string &binary, uint64_t pc_offset,
				 uint64_t semaphore_offset, uint32_t spec_index);
	// Detaches the probes in the reverse order of attachment.
	void detach_probes();
	size_t attached_probes() const { return probe_links_.size(); }
	// Charges frames still open on every thread up to now, as open activations.
	Result<void> flush_open_frames();

	std::vector<PathRecord> read_paths() const;
	std::array<uint64_t, USDTPROF_ANOM_COUNT> anomalies() const;

private:
	Engine() = default;

	usdtprof_bpf *skel_ = nullptr;
	LinkPtr exit_hook_;
	std::vector<LinkPtr> probe_links_;
	std::vector<usdtprof_probe_spec> specs_;
};

} // namespace usdtprof
