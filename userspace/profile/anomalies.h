// The anomaly counters the BPF side keeps (enum usdtprof_anomaly in
// include/usdtprof/bpf_shared.h): one table of their names (the profile's
// keys, docs/profile-format.md) and descriptions (the reports' words), read
// by the engine, the recorder, the monitor and the reports.
#pragma once

#include <span>
#include <string>

#include "usdtprof/bpf_shared.h"

namespace usdtprof {

struct Anomaly {
	usdtprof_anomaly id;
	const char *name;
	const char *description;
};

// One row per counter, in the kernel's order (row i is counter i).
std::span<const Anomaly> anomaly_table();
// The profile's name of counter id; throws std::out_of_range for an id the
// table does not have (no counter goes unnamed, or named as another).
const char *anomaly_name(int id);
// What userspace adds beside the kernel's counters: the hypervisor's steal
// of all CPUs during the recording, in ns (base/host_steal.h).
inline constexpr const char *kHostStealNs = "host_steal_ns";
// The description of a counter's name; nullptr for a name no row has (a
// profile from another version).
const char *anomaly_description(const std::string &name);

} // namespace usdtprof
