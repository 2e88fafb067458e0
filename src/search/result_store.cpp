#include "search/result_store.h"

#include <sqlite3.h>

#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "core/machine.h"

namespace opbench {
namespace {

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("sqlite: {}: {}", sql, sqlite3_errmsg(db)));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.c_str(), int(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(fmt::format("sqlite: {}", sqlite3_errmsg(db_)));
  }
  std::string text(int col) {
    auto p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int col) { return sqlite3_column_double(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

constexpr const char* kColumns = "params, status, median_ms, speedup, ci95_low, ci95_high, result_json";

StoredPoint read_row(Statement& s) {
  StoredPoint p;
  p.point = point_from_key(s.text(0));
  p.status = parse_status(s.text(1));
  p.median_ms = s.real(2);
  p.speedup = s.real(3);
  p.ci95_low = s.real(4);
  p.ci95_high = s.real(5);
  p.result_json = s.text(6);
  return p;
}

Statement& bind_key(Statement& s, const StoreKey& k) {
  return s.bind(1, k.machine).bind(2, k.workload).bind(3, k.size).bind(4, k.source_sha256);
}

}  // namespace

std::filesystem::path ResultStore::default_path() {
  if (const char* env = std::getenv("OPBENCH_DB"); env && *env) return env;
  if (const char* cache = std::getenv("OPBENCH_CACHE"); cache && *cache) return std::filesystem::path(cache) / "opbench.sqlite";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "opbench" / "opbench.sqlite";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "opbench" / "opbench.sqlite";
  return "/tmp/opbench-cache/opbench.sqlite";
}

// The instruction-set level is part of the machine: a point tuned at x86-64-v3 says nothing about
// the best one at x86-64-v4. Rows written before levels existed (no suffix) were all measured at v3.
std::string ResultStore::machine_key(int threads, const std::string& isa) {
  const MachineInfo& m = machine_info();
  const std::string base = fmt::format("{} | {} cpus | {} threads", m.cpu_model, m.logical_cpus, threads);
  return isa.empty() || isa == "x86-64-v3" ? base : base + " | " + isa;
}

ResultStore::ResultStore(const std::filesystem::path& path) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK)
    throw std::runtime_error(fmt::format("cannot open the result store {}: {}", path.string(), sqlite3_errmsg(db_)));
  sqlite3_busy_timeout(db_, 10000);
  const char* schema = R"(
    CREATE TABLE IF NOT EXISTS tune_results (
      machine TEXT NOT NULL, workload TEXT NOT NULL, size TEXT NOT NULL, source_sha256 TEXT NOT NULL,
      params TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL, speedup REAL, ci95_low REAL,
      ci95_high REAL, result_json TEXT NOT NULL, created TEXT NOT NULL DEFAULT (datetime('now')),
      PRIMARY KEY (machine, workload, size, source_sha256, params));
  )";
  char* error = nullptr;
  if (sqlite3_exec(db_, schema, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown";
    sqlite3_free(error);
    throw std::runtime_error("cannot create the result store schema: " + message);
  }
}

ResultStore::~ResultStore() { sqlite3_close(db_); }

std::optional<StoredPoint> ResultStore::find(const StoreKey& key, const ParamPoint& point) {
  Statement s(db_, fmt::format("SELECT {} FROM tune_results WHERE machine=?1 AND workload=?2 AND size=?3 AND "
                               "source_sha256=?4 AND params=?5", kColumns).c_str());
  bind_key(s, key).bind(5, point_key(point));
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

void ResultStore::put(const StoreKey& key, const ParamPoint& point, const Result& r) {
  Statement s(db_, "INSERT OR REPLACE INTO tune_results (machine, workload, size, source_sha256, params, status, "
                   "median_ms, speedup, ci95_low, ci95_high, result_json) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
  bind_key(s, key).bind(5, point_key(point)).bind(6, std::string(status_name(r.status)));
  s.bind(7, r.timing ? r.timing->per_call_ms.median : 0.0);
  s.bind(8, r.speedup ? r.speedup->vs_baseline : 0.0);
  s.bind(9, r.speedup ? r.speedup->ci95_low : 0.0);
  s.bind(10, r.speedup ? r.speedup->ci95_high : 0.0);
  s.bind(11, to_json(r).dump());
  s.step();
}

std::vector<StoredPoint> ResultStore::all(const StoreKey& key) {
  Statement s(db_, fmt::format("SELECT {} FROM tune_results WHERE machine=?1 AND workload=?2 AND size=?3 AND "
                               "source_sha256=?4 ORDER BY (status = 'correct') DESC, speedup DESC", kColumns).c_str());
  bind_key(s, key);
  std::vector<StoredPoint> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

std::optional<StoredPoint> choose_winner(const std::vector<StoredPoint>& points, const ParamPoint& default_point) {
  const StoredPoint* incumbent = nullptr;
  for (const auto& p : points)
    if (p.status == Status::correct && p.point == default_point) incumbent = &p;
  const StoredPoint* best = nullptr;
  for (const auto& p : points) {
    if (p.status != Status::correct) continue;
    if (incumbent && !(p.ci95_low > incumbent->ci95_high)) continue;  // not separated from the default
    if (!best || p.speedup > best->speedup) best = &p;
  }
  if (best) return *best;
  if (incumbent) return *incumbent;
  return std::nullopt;
}

std::optional<StoredPoint> ResultStore::best(const StoreKey& key, const ParamPoint& default_point) {
  return choose_winner(all(key), default_point);
}

}  // namespace opbench
