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
  // The correct point with the highest speedup, if any.
  std::optional<StoredPoint> best(const StoreKey& key);

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace opbench
