// One evaluated implementation: what was run, how it ended, and what was measured. JSON (schema
// "opbench.result", schema_version from core/json_io.h) is the source of truth; tables are views of
// it, and reading a result back loses nothing (result -> JSON -> result -> JSON is byte-identical).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.h"

namespace opbench {

inline constexpr const char* kResultSchema = "opbench.result";

// untrusted: every output checked was right, but the harness saw the kernel game the measurement
// (work left running after ob_run returned, time that depends on seeing inputs again); the message
// says what. It counts as a failure everywhere.
// harness_error: the harness could not finish the evaluation (the baseline did not build, the
// baseline's worker died, an internal error); the message says what. It says nothing about the
// kernel, and `opbench run` exits 3 when any entry has it.
enum class Status { correct, incorrect, compile_error, runtime_error, timeout, rejected, untrusted, harness_error };
std::string_view status_name(Status s);
Status parse_status(std::string_view name);

struct ImplInfo {
  std::string kind;  // reference, baseline, expert, candidate
  std::string path;
  std::string sha256;
};

struct CorrectnessInfo {
  int trials = 0, passed = 0;
  double max_abs_err = 0, max_rel_err = 0;
  size_t mismatches = 0, non_finite = 0, elements_checked = 0;
  double atol = 0, rtol = 0;
  std::string reason;  // empty when correct
};

struct TimingInfo {
  Summary per_call_ms;          // candidate, parent's clock, per-call time of each batch
  size_t calls = 0, batches = 0;
  double worker_median_ms = 0;  // the same batches by the worker's clock
  double parent_over_worker = 0;  // median over batches of parent/worker time
  Summary baseline_per_call_ms;
  size_t baseline_calls = 0;
  double seconds = 0;           // wall time of the timing phase
  size_t calls_per_batch = 0;   // both sides, every pair
  std::string stop_reason;      // "precision" or "time_cap"
  size_t outlier_pairs = 0;     // pairs left out of the speedup estimate as disturbed
  std::vector<std::string> flags;
};

// What the harness checked beyond the outputs of the correctness trials (see docs/integrity.md).
struct IntegrityInfo {
  size_t calls_verified = 0;          // candidate calls whose outputs were checked (trials, timed, fresh)
  size_t batches_watched = 0;         // batches after which the idle worker's CPU clock was watched
  double max_idle_cpu_ms = -1;        // most CPU the candidate's worker used in a watch window
  double fresh_over_repeat = 0;       // candidate: per-call time on never-seen inputs / on seen inputs (fastest round of each)
  double baseline_fresh_over_repeat = 0;  // the same for the baseline
  std::string fresh_check;            // passed, failed, inconclusive: why, skipped: why
  size_t input_sets = 0;              // sets rotated through; every timed pair refills its sets
  double roofline_floor_ms = 0;       // the floor the median was held against (0: no ceilings known)
  double worker_cpu_s = -1;           // candidate worker's CPU time measured from outside (-1: not measured)
  double baseline_worker_cpu_s = -1;  // the same for the baseline's worker (a kernel cannot inflate it: it is frozen while idle)
  double cpu_over_threads_wall = -1;  // candidate CPU / (threads x wall time inside its requests); > 1: more threads than given
  double timed_cpu_over_threads_wall = -1;  // the same over the faster half of the timed batches: what the thread-use check judges
  int worker_cpus = 0;                // CPUs the candidate's worker was pinned to (0: not enforced)
  std::vector<std::string> checks_not_run;  // guards this target or machine could not apply, and why
};

struct SpeedupInfo {
  double vs_baseline = 0, ci95_low = 0, ci95_high = 0;  // Hodges-Lehmann estimate of the paired ratios and its 95% interval
  double median_ratio = 0;                               // baseline median / candidate median
  size_t pairs = 0;
  // ok; imprecise (the time cap came first: read the interval); unreliable (the measurement
  // contradicts itself: clocks disagree, faster than the roofline floor). Rankings and geomeans
  // leave out unreliable speedups.
  std::string standing = "ok";
  std::string standing_reason;
};

struct WorkInfo {
  double flops = 0, useful_flops = 0, bytes = 0;
  double gflops_per_s = 0, gbytes_per_s = 0, intensity = 0;
  // The least work any input of the workload's data law needs (equal to useful_flops and bytes
  // unless the work depends on drawn values): what the roofline floor is made of. Negative: not
  // given (the useful work then).
  double floor_flops = -1, floor_bytes = -1;
};

// Where a result sits under the machine's roofline (src/calibrate/roofline.h computes it from a
// machine profile). Absent when no profile was at hand.
struct RooflineInfo {
  std::string profile_id;           // the machine profile the roofs come from
  int threads = 0;                  // the thread count whose roofs were used
  double peak_gflops = 0, peak_gbytes_per_s = 0;  // the roofs at those threads
  double intensity = 0;             // work.flops / work.bytes: as written (FLOP per byte)
  double useful_intensity = 0;      // work.useful_flops / work.bytes
  double roof_ms = 0;               // max(bytes / peak bandwidth, useful FLOPs / peak FLOP/s)
  double fraction = 0;              // roof_ms / measured median (NaN without timing): the share of the roofline
  double floor_ms = 0;              // the same for the least work any input needs (floor_flops, floor_bytes):
                                    // no honest kernel is faster; equal to roof_ms unless work depends on drawn values
  std::string bound;                // "compute" or "memory": which roof sets the floor
  std::vector<std::string> flags;   // "below_roofline_floor": measured faster than the machine allows
};

// The accelerator a result was measured on (cuda), as nvbench reports it beside each figure: the
// device, whether L2 was flushed before every call, and the SM clock and throttle reasons read
// after each of the candidate's timed batches. Absent on the cpu target.
struct DeviceInfo {
  std::string name, driver;
  bool l2_flushed = true;
  double sm_clock_max_mhz = 0;     // the device's maximum
  double sm_clock_min_mhz = 0;     // lowest reading after a timed batch (0: not read)
  double sm_clock_median_mhz = 0;
  std::string throttle;            // reasons seen during timing, in words; empty: none
};

struct Result {
  std::string workload, size, target;
  std::string isa;  // the target's instruction-set level (cpu: x86-64-v3, x86-64-v4, native); empty: none
  nlohmann::json shape;  // resolved shape symbols
  ImplInfo impl;
  Status status = Status::runtime_error;
  std::string message;  // one line: why a result is not correct
  CorrectnessInfo correctness;
  std::optional<TimingInfo> timing;
  std::optional<SpeedupInfo> speedup;
  WorkInfo work;
  int threads = 0;
  nlohmann::json machine;
  double build_s = 0, eval_s = 0;
  bool build_cached = false;
  std::string compiler, build_log, kernel_output, sandbox;
  IntegrityInfo integrity;
  std::string timestamp;
  std::string opbench_version;  // the program that measured it; empty: this one
  std::optional<RooflineInfo> roofline;
  std::optional<DeviceInfo> device;
};

nlohmann::json to_json(const Result& r);
// Throws SchemaError (core/json_io.h) for a document of another kind or major version.
Result result_from_json(const nlohmann::json& j);

// The version of this program: project version and the git commit it was built from.
std::string opbench_version();

}  // namespace opbench
