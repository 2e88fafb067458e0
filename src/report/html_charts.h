// The inline SVG pictures of the HTML report, drawn here in C++ so the page needs no script to show
// them (the script only sorts tables and shows tooltips) and the tests can count what is drawn.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report_data.h"

namespace opbench {

// Text for HTML element content and attribute values: valid UTF-8 (bad bytes become U+FFFD),
// control characters other than tab and line breaks replaced, & < > " ' escaped.
std::string html_escape(std::string_view text);

// Colour of an implementation kind in every chart and legend.
std::string kind_colour(const std::string& kind);

// Log-log roofline: the profile's compute and memory roofs (and cache roofs when measured), one
// <circle class="point"> per timed result (with a <title> naming workload and implementation) and
// an arrow per workload from baseline to candidate to expert. Results that cannot be placed
// (failed, untimed, no work) are listed under the plot.
std::string roofline_svg(const ReportData& data);
// Number of results roofline_svg places as points.
size_t roofline_point_count(const std::vector<Result>& results);

// Speedup over the baseline with its 95% interval, one bar per result with a speedup, log scale
// around 1.
std::string speedup_bars_svg(const std::vector<Result>& results);

// fast_p: share of each kind's results that are correct and faster than p, against p.
std::string fast_p_svg(const std::vector<Result>& results);

// Best correct speedup after each iteration of each workload's search.
std::string search_progress_svg(const SearchRunReport& run);

}  // namespace opbench
