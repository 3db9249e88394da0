// CPU time the hypervisor took from this machine's CPUs ("steal", the 8th
// field of /proc/stat's "cpu" line): on a virtual machine it is counted in
// usdtprof's on-CPU time of a thread it was taken from (wall-clock minus
// time switched out), while the thread's own CPU clock leaves it out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace usdtprof {

// The steal of all CPUs since boot, in nanoseconds, from /proc/stat's text
// (ticks of clock_ticks per second); nullopt when the line is not there.
std::optional<uint64_t> parse_host_steal_ns(const std::string &proc_stat, long clock_ticks);
// The same, read now; nullopt when /proc/stat cannot be read.
std::optional<uint64_t> host_steal_ns();

} // namespace usdtprof
