// usdtprof diff BASE NEW: per function and per path, both profiles' calls,
// self and total time, the change, and whether it exceeds the spread the
// data shows (docs/diff.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "report/report.h"

namespace usdtprof {

struct DiffSide {
	uint64_t calls = 0, self_ns = 0, total_ns = 0;
	// Per process that called it: its self time per call (the units whose
	// spread the significance test reads).
	std::vector<double> per_call_ns;
};

enum class DiffStatus { Changed, Appeared, Vanished };

struct DiffRow {
	std::string name;                 // a function, or a path's frames joined by ';'
	std::vector<std::string> stack;   // paths only
	DiffSide base, now;               // now: NEW, scaled with --normalize
	int64_t delta_self_ns = 0, delta_total_ns = 0;
	// The change of self time the processes' medians support: each side's
	// per-call value (as for z) times its calls. Rows are ordered by it, so
	// one process's burst, which moves delta_self_ns, does not reorder them.
	int64_t typical_delta_self_ns = 0;
	double delta_share = 0;           // change of self time's share of the total, percentage points
	DiffStatus status = DiffStatus::Changed;
	// Per-call self time (median over processes), NEW against BASE, over what
	// the rest of the run moved (the median of the other rows' ratios), in
	// units of the spread: |z| >= 3 is significant; nullopt when the data
	// shows no spread to compare with (docs/diff.md).
	std::optional<double> z;
	bool significant = false;
};

struct DiffOptions {
	TimeMode time = TimeMode::Wall;
	bool raw = false;       // times as measured
	bool normalize = false; // NEW scaled so that its total equals BASE's
	size_t limit = 0;       // rows per table, 0: all
};

struct Diff {
	uint64_t base_total_ns = 0, new_total_ns = 0; // sums of self time (before scaling)
	size_t base_units = 0, new_units = 0;         // processes
	// Each profile carries durations (an older usdtprof's does not: its calls
	// are taken to spread as the other's do, relative to their mean).
	bool base_durations = true, new_durations = true;
	// What the run as a whole moved, per table: the median per-call ratio
	// over the rows in both, and its robust spread (1.4826 MAD of the log
	// ratios; 0 under 3 rows).
	struct Run {
		double ratio = 1, spread = 0;
	} functions_run, paths_run;
	std::vector<DiffRow> functions, paths; // significant first, then largest |typical_delta_self_ns|
};

Diff diff_profiles(const Profile &base, const Profile &now, const DiffOptions &options);
std::string render_diff_text(const Diff &diff, const DiffOptions &options);
std::string render_diff_json(const Diff &diff, const DiffOptions &options);
// One self-contained page: the differential flame graph of every path and
// the function table (--limit rows) (docs/html.md; diff_html.cpp).
std::string render_diff_html(const Diff &diff, const DiffOptions &options, const std::string &title);

} // namespace usdtprof
