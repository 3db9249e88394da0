// Many profiles read as one: several files, or a monitor's output directory
// cut to a time window, merged exactly (docs/report-json.md "Many profiles").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "base/result.h"

namespace usdtprof {

// The profiles' nodes, functions, processes and probes as one profile: the
// same call path of the same process becomes one node whose calls, open
// calls and times are the sums (processes stay apart by pid); anomaly
// counters add up, durations add up (none at all when a part with call
// paths has none: an older usdtprof's), the start is the earliest and the stop
// the latest. When every part has the same calibration (a monitor's
// intervals) it is kept; otherwise each part is compensated with its own
// before merging (unless raw) and the result has none.
Profile merge_profiles(const std::vector<Profile> &parts, bool raw);

// A per-thread profile (record --per-thread) as if recorded without: its
// thread frames left out, the same call path of the same process in several
// threads one node whose calls, open calls, times and durations are the sums.
Profile merge_threads(const Profile &profile);

// A time the user gave for --since/--until, as Unix nanoseconds: "HH:MM",
// "HH:MM:SS" (local time; the day is chosen from anchor_ns: the latest such
// time at or before it when !after, the first one at or after it when after)
// or "YYYY-MM-DD HH:MM[:SS]" / "YYYY-MM-DDTHH:MM[:SS]" (local time).
Result<int64_t> parse_clock_time(const std::string &text, int64_t anchor_ns, bool after);

// "2026-12-02 10:15:00", local time.
std::string local_time(int64_t unix_ns);

struct ProfileInputs {
	std::vector<std::string> paths; // profile files, or directories of a monitor's usdtprof-*.data
	std::string since, until;       // "" for no bound
	bool raw = false;               // times as measured: merge without compensating
	bool per_thread = false;        // keep a per-thread profile's thread frames; else merged away
};

struct LoadedProfiles {
	Profile profile;
	size_t files = 0;                       // how many were merged
	int64_t first_ns = 0, last_ns = 0;      // the recorded span they cover
};

// Loads and merges: a directory stands for its usdtprof-*.data files; with
// since/until, only profiles whose recorded span [start, stop] overlaps
// [since, until] are kept. One clear error for an unreadable file, an empty
// directory, or a window no profile overlaps; and for per_thread asked of a
// profile not recorded per thread. The result is per_thread only when asked:
// else its thread frames are merged away (merge_threads).
Result<LoadedProfiles> load_profiles(const ProfileInputs &inputs);

} // namespace usdtprof
