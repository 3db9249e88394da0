// One self-contained HTML page (report --format html, diff --format html):
// the viewer's script and style (userspace/report/html/, embedded at build time) and
// the data as JSON, all inline, so the file opens from disk with no network.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace usdtprof {

// The page titled `title` with `data` (its "kind" says which view: "report"
// or "diff"). Text from profiled processes must already be escaped for display
// (escape_text): the script shows it with textContent only, and the data sits
// in a <script type="application/json"> with every '<' written as \u003c.
std::string html_page(const std::string &title, const nlohmann::ordered_json &data);

} // namespace usdtprof
