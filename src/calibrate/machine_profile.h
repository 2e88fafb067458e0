// A machine profile: the measured ceilings (FMA peak per thread count, memory bandwidth) of one
// machine for one target and ISA level, stored as JSON ("opbench.machine_profile") under
// $OPBENCH_PROFILE_DIR or ~/.cache/opbench/profiles/, named by a fingerprint of what the figures
// depend on: target, CPU model, usable cores, ISA level and the most threads measured.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/peaks.h"

namespace opbench {

inline constexpr const char* kMachineProfileSchema = "opbench.machine_profile";
inline constexpr const char* kDefaultIsaLevel = "x86-64-v3";

struct ThreadPeaks {
  int threads = 0;
  double fma_gflops = 0;   // fp32
  BandwidthFigures dram;   // GB/s
  // The share of the cores the measuring threads got, the median of the repetitions (1: the machine
  // was theirs; below, other work ran beside them and the figures rest on their CPU clocks). -1: not
  // recorded (older files).
  double cpu_share = -1;
};

struct MachineProfile {
  std::string id;  // the fingerprint
  // cpu_model: the machine the figures are of (on an accelerator target, the device's name).
  std::string target = "cpu", cpu_model, isa_level = kDefaultIsaLevel, hostname, created, opbench_version;
  int usable_cores = 0;
  int threads = 0;      // the most threads measured (part of the key)
  bool quick = false;   // a short first-use calibration rather than `opbench calibrate`
  double seconds = 0;   // how long calibrating took
  std::vector<ThreadPeaks> per_threads;  // ascending thread counts
  std::vector<CacheBandwidth> caches;    // single-thread reads from each cache level (may be empty)
  // Accelerator targets: per_threads holds one row (threads 1) whose FMA figure is the compute roof
  // (cuda: bf16 tensor-core GEMM) and whose bandwidth is device memory; this is plain fp32 FMA.
  double fp32_gflops = 0;

  // The roofs at `threads`: the measured row when there is one; otherwise the nearest measured row,
  // its FMA peak scaled by threads / measured threads (FMA units are per core) and its bandwidth
  // kept (bandwidth saturates with few cores).
  double peak_gflops(int threads) const;
  double peak_gbytes_per_s(int threads) const;  // the best of read, copy and triad
  bool has_threads(int threads) const;
};

std::string profile_fingerprint(const std::string& target, const std::string& cpu_model, int usable_cores,
                                const std::string& isa_level, int threads);

nlohmann::json to_json(const MachineProfile& p);
// Throws SchemaError (wrong kind or major version) or std::invalid_argument (missing fields).
MachineProfile profile_from_json(const nlohmann::json& j, const std::string& where = "machine profile");

// $OPBENCH_PROFILE_DIR, else $XDG_CACHE_HOME/opbench/profiles, else ~/.cache/opbench/profiles.
std::filesystem::path profile_dir();
std::filesystem::path profile_path(const std::filesystem::path& dir, const MachineProfile& p);
void save_profile(const std::filesystem::path& dir, const MachineProfile& p);
std::optional<MachineProfile> load_profile_by_id(const std::filesystem::path& dir, const std::string& id);
// A stored profile of this machine (CPU model, usable cores), target and ISA level that measured
// `threads`: full calibrations before quick ones, then the newest. Unreadable files are skipped.
std::optional<MachineProfile> find_profile(const std::filesystem::path& dir, const std::string& target,
                                           const std::string& isa_level, int threads);

struct CalibrateOptions {
  std::string target = "cpu";
  std::string isa_level = kDefaultIsaLevel;
  int threads = 0;      // the most threads (0: all usable cores)
  bool quick = false;   // first-use calibration: few thread counts, short loops, no cache levels
};
// Measures this machine; `progress` (optional) hears one line per step.
MachineProfile calibrate(const CalibrateOptions& options, const std::function<void(const std::string&)>& progress = {});
// The thread counts a calibration measures: 1..N up to 8, then powers of two and N; quick: 1 and N.
std::vector<int> calibration_thread_counts(int threads, bool quick);

// The stored profile for `threads`, or a quick calibration saved for next time (first use).
MachineProfile ensure_profile(const std::string& target, const std::string& isa_level, int threads,
                              const std::function<void(const std::string&)>& progress = {});

}  // namespace opbench
