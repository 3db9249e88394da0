#include "profile/anomalies.h"

#include <stdexcept>
#include <string>

namespace usdtprof {

namespace {

const Anomaly kAnomalies[] = {
	{USDTPROF_ANOM_EXIT_MISMATCH, "exit_mismatch", "exit did not match the top frame; frames were popped"},
	{USDTPROF_ANOM_EXIT_NO_FRAME, "exit_no_frame",
	 "exit with no matching frame: entered before attach, under [running at attach]"},
	{USDTPROF_ANOM_DEPTH_OVERFLOW, "depth_overflow", "calls beyond the tracked depth (128), counted under [truncated]"},
	{USDTPROF_ANOM_AGG_FULL, "agg_full", "calls whose path found no slot in the call-path table: charged to [other]"},
	{USDTPROF_ANOM_DROPPED_NS, "dropped_ns", "nanoseconds lost: no slot even for an [other] frame"},
	{USDTPROF_ANOM_NO_STORAGE, "no_storage", "per-thread stack could not be allocated"},
	{USDTPROF_ANOM_LOST_EVENTS, "lost_events", "trace events lost: the ring buffer was full"},
	{USDTPROF_ANOM_WINDOW_EXITS, "window_exits",
	 "exits of frames counted open when a sampling window closed, not counted again"},
	{USDTPROF_ANOM_AGG_LATE, "agg_late",
	 "of agg_full, calls that found no slot while the call-path table was still growing, not full"},
};
static_assert(std::size(kAnomalies) == USDTPROF_ANOM_COUNT, "one row per enum usdtprof_anomaly");

} // namespace

std::span<const Anomaly> anomaly_table() { return kAnomalies; }

const char *anomaly_name(int id)
{
	if (id < 0 || id >= USDTPROF_ANOM_COUNT || kAnomalies[id].id != id)
		throw std::out_of_range("anomaly counter " + std::to_string(id) + " has no row in the table");
	return kAnomalies[id].name;
}

const char *anomaly_description(const std::string &name)
{
	for (const Anomaly &a : kAnomalies)
		if (name == a.name)
			return a.description;
	if (name == kHostStealNs)
		return "ns of CPU time the hypervisor took from this machine's CPUs while recording (all CPUs, "
		       "10 ms steps); on a KVM guest the part taken from profiled threads is their off-CPU time, "
		       "elsewhere it stays in their on-CPU time";
	return nullptr;
}

} // namespace usdtprof
