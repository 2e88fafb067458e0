// The SQLite store of tuning results: one row per (machine, workload, size, source hash, parameter
// point), so no point is measured twice and an interrupted tuning run resumes where it stopped.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/result.h"
#include "search/params.h"

struct sqlite3;

namespace opbench {

struct StoredPoint {
  ParamPoint point;
  Status status = Status::runtime_error;
  double median_ms = 0, speedup = 0, ci95_low = 0, ci95_high = 0;
  std::string result_json;
};

struct StoreKey {
  std::string machine, workload, size, source_sha256;
};

// The point to keep: the default point unless another's 95% interval lies wholly above the
// default's (then the one with the highest speedup among those); without a correct default, the
// highest speedup. Noise cannot crown a winner: two points whose intervals overlap are a tie, and
// a tie keeps the default.
std::optional<StoredPoint> choose_winner(const std::vector<StoredPoint>& points, const ParamPoint& default_point);

class ResultStore {
 public:
  // Opens (creating if needed) the database at `path`.
  explicit ResultStore(const std::filesystem::path& path);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // $OPBENCH_DB, else the cache folder's opbench.sqlite.
  static std::filesystem::path default_path();
  // What identifies "the same machine" for cached timings: CPU model, usable CPUs and threads.
  static std::string machine_key(int threads, const std::string& isa = {});

  std::optional<StoredPoint> find(const StoreKey& key, const ParamPoint& point);
  void put(const StoreKey& key, const ParamPoint& point, const Result& result);
  std::vector<StoredPoint> all(const StoreKey& key);
  // The winner among the correct points (choose_winner), if any.
  std::optional<StoredPoint> best(const StoreKey& key, const ParamPoint& default_point);

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace opbench
