// pprof's -focus and -ignore on a profile's call paths (regex on function
// names): focus keeps the paths through a matching function, ignore drops the
// paths through one (docs/report-json.md "Filters").
#pragma once

#include <string>

#include "profile/profile.h"
#include "base/result.h"

namespace usdtprof {

// Applied to an already compensated profile (compensation needs every
// child's calls): the result has no calibration, so it is never compensated
// twice. A path's self time is kept when its stack, root to itself, has a
// function matching focus (or focus is empty) and none matching ignore; a
// path kept only because a kept path runs below it keeps its calls, with no
// self time. Totals are recomputed as self plus children's totals. Fails for
// an invalid regex (usage) or when no path is left.
Result<Profile> filter_paths(const Profile &profile, const std::string &focus, const std::string &ignore);

} // namespace usdtprof
