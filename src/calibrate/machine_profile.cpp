#include "calibrate/machine_profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/json_io.h"
#include "core/machine.h"
#include "targets/registry.h"
#include "harness/result.h"

namespace opbench {

using nlohmann::json;

namespace {

const ThreadPeaks* nearest_row(const std::vector<ThreadPeaks>& rows, int threads) {
  const ThreadPeaks* best = nullptr;
  for (const auto& r : rows)
    if (!best || std::abs(r.threads - threads) < std::abs(best->threads - threads)) best = &r;
  return best;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

}  // namespace

// A device profile (usable_cores 0) has one row, the device's, whatever the host's thread count.
bool MachineProfile::has_threads(int t) const {
  if (usable_cores == 0 && per_threads.size() == 1) return true;
  return std::any_of(per_threads.begin(), per_threads.end(), [t](const ThreadPeaks& r) { return r.threads == t; });
}

double MachineProfile::peak_gflops(int t) const {
  if (usable_cores == 0 && per_threads.size() == 1) return per_threads[0].fma_gflops;
  const ThreadPeaks* row = nearest_row(per_threads, t);
  if (!row || row->threads <= 0) return NAN;
  return row->threads == t ? row->fma_gflops : row->fma_gflops * double(t) / double(row->threads);
}

double MachineProfile::peak_gbytes_per_s(int t) const {
  const ThreadPeaks* row = nearest_row(per_threads, t);
  return row ? row->dram.best() : NAN;
}

std::string profile_fingerprint(const std::string& target, const std::string& cpu_model, int usable_cores,
                                const std::string& isa_level, int threads) {
  const std::string key = fmt::format("{}|{}|{}|{}|{}", target, cpu_model, usable_cores, isa_level, threads);
  // Readable prefix for people listing the folder; the hash makes it unique.
  return fmt::format("{}-{}-{}c-t{}-{:016x}", target, isa_level, usable_cores, threads, xxh3_64(key.data(), key.size()));
}

json to_json(const MachineProfile& p) {
  json rows = json::array();
  for (const auto& r : p.per_threads) {
    json row = {{"threads", r.threads}, {"fma_gflops", r.fma_gflops},
                {"dram_gbytes_per_s", {{"read", r.dram.read}, {"copy", r.dram.copy}, {"triad", r.dram.triad}}}};
    if (r.cpu_share >= 0) row["cpu_share"] = r.cpu_share;
    rows.push_back(row);
  }
  json caches = json::array();
  for (const auto& c : p.caches)
    caches.push_back({{"level", c.level}, {"cache_bytes", c.cache_bytes}, {"working_set_bytes", c.working_set_bytes},
                      {"read_gbytes_per_s", c.read_gbps}});
  json doc = {{"id", p.id},
              {"target", p.target},
              {"cpu", p.cpu_model},
              {"usable_cores", p.usable_cores},
              {"isa_level", p.isa_level},
              {"threads", p.threads},
              {"quick", p.quick},
              {"hostname", p.hostname},
              {"created", p.created},
              {"seconds", p.seconds},
              {"opbench_version", p.opbench_version},
              {"per_threads", rows},
              {"caches", caches}};
  if (p.fp32_gflops > 0) doc["fp32_gflops"] = p.fp32_gflops;
  return stamp_schema(doc, kMachineProfileSchema);
}

MachineProfile profile_from_json(const json& j, const std::string& where) {
  check_schema(j, kMachineProfileSchema, where);
  MachineProfile p;
  try {
    p.id = j.at("id");
    p.target = j.at("target");
    p.cpu_model = j.at("cpu");
    p.usable_cores = j.at("usable_cores");
    p.isa_level = j.at("isa_level");
    p.threads = j.at("threads");
    p.quick = j.value("quick", false);
    p.hostname = j.value("hostname", "");
    p.created = j.value("created", "");
    p.seconds = j.value("seconds", 0.0);
    p.opbench_version = j.value("opbench_version", "");
    p.fp32_gflops = j.value("fp32_gflops", 0.0);
    for (const auto& r : j.at("per_threads")) {
      const json& d = r.at("dram_gbytes_per_s");
      p.per_threads.push_back({r.at("threads"), r.at("fma_gflops"), {d.at("read"), d.at("copy"), d.at("triad")}, r.value("cpu_share", -1.0)});
    }
    for (const auto& c : j.value("caches", json::array()))
      p.caches.push_back({c.at("level"), c.at("cache_bytes"), c.at("working_set_bytes"), c.at("read_gbytes_per_s")});
  } catch (const json::exception& e) {
    throw std::invalid_argument(fmt::format("{}: malformed machine profile: {}", where, e.what()));
  }
  if (p.per_threads.empty()) throw std::invalid_argument(where + ": machine profile without measurements");
  std::sort(p.per_threads.begin(), p.per_threads.end(), [](auto& a, auto& b) { return a.threads < b.threads; });
  return p;
}

std::filesystem::path profile_dir() {
  if (const char* env = std::getenv("OPBENCH_PROFILE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "opbench" / "profiles";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "opbench" / "profiles";
  return "/tmp/opbench-cache/profiles";
}

std::filesystem::path profile_path(const std::filesystem::path& dir, const MachineProfile& p) { return dir / (p.id + ".json"); }

void save_profile(const std::filesystem::path& dir, const MachineProfile& p) {
  std::filesystem::create_directories(dir);
  write_json_atomic(profile_path(dir, p), to_json(p));
}

std::optional<MachineProfile> load_profile_by_id(const std::filesystem::path& dir, const std::string& id) {
  // An id names a file in the folder: refuse anything that could step outside it.
  if (id.empty() || id.find('/') != std::string::npos || id.find("..") != std::string::npos) return std::nullopt;
  const auto path = dir / (id + ".json");
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    return profile_from_json(read_json_document(path, kMachineProfileSchema), path.string());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<MachineProfile> find_profile(const std::filesystem::path& dir, const std::string& target, const std::string& isa_level,
                                           int threads) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  const MachineInfo& m = machine_info();
  const TargetInfo& info = target_info(target);
  const std::string model = info.device_model ? info.device_model() : m.cpu_model;
  const int cores = info.device_model ? 0 : m.logical_cpus;
  std::optional<MachineProfile> best;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    MachineProfile p;
    try {
      p = profile_from_json(read_json_document(entry.path(), kMachineProfileSchema), entry.path().string());
    } catch (const std::exception&) {
      continue;  // another version's file, or half of a file someone else is writing: not ours
    }
    if (p.target != target || p.isa_level != isa_level || p.cpu_model != model || p.usable_cores != cores ||
        !p.has_threads(threads))
      continue;
    // A quick first-use calibration from before the figures rested on CPU clocks (no cpu_share) may
    // have been measured beside other work on wall clocks alone: half the FMA peak on a busy 2-core
    // machine, which doubled roofline floors and flagged honest baselines. It is measured again.
    if (p.quick && target == "cpu" && std::any_of(p.per_threads.begin(), p.per_threads.end(), [](const ThreadPeaks& r) { return r.cpu_share < 0; }))
      continue;
    const bool better = !best || (best->quick && !p.quick) || (best->quick == p.quick && p.created > best->created);
    if (better) best = std::move(p);
  }
  return best;
}

std::vector<int> calibration_thread_counts(int threads, bool quick) {
  threads = std::max(1, threads);
  std::vector<int> counts;
  if (quick) {
    counts = {1};
  } else {
    for (int t = 1; t <= threads; t = t < 8 ? t + 1 : t * 2) counts.push_back(t);
  }
  if (counts.back() != threads) counts.push_back(threads);
  counts.erase(std::remove_if(counts.begin(), counts.end(), [&](int t) { return t > threads; }), counts.end());
  return counts;
}

// An accelerator target measures its own device (TargetInfo::measure_peaks).
MachineProfile calibrate_device(const CalibrateOptions& o, const TargetInfo& info, const std::function<void(const std::string&)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const DevicePeaks d = info.measure_peaks(o.quick, progress);
  const MachineInfo& m = machine_info();
  MachineProfile p;
  p.target = o.target;
  p.cpu_model = d.model;
  p.usable_cores = 0;
  p.isa_level = o.isa_level;
  p.threads = 1;
  p.quick = o.quick;
  p.hostname = m.hostname;
  p.created = utc_now();
  p.opbench_version = opbench_version();
  p.id = profile_fingerprint(p.target, p.cpu_model, p.usable_cores, p.isa_level, p.threads);
  ThreadPeaks row;
  row.threads = 1;
  row.fma_gflops = d.compute_gflops;
  row.dram.read = row.dram.copy = row.dram.triad = d.bandwidth_gbps;
  p.per_threads.push_back(row);
  p.fp32_gflops = d.fp32_gflops;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

MachineProfile calibrate(const CalibrateOptions& o, const std::function<void(const std::string&)>& progress) {
  if (const TargetInfo& info = target_info(o.target); info.measure_peaks) return calibrate_device(o, info, progress);
  // A device target calibrates through its TargetInfo::measure_peaks (cuda does); the FMA and DRAM
  // loops below measure this host's CPU, which is the cpu target's machine and no other's.
  if (o.target != "cpu")
    throw std::invalid_argument(fmt::format("target {} declares no peak measurement (TargetInfo::measure_peaks), and the host's CPU "
                                            "figures would not describe it",
                                            o.target));
  if (!isa_level_supported(o.isa_level))
    throw std::invalid_argument(fmt::format("this CPU cannot run ISA level {} (or opbench does not know it)", o.isa_level));
  const auto start = std::chrono::steady_clock::now();
  const MachineInfo& m = machine_info();
  MachineProfile p;
  p.target = o.target;
  p.cpu_model = m.cpu_model;
  p.usable_cores = m.logical_cpus;
  p.isa_level = o.isa_level;
  p.threads = o.threads > 0 ? o.threads : m.logical_cpus;
  p.quick = o.quick;
  p.hostname = m.hostname;
  p.created = utc_now();
  p.opbench_version = opbench_version();
  p.id = profile_fingerprint(p.target, p.cpu_model, p.usable_cores, p.isa_level, p.threads);
  const PeakOptions peaks = o.quick ? PeakOptions::quick(o.isa_level) : PeakOptions{o.isa_level};
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  for (int t : calibration_thread_counts(p.threads, o.quick)) {
    ThreadPeaks row;
    row.threads = t;
    say(fmt::format("{} thread(s): fp32 FMA peak", t));
    std::vector<double> shares;
    row.fma_gflops = measure_fma_gflops(t, peaks, &shares);
    say(fmt::format("{} thread(s): memory bandwidth (read, copy, triad)", t));
    row.dram = measure_bandwidth(t, peaks, &shares);
    std::nth_element(shares.begin(), shares.begin() + ptrdiff_t(shares.size() / 2), shares.end());
    row.cpu_share = shares.empty() ? -1 : shares[shares.size() / 2];
    p.per_threads.push_back(row);
  }
  if (peaks.cache_levels) {
    say("read bandwidth from each cache level, 1 thread");
    p.caches = measure_cache_bandwidth(peaks);
  }
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

MachineProfile ensure_profile(const std::string& target, const std::string& isa_level, int threads,
                              const std::function<void(const std::string&)>& progress) {
  const auto dir = profile_dir();
  if (auto stored = find_profile(dir, target, isa_level, threads)) return *stored;
  if (progress) progress(fmt::format("no machine profile for {} threads at {} yet: calibrating quickly (opbench calibrate measures more)", threads, isa_level));
  MachineProfile p = calibrate({target, isa_level, threads, true}, progress);
  for (const auto& row : p.per_threads)
    if (progress && row.cpu_share >= 0 && row.cpu_share < 0.9)
      progress(fmt::format("other work ran beside it ({} thread(s) had {:.0f}% of the cores): timed on the threads' CPU clocks; "
                           "`opbench calibrate` on a quiet machine measures figures of record",
                           row.threads, 100 * row.cpu_share));
  try {
    save_profile(dir, p);
  } catch (const std::exception& e) {
    // A read-only cache is no reason to fail an evaluation: the profile still serves this run.
    if (progress) progress(fmt::format("could not store the machine profile: {}", e.what()));
  }
  return p;
}

}  // namespace opbench
