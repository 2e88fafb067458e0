#include "report/reporter.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json_io.h"
#include "core/utf8.h"
#include "report/scoreboard.h"
#include "report/table.h"

namespace opbench {

using nlohmann::json;

const std::vector<std::string>& reporter_formats() {
  static const std::vector<std::string> formats{"console", "json", "csv", "md", "html"};
  return formats;
}

std::unique_ptr<Reporter> make_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<ConsoleReporter>();
  if (format == "json") return std::make_unique<JsonReporter>();
  if (format == "csv") return std::make_unique<CsvReporter>();
  if (format == "md" || format == "markdown") return std::make_unique<MarkdownReporter>();
  if (format == "html") return std::make_unique<HtmlReporter>();
  throw UsageError(fmt::format("unknown report format '{}' (console, json, csv, md, html)", format));
}

std::string cell_text(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return utf8_sanitize(v.get<std::string>());
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) ? fmt::format("{:.4g}", d) : "";
  }
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return dump_json(v, -1);
}

namespace {

std::vector<ReportTable> all_tables(const ReportData& data) {
  std::vector<ReportTable> tables;
  if (!data.results.empty()) tables.push_back(results_table(data.results));
  if (data.searches.size() > 1) tables.push_back(search_leaderboard(data.searches));
  for (const auto& s : data.searches) {
    ReportTable t;
    t.title = "Search " + s.label;
    t.columns = {"workload", "evaluated", "correct", "correctness rate", "best speedup", "expert speedup", "share of expert",
                 "build s", "eval s", "agent s", "tokens", "payback calls", "stop"};
    for (const auto& w : s.workloads) {
      const SearchSummary& m = w.summary;
      t.rows.push_back({m.workload, m.evaluated, m.correct, m.correctness_rate(), m.best_speedup, m.expert_speedup, m.share_of_expert,
                        m.build_s, m.eval_s, m.proposer_s, m.prompt_tokens + m.completion_tokens, m.payback_calls, m.stop_reason});
    }
    tables.push_back(std::move(t));
  }
  tables.insert(tables.end(), data.tables.begin(), data.tables.end());
  return tables;
}

json table_json(const ReportTable& t) {
  json rows = json::array();
  for (const auto& row : t.rows) {
    json o = json::object();
    for (size_t c = 0; c < t.columns.size() && c < row.size(); ++c) o[t.columns[c]] = row[c];
    rows.push_back(o);
  }
  return {{"title", t.title}, {"columns", t.columns}, {"rows", rows}, {"notes", t.notes}};
}

// RFC 4180: quote a field holding a comma, quote or line break; double the quotes inside.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Markdown table cells: a pipe ends a cell and a line break ends the row; HTML in a cell would be
// rendered by GitHub, so angle brackets and ampersands are escaped too.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string ConsoleReporter::render(const ReportData& data) const {
  std::string out;
  if (!data.results.empty()) out += render_scoreboard(data.results);
  auto tables = all_tables(data);
  for (size_t i = data.results.empty() ? 0 : 1; i < tables.size(); ++i) {
    const auto& t = tables[i];
    TextTable text(t.columns);
    for (const auto& row : t.rows) {
      std::vector<std::string> cells;
      for (const auto& v : row) cells.push_back(cell_text(v));
      text.add_row(cells);
    }
    out += fmt::format("{}{}\n{}", out.empty() ? "" : "\n", t.title, text.render());
    for (const auto& n : t.notes) out += n + "\n";
  }
  return out;
}

std::string JsonReporter::render(const ReportData& data) const {
  json doc = {{"title", data.title}, {"summary", summary_by_kind(data.results)}, {"results", json::array()},
              {"machine_profile", data.profile ? to_json(*data.profile) : json(nullptr)}, {"searches", json::array()},
              {"tables", json::array()}};
  for (const auto& r : data.results) doc["results"].push_back(to_json(r));
  for (const auto& s : data.searches) {
    json w = json::array();
    for (const auto& x : s.workloads) {
      json its = json::array();
      for (const auto& it : x.iterations)
        its.push_back({{"iteration", it.iteration}, {"evaluated", it.evaluated}, {"correct", it.correct}, {"best_speedup", it.best_speedup}});
      w.push_back({{"summary", x.summary.to_json()}, {"iterations", its}});
    }
    doc["searches"].push_back({{"label", s.label}, {"dir", s.dir}, {"proposer", s.proposer}, {"workloads", w}});
  }
  for (const auto& t : all_tables(data)) doc["tables"].push_back(table_json(t));
  return dump_json(stamp_schema(doc, "opbench.report")) + "\n";
}

std::string CsvReporter::render(const ReportData& data) const {
  // One table per block, blocks separated by an empty line; a single-table report is plain CSV.
  std::string out;
  for (const auto& t : all_tables(data)) {
    if (!out.empty()) out += "\n";
    std::string line;
    for (const auto& c : t.columns) line += (line.empty() ? "" : ",") + csv_field(c);
    out += line + "\n";
    for (const auto& row : t.rows) {
      line.clear();
      for (size_t c = 0; c < row.size(); ++c) {
        // Full precision in CSV: it is for programs, not eyes.
        const std::string s = row[c].is_number_float() ? (std::isfinite(row[c].get<double>()) ? fmt::format("{}", row[c].get<double>()) : "")
                                                       : cell_text(row[c]);
        line += (c ? "," : "") + csv_field(s);
      }
      out += line + "\n";
    }
  }
  return out;
}

std::string MarkdownReporter::render(const ReportData& data) const {
  std::string out = fmt::format("## {}\n\n", md_cell(data.title));
  if (data.profile)
    out += fmt::format("Machine: {} ({} usable cores, {}), profile `{}`: {:.1f} GFLOP/s fp32 and {:.1f} GB/s at {} thread(s).\n\n",
                       md_cell(data.profile->cpu_model), data.profile->usable_cores, data.profile->isa_level, data.profile->id,
                       data.profile->peak_gflops(data.profile->threads), data.profile->peak_gbytes_per_s(data.profile->threads),
                       data.profile->threads);
  if (!data.results.empty()) {
    const json s = summary_by_kind(data.results);
    for (const auto& [kind, k] : s.at("by_kind").items())
      out += fmt::format("- **{}**: {} of {} correct, geomean speedup {} over correct results, {} with failures as 1.0\n", md_cell(kind),
                         k.at("correct").get<size_t>(), k.at("results").get<size_t>(), cell_text(k.at("geomean_speedup_correct_only")),
                         cell_text(k.at("geomean_speedup_failures_as_one")));
    out += "\n";
  }
  for (const auto& t : all_tables(data)) {
    out += fmt::format("### {}\n\n|", md_cell(t.title));
    for (const auto& c : t.columns) out += " " + md_cell(c) + " |";
    out += "\n|";
    for (size_t c = 0; c < t.columns.size(); ++c) out += " --- |";
    out += "\n";
    for (const auto& row : t.rows) {
      out += "|";
      for (const auto& v : row) out += " " + md_cell(cell_text(v)) + " |";
      out += "\n";
    }
    for (const auto& n : t.notes) out += "\n" + md_cell(n) + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace opbench
