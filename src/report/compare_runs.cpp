#include "report/compare_runs.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

namespace opbench {

using nlohmann::json;

namespace {

bool has_interval(const Result* r) {
  return r && r->status == Status::correct && r->speedup && r->speedup->ci95_low > 0 && r->speedup->ci95_high > 0;
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

std::vector<ResultDelta> compare_results(const std::vector<Result>& a, const std::vector<Result>& b) {
  std::map<std::pair<std::string, std::string>, ResultDelta> by_key;
  std::vector<std::pair<std::string, std::string>> order;
  auto slot = [&](const Result& r) -> ResultDelta& {
    auto key = std::make_pair(r.workload, r.impl.kind);
    auto [it, inserted] = by_key.try_emplace(key);
    if (inserted) {
      order.push_back(key);
      it->second.workload = r.workload;
      it->second.impl = r.impl.kind;
    }
    return it->second;
  };
  for (const auto& r : a) slot(r).a = &r;
  for (const auto& r : b) slot(r).b = &r;
  std::vector<ResultDelta> out;
  for (const auto& key : order) {
    ResultDelta d = by_key.at(key);
    d.speedup_ratio = d.time_ratio = NAN;
    if (!d.a) d.verdict = "only in B";
    else if (!d.b) d.verdict = "only in A";
    else if (d.a->status != d.b->status) d.verdict = "status changed";
    else if (!has_interval(d.a) || !has_interval(d.b)) d.verdict = "not timed";
    else {
      d.speedup_ratio = d.b->speedup->vs_baseline / d.a->speedup->vs_baseline;
      if (d.a->timing && d.b->timing && d.a->timing->per_call_ms.median > 0)
        d.time_ratio = d.b->timing->per_call_ms.median / d.a->timing->per_call_ms.median;
      if (d.b->speedup->ci95_low > d.a->speedup->ci95_high) d.verdict = "faster";
      else if (d.b->speedup->ci95_high < d.a->speedup->ci95_low) d.verdict = "slower";
      else d.verdict = "same";
    }
    out.push_back(std::move(d));
  }
  return out;
}

ReportTable compare_table(const std::vector<ResultDelta>& deltas, const std::string& label_a, const std::string& label_b) {
  ReportTable t;
  t.title = "Comparison: " + label_a + " -> " + label_b;
  t.columns = {"workload", "impl", "status A", "status B", "speedup A", "A ci95", "speedup B", "B ci95", "speedup change %", "median change %",
               "significant", "verdict"};
  auto interval = [](const Result* r) -> json {
    if (!r || !r->speedup) return nullptr;
    return fmt::format("[{:.3f}, {:.3f}]", r->speedup->ci95_low, r->speedup->ci95_high);
  };
  for (const auto& d : deltas) {
    t.rows.push_back({d.workload, d.impl, d.a ? json(std::string(status_name(d.a->status))) : json(nullptr),
                      d.b ? json(std::string(status_name(d.b->status))) : json(nullptr),
                      d.a && d.a->speedup ? number(d.a->speedup->vs_baseline) : json(nullptr), interval(d.a),
                      d.b && d.b->speedup ? number(d.b->speedup->vs_baseline) : json(nullptr), interval(d.b),
                      number(100 * (d.speedup_ratio - 1)), number(100 * (d.time_ratio - 1)),
                      d.verdict == "faster" || d.verdict == "slower" || d.verdict == "status changed", d.verdict});
  }
  t.notes.push_back("significant: the two 95% intervals of the paired speedup do not overlap (or the status changed).");
  return t;
}

}  // namespace opbench
