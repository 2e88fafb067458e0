#include "search/tuner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/rng.h"

namespace opbench {
namespace {


// Every point of the space, in odometer order starting from the first declared values.
std::vector<ParamPoint> all_points(const std::vector<TunableParam>& params) {
  std::vector<ParamPoint> out;
  std::vector<size_t> index(params.size(), 0);
  for (;;) {
    ParamPoint p;
    for (size_t i = 0; i < params.size(); ++i) p[params[i].name] = params[i].values[index[i]];
    out.push_back(p);
    size_t i = 0;
    while (i < params.size() && ++index[i] == params[i].values.size()) index[i++] = 0;
    if (i == params.size()) break;
  }
  return out;
}

// Points that differ from `p` in one parameter, by one step in its declared order.
std::vector<ParamPoint> neighbours(const ParamPoint& p, const std::vector<TunableParam>& params) {
  std::vector<ParamPoint> out;
  for (const auto& param : params) {
    auto at = std::find(param.values.begin(), param.values.end(), p.at(param.name)) - param.values.begin();
    for (long step : {-1L, 1L}) {
      long j = long(at) + step;
      if (j < 0 || j >= long(param.values.size())) continue;
      ParamPoint q = p;
      q[param.name] = param.values[size_t(j)];
      out.push_back(q);
    }
  }
  return out;
}

}  // namespace

std::optional<TunedPoint> TuneOutcome::best() const {
  std::vector<StoredPoint> points;
  for (const auto& v : visited) points.push_back(v.result);
  const auto winner = choose_winner(points, default_point);
  if (!winner) return std::nullopt;
  for (const auto& v : visited)
    if (v.point == winner->point) return v;
  return std::nullopt;
}

TuneOutcome tune(const WorkloadSpec& spec, const Implementation& kernel, Target& target, ResultStore& store,
                 const TuneOptions& options, const std::function<void(const TunedPoint&, const TuneOutcome&)>& on_point) {
  const std::string source = read_file(kernel.source);
  const std::vector<TunableParam> params = parse_tunable_params(source);
  if (params.empty())
    throw UsageError(fmt::format("{} declares no tunable parameters (lines like `// opbench:param TILE 32 64 128`)", kernel.source.string()));
  const int threads = options.eval.threads > 0 ? options.eval.threads : default_thread_count();
  const StoreKey key{ResultStore::machine_key(threads, options.eval.isa), spec.id, options.eval.size, sha256_hex(source)};

  TuneOutcome out;
  out.default_point = default_point(params);
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> seen;
  auto out_of_budget = [&] {
    if (options.budget > 0 && out.measured >= size_t(options.budget)) return out.stop_reason = "budget", true;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.time_s > 0 && elapsed >= options.time_s) return out.stop_reason = "time", true;
    return false;
  };
  // Visits one point: from the store when it is there, else measured (if the budget allows).
  auto visit = [&](const ParamPoint& p) -> const TunedPoint* {
    if (!seen.insert(point_key(p)).second) return nullptr;
    TunedPoint t{p, {}, false};
    if (auto stored = store.find(key, p)) {
      t.result = *stored;
      t.cached = true;
      ++out.cached;
    } else {
      if (out_of_budget()) return nullptr;
      Implementation impl = kernel;
      impl.defines.assign(p.begin(), p.end());
      Result r = evaluate(spec, impl, target, options.eval);
      store.put(key, p, r);
      t.result = *store.find(key, p);
      ++out.measured;
    }
    out.visited.push_back(t);
    if (on_point) on_point(out.visited.back(), out);
    return &out.visited.back();
  };

  if (options.strategy == "exhaustive" || options.strategy == "random") {
    std::vector<ParamPoint> order = all_points(params);
    if (options.strategy == "random") {
      // Fisher-Yates with the counter-based generator; the defaults always come first.
      for (size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[size_t(uniform_open01(options.random_seed, i) * double(i))]);
      auto d = std::find(order.begin(), order.end(), default_point(params));
      std::rotate(order.begin(), d, d + 1);
    }
    for (const auto& p : order) {
      visit(p);
      if (!out.stop_reason.empty()) break;
    }
  } else if (options.strategy == "beam") {
    // Start from the defaults; repeatedly expand the best `beam_width` correct points by one step in
    // one parameter, until no expansion finds an unvisited point.
    visit(default_point(params));
    for (;;) {
      std::vector<const TunedPoint*> ranked;
      for (const auto& v : out.visited)
        if (v.result.status == Status::correct) ranked.push_back(&v);
      std::sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) { return a->result.speedup > b->result.speedup; });
      if (ranked.size() > size_t(options.beam_width)) ranked.resize(size_t(options.beam_width));
      std::vector<ParamPoint> frontier;
      for (const auto* r : ranked)
        for (auto& n : neighbours(r->point, params))
          if (!seen.count(point_key(n))) frontier.push_back(n);
      if (frontier.empty()) break;
      size_t before = out.visited.size();
      for (const auto& p : frontier) {
        visit(p);
        if (!out.stop_reason.empty()) break;
      }
      if (!out.stop_reason.empty() || out.visited.size() == before) break;
    }
  } else {
    throw UsageError(fmt::format("unknown strategy '{}' (use exhaustive, beam or random)", options.strategy));
  }
  if (out.stop_reason.empty()) out.stop_reason = "search complete";
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Implementation tuned_builtin(const WorkloadSpec& spec, const std::string& kind, const std::string& size, int threads,
                             ResultStore* store, std::string* note, const std::string& isa, const std::string& extension) {
  Implementation impl = builtin_implementation(spec, kind, extension);
  if (!store) return impl;
  const std::string source = read_file(impl.source);
  if (parse_tunable_params(source).empty()) return impl;
  const StoreKey key{ResultStore::machine_key(threads, isa), spec.id, size, sha256_hex(source)};
  if (auto best = store->best(key, default_point(parse_tunable_params(source)))) {
    impl.defines.assign(best->point.begin(), best->point.end());
    if (note) *note = "tuned: " + describe_point(best->point);
  } else if (note) {
    *note = "defaults (not tuned on this machine)";
  }
  return impl;
}

}  // namespace opbench
