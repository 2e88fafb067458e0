// The parameter tuner: searches a kernel's declared parameter space (search/params.h), each point a
// full harness evaluation, with every result kept in the ResultStore so that no point is measured
// twice and an interrupted run resumes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/evaluate.h"
#include "search/params.h"
#include "search/result_store.h"

namespace opbench {

struct TuneOptions {
  std::string strategy = "beam";  // exhaustive | beam | random
  int budget = 0;                 // most new measurements (0: no limit)
  double time_s = 0;              // stop starting new measurements after this long (0: no limit)
  int beam_width = 3;
  uint64_t random_seed = 1;
  EvalOptions eval;
};

struct TunedPoint {
  ParamPoint point;
  StoredPoint result;
  bool cached = false;  // served from the store, not measured in this run
};

struct TuneOutcome {
  std::vector<TunedPoint> visited;  // in the order visited
  size_t measured = 0, cached = 0;
  double seconds = 0;
  std::string stop_reason;  // space exhausted, budget, time
  ParamPoint default_point;        // the source's defaults: the incumbent a winner must beat
  // The winner by choose_winner (result_store.h): the default unless another point's interval lies
  // wholly above it.
  std::optional<TunedPoint> best() const;
};

TuneOutcome tune(const WorkloadSpec& spec, const Implementation& kernel, Target& target, ResultStore& store,
                 const TuneOptions& options, const std::function<void(const TunedPoint&, const TuneOutcome&)>& on_point = {});

// The built-in implementation `kind` of `spec`, with the best stored parameter point for this
// machine, size and source when there is one (`opbench run --impl expert` uses this).
Implementation tuned_builtin(const WorkloadSpec& spec, const std::string& kind, const std::string& size, int threads,
                             ResultStore* store, std::string* note, const std::string& isa = {}, const std::string& extension = ".cpp");

}  // namespace opbench
