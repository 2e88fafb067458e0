// What a report shows, gathered from results in memory or from saved JSON (a run folder, result
// files, search folders). Every reporter (console, JSON, CSV, Markdown, HTML) renders one of these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/machine_profile.h"
#include "harness/result.h"
#include "search/beam_search.h"

namespace opbench {

// A table a command adds beyond the results (tune's points, a leaderboard): cells are JSON values so
// that numbers stay numbers in JSON and CSV and sort as numbers in HTML.
struct ReportTable {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
  std::vector<std::string> notes;
};

struct SearchIteration {
  int iteration = 0;
  size_t evaluated = 0, correct = 0;  // candidates evaluated in this iteration
  double best_speedup = 0;            // best correct speedup found up to and including it
};

struct SearchWorkloadReport {
  SearchSummary summary;
  std::vector<SearchIteration> iterations;  // iteration 0: translation (and the start kernel)
};

struct SearchRunReport {
  std::string label, dir, proposer;
  std::vector<SearchWorkloadReport> workloads;
};

struct ReportData {
  std::string title = "opbench report";
  std::vector<Result> results;
  std::optional<MachineProfile> profile;
  std::vector<SearchRunReport> searches;
  std::vector<ReportTable> tables;
};

// Loads what `opbench report` is given: a run folder (results.json) or its results.json, single
// result JSON files, search folders (run.json, or one workload's folder with state.json). Throws
// UsageError naming a path that is none of these. Results without a roofline block get one when a
// profile is found (in the run's results.json, or by the results' profile id in profile_dir()).
ReportData load_report_inputs(const std::vector<std::string>& paths);

// One search output folder: run.json with each workload's summary, state.json for the iterations,
// and the best candidate's result (labelled impl kind "candidate") added to `results` when present.
SearchRunReport load_search_run(const std::filesystem::path& dir, std::vector<Result>* results);

// Leaderboard rows over the workloads all runs share (the same metrics as `opbench leaderboard`).
ReportTable search_leaderboard(const std::vector<SearchRunReport>& runs);

// The scoreboard as a table: one row per result, numbers as numbers.
ReportTable results_table(const std::vector<Result>& results);

// Geomean speedups (correct only, failures as 1.0), correct count and fast_p for each
// implementation kind present and for all results together, as JSON.
nlohmann::json summary_by_kind(const std::vector<Result>& results);

}  // namespace opbench
