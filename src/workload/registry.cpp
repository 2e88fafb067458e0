#include "workload/registry.h"

#include "core/files.h"
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"

#ifndef OPBENCH_SOURCE_DIR
#define OPBENCH_SOURCE_DIR "."
#endif

namespace opbench {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

int id_number(const std::string& id) { return std::atoi(id.c_str()); }

bool by_id_number(const std::string& a, const std::string& b) {
  int na = id_number(a), nb = id_number(b);
  return na != nb ? na < nb : a < b;
}

std::vector<std::string> split_patterns(const std::string& patterns) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= patterns.size()) {
    size_t comma = patterns.find(',', start);
    std::string pattern = patterns.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? patterns.size() + 1 : comma + 1;
    if (!pattern.empty()) out.push_back(pattern);
  }
  return out;
}

bool is_glob(const std::string& pattern) { return pattern.find_first_of("*?[") != std::string::npos; }

// Whether `pattern` (an id, a prefix or a glob) names the workload `id`.
bool names(const std::string& pattern, const std::string& id) {
  if (is_glob(pattern)) return fnmatch(pattern.c_str(), id.c_str(), FNM_CASEFOLD) == 0;
  return lower(id).rfind(lower(pattern), 0) == 0;
}

}  // namespace

std::filesystem::path Registry::default_root() {
  if (const char* env = std::getenv("OPBENCH_WORKLOADS")) return env;
  return source_root() / "workloads";
}

Registry::Registry(std::filesystem::path root) : root_(std::move(root)) {
  if (!std::filesystem::is_directory(root_))
    throw UsageError(fmt::format("workloads folder {} not found (set OPBENCH_WORKLOADS to the suite's workloads/)", root_.string()));
  for (const auto& entry : std::filesystem::directory_iterator(root_)) {
    if (!entry.is_directory() || !std::filesystem::exists(entry.path() / "workload.toml")) continue;
    try {
      workloads_.push_back(load_workload(entry.path()));
    } catch (const std::exception& e) {
      // One bad spec must not take the suite down with it (`list`, `run --workloads all`).
      broken_.push_back({entry.path().filename().string(), entry.path(), e.what()});
    }
  }
  std::sort(workloads_.begin(), workloads_.end(), [](const WorkloadSpec& a, const WorkloadSpec& b) { return by_id_number(a.id, b.id); });
  std::sort(broken_.begin(), broken_.end(), [](const BrokenWorkload& a, const BrokenWorkload& b) { return by_id_number(a.id, b.id); });
}

std::vector<const BrokenWorkload*> Registry::select_broken(const std::string& patterns) const {
  std::vector<const BrokenWorkload*> out;
  const bool everything = patterns.empty() || lower(patterns) == "all";
  for (const auto& b : broken_) {
    bool hit = everything;
    for (const auto& pattern : split_patterns(patterns)) hit = hit || names(pattern, b.id);
    if (hit) out.push_back(&b);
  }
  return out;
}

const WorkloadSpec& Registry::find(const std::string& name) const {
  const std::string want = lower(name);
  std::vector<const WorkloadSpec*> prefix_matches;
  for (const auto& w : workloads_) {
    const std::string id = lower(w.id);
    if (id == want) return w;
    if (id.rfind(want, 0) == 0) prefix_matches.push_back(&w);
  }
  // "8p" must mean 8p_GEMM, not also 8p… ids that merely start with the same digits: prefer
  // matches where the prefix ends at the id's first underscore.
  if (prefix_matches.size() > 1) {
    std::vector<const WorkloadSpec*> exact_number;
    for (const auto* w : prefix_matches)
      if (lower(w->id).substr(0, w->id.find('_')) == want) exact_number.push_back(w);
    if (exact_number.size() == 1) return *exact_number.front();
  }
  if (prefix_matches.size() == 1) return *prefix_matches.front();
  if (prefix_matches.empty())
    for (const auto& b : broken_)
      if (names(name, b.id)) throw UsageError(fmt::format("workload {} cannot be used: its spec is broken: {}", b.id, b.reason));
  if (prefix_matches.empty())
    throw UsageError(fmt::format("no workload matches '{}'; `opbench list` shows the {} workloads", name, workloads_.size()));
  std::string names;
  for (const auto* w : prefix_matches) names += (names.empty() ? "" : ", ") + w->id;
  throw UsageError(fmt::format("'{}' is ambiguous: it matches {}; give more of the name", name, names));
}

std::vector<const WorkloadSpec*> Registry::select(const std::string& patterns) const {
  std::vector<const WorkloadSpec*> out;
  if (patterns.empty() || lower(patterns) == "all") {
    for (const auto& w : workloads_) out.push_back(&w);
    return out;
  }
  for (const std::string& pattern : split_patterns(patterns)) {
    bool names_broken = false;
    for (const auto& b : broken_) names_broken = names_broken || names(pattern, b.id);
    std::vector<const WorkloadSpec*> hits;
    if (is_glob(pattern)) {
      for (const auto& w : workloads_)
        if (fnmatch(pattern.c_str(), w.id.c_str(), FNM_CASEFOLD) == 0) hits.push_back(&w);
      if (hits.empty() && !names_broken) throw UsageError(fmt::format("no workload matches the pattern '{}'", pattern));
    } else {
      bool names_loaded = false;
      for (const auto& w : workloads_) names_loaded = names_loaded || names(pattern, w.id);
      if (names_loaded || !names_broken) hits.push_back(&find(pattern));  // select_broken() reports the rest
    }
    for (const auto* w : hits)
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  std::sort(out.begin(), out.end(), [this](const WorkloadSpec* a, const WorkloadSpec* b) {
    return a - workloads_.data() < b - workloads_.data();
  });
  return out;
}

}  // namespace opbench
