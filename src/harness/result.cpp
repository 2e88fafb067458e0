#include "harness/result.h"

#include <cmath>
#include <stdexcept>

#include "core/json_io.h"
#include "core/utf8.h"

#ifndef OPBENCH_VERSION
#define OPBENCH_VERSION "0.0.0"
#endif
#include "opbench_git_sha.h"  // generated at build time (cmake/git_sha.cmake)

namespace opbench {

using nlohmann::json;

namespace {

constexpr std::string_view kStatusNames[] = {"correct", "incorrect", "compile_error", "runtime_error", "timeout", "rejected", "untrusted", "harness_error"};

// JSON has no infinity or NaN: write null for them.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double read_number(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? NAN : it->get<double>();
}

json summary_json(const Summary& s) {
  return {{"median_ms", number(s.median)}, {"mean_ms", number(s.mean)}, {"min_ms", number(s.min)},
          {"max_ms", number(s.max)}, {"stdev_ms", number(s.stdev)}};
}
Summary summary_from(const json& j) {
  Summary s;
  s.median = read_number(j, "median_ms");
  s.mean = read_number(j, "mean_ms");
  s.min = read_number(j, "min_ms");
  s.max = read_number(j, "max_ms");
  s.stdev = read_number(j, "stdev_ms");
  return s;
}

}  // namespace

std::string_view status_name(Status s) { return kStatusNames[int(s)]; }

Status parse_status(std::string_view name) {
  for (size_t i = 0; i < std::size(kStatusNames); ++i)
    if (kStatusNames[i] == name) return Status(i);
  throw std::invalid_argument("unknown status " + std::string(name));
}

std::string opbench_version() { return std::string(OPBENCH_VERSION) + "+" + OPBENCH_GIT_SHA; }

json to_json(const Result& r) {
  json j = stamp_schema(json::object(), kResultSchema);
  j["workload"] = r.workload;
  j["size"] = r.size;
  j["shape"] = r.shape;
  j["target"] = r.target;
  j["isa"] = r.isa;
  j["impl"] = {{"kind", r.impl.kind}, {"path", utf8_sanitize(r.impl.path)}, {"sha256", r.impl.sha256}};
  j["status"] = status_name(r.status);
  j["message"] = utf8_sanitize(r.message);
  const auto& c = r.correctness;
  j["correctness"] = {{"trials", c.trials},
                      {"passed", c.passed},
                      {"max_abs_err", number(c.max_abs_err)},
                      {"max_rel_err", number(c.max_rel_err)},
                      {"mismatches", c.mismatches},
                      {"non_finite", c.non_finite},
                      {"elements_checked", c.elements_checked},
                      {"atol", number(c.atol)},
                      {"rtol", number(c.rtol)},
                      {"reason", c.reason}};
  if (r.timing) {
    const auto& t = *r.timing;
    json timing = summary_json(t.per_call_ms);
    timing["calls"] = t.calls;
    timing["batches"] = t.batches;
    timing["calls_per_batch"] = t.calls_per_batch;
    timing["worker_median_ms"] = number(t.worker_median_ms);
    timing["parent_over_worker"] = number(t.parent_over_worker);
    timing["baseline"] = summary_json(t.baseline_per_call_ms);
    timing["baseline"]["calls"] = t.baseline_calls;
    timing["seconds"] = number(t.seconds);
    timing["stop_reason"] = t.stop_reason;
    timing["outlier_pairs"] = t.outlier_pairs;
    timing["flags"] = t.flags;
    j["timing"] = timing;
  } else {
    j["timing"] = nullptr;
  }
  if (r.speedup) {
    j["speedup"] = {{"vs_baseline", number(r.speedup->vs_baseline)}, {"ci95_low", number(r.speedup->ci95_low)},
                    {"ci95_high", number(r.speedup->ci95_high)},     {"median_ratio", number(r.speedup->median_ratio)},
                    {"pairs", r.speedup->pairs},                     {"standing", r.speedup->standing},
                    {"standing_reason", r.speedup->standing_reason}};
  } else {
    j["speedup"] = nullptr;
  }
  j["work"] = {{"flops", number(r.work.flops)},
               {"useful_flops", number(r.work.useful_flops)},
               {"bytes", number(r.work.bytes)},
               {"gflops_per_s", number(r.work.gflops_per_s)},
               {"gbytes_per_s", number(r.work.gbytes_per_s)},
               {"intensity", number(r.work.intensity)},
               {"floor_flops", number(r.work.floor_flops)},
               {"floor_bytes", number(r.work.floor_bytes)}};
  j["threads"] = r.threads;
  j["machine"] = r.machine;
  j["cost"] = {{"build_s", number(r.build_s)}, {"eval_s", number(r.eval_s)}, {"build_cached", r.build_cached}};
  // Text from outside (compiler logs, kernel output) is repaired here, where it enters the JSON: a
  // log cut inside a character, or a kernel printing bytes, must not make the document invalid.
  j["build"] = {{"compiler", utf8_sanitize(r.compiler)}, {"log", utf8_sanitize(r.build_log)}};
  j["kernel_output"] = utf8_sanitize(r.kernel_output);
  j["sandbox"] = r.sandbox;
  const auto& g = r.integrity;
  j["integrity"] = {{"calls_verified", g.calls_verified},
                    {"batches_watched", g.batches_watched},
                    {"max_idle_cpu_ms", number(g.max_idle_cpu_ms)},
                    {"fresh_over_repeat", number(g.fresh_over_repeat)},
                    {"baseline_fresh_over_repeat", number(g.baseline_fresh_over_repeat)},
                    {"fresh_check", g.fresh_check},
                    {"input_sets", g.input_sets},
                    {"roofline_floor_ms", number(g.roofline_floor_ms)},
                    {"worker_cpu_s", number(g.worker_cpu_s)},
                    {"baseline_worker_cpu_s", number(g.baseline_worker_cpu_s)},
                    {"cpu_over_threads_wall", number(g.cpu_over_threads_wall)},
                    {"timed_cpu_over_threads_wall", number(g.timed_cpu_over_threads_wall)},
                    {"worker_cpus", g.worker_cpus},
                    {"checks_not_run", g.checks_not_run}};
  j["timestamp"] = r.timestamp;
  if (r.roofline) {
    const RooflineInfo& f = *r.roofline;
    j["roofline"] = {{"profile_id", f.profile_id}, {"threads", f.threads}, {"peak_gflops", number(f.peak_gflops)},
                     {"peak_gbytes_per_s", number(f.peak_gbytes_per_s)}, {"intensity", number(f.intensity)},
                     {"useful_intensity", number(f.useful_intensity)}, {"roof_ms", number(f.roof_ms)},
                     {"floor_ms", number(f.floor_ms)}, {"fraction", number(f.fraction)}, {"bound", f.bound}, {"flags", f.flags}};
  }
  if (r.device) {
    const DeviceInfo& d = *r.device;
    j["device"] = {{"name", utf8_sanitize(d.name)}, {"driver", d.driver}, {"l2_flushed", d.l2_flushed},
                   {"sm_clock_max_mhz", number(d.sm_clock_max_mhz)}, {"sm_clock_min_mhz", number(d.sm_clock_min_mhz)},
                   {"sm_clock_median_mhz", number(d.sm_clock_median_mhz)}, {"throttle", d.throttle}};
  }
  j["opbench_version"] = r.opbench_version.empty() ? opbench_version() : r.opbench_version;
  return j;
}

// Reads what to_json writes, field for field: result -> JSON -> result -> JSON is byte-identical.
// Missing optional fields take their defaults, so documents of an older minor version still read.
Result result_from_json(const json& j) {
  check_schema(j, kResultSchema, "result");
  Result r;
  r.workload = j.at("workload");
  r.size = j.at("size");
  r.shape = j.value("shape", json::object());
  r.target = j.at("target");
  r.isa = j.value("isa", "");
  r.impl = {j.at("impl").at("kind"), j.at("impl").at("path"), j.at("impl").at("sha256")};
  r.status = parse_status(j.at("status").get<std::string>());
  r.message = j.value("message", "");
  const json& c = j.at("correctness");
  r.correctness.trials = c.at("trials");
  r.correctness.passed = c.at("passed");
  r.correctness.max_abs_err = read_number(c, "max_abs_err");
  r.correctness.max_rel_err = read_number(c, "max_rel_err");
  r.correctness.mismatches = c.value("mismatches", size_t(0));
  r.correctness.non_finite = c.value("non_finite", size_t(0));
  r.correctness.elements_checked = c.value("elements_checked", size_t(0));
  r.correctness.atol = read_number(c, "atol");
  r.correctness.rtol = read_number(c, "rtol");
  r.correctness.reason = c.value("reason", "");
  if (!j.at("timing").is_null()) {
    TimingInfo t;
    const json& tj = j.at("timing");
    t.per_call_ms = summary_from(tj);
    t.calls = tj.value("calls", size_t(0));
    t.batches = tj.value("batches", size_t(0));
    t.calls_per_batch = tj.value("calls_per_batch", size_t(0));
    t.worker_median_ms = read_number(tj, "worker_median_ms");
    t.parent_over_worker = read_number(tj, "parent_over_worker");
    t.baseline_per_call_ms = summary_from(tj.at("baseline"));
    t.baseline_calls = tj.at("baseline").value("calls", size_t(0));
    t.seconds = read_number(tj, "seconds");
    t.stop_reason = tj.value("stop_reason", "");
    t.outlier_pairs = tj.value("outlier_pairs", size_t(0));
    t.flags = tj.value("flags", std::vector<std::string>{});
    r.timing = t;
  }
  if (!j.at("speedup").is_null()) {
    const json& s = j.at("speedup");
    r.speedup = SpeedupInfo{read_number(s, "vs_baseline"),  read_number(s, "ci95_low"), read_number(s, "ci95_high"),
                            read_number(s, "median_ratio"), s.value("pairs", size_t(0)), s.value("standing", "ok"),
                            s.value("standing_reason", "")};
  }
  const json& w = j.at("work");
  r.work = {read_number(w, "flops"),        read_number(w, "useful_flops"), read_number(w, "bytes"),
            read_number(w, "gflops_per_s"), read_number(w, "gbytes_per_s"), read_number(w, "intensity")};
  // Results written before the floor had its own work (schema 2.0) had none other than the useful work.
  r.work.floor_flops = w.contains("floor_flops") ? read_number(w, "floor_flops") : r.work.useful_flops;
  r.work.floor_bytes = w.contains("floor_bytes") ? read_number(w, "floor_bytes") : r.work.bytes;
  r.threads = j.at("threads");
  r.machine = j.at("machine");
  r.build_s = read_number(j.at("cost"), "build_s");
  r.eval_s = read_number(j.at("cost"), "eval_s");
  r.build_cached = j.at("cost").value("build_cached", false);
  if (j.contains("build")) {
    r.compiler = j.at("build").value("compiler", "");
    r.build_log = j.at("build").value("log", "");
  }
  r.kernel_output = j.value("kernel_output", "");
  r.sandbox = j.value("sandbox", "");
  if (j.contains("integrity")) {
    const json& g = j.at("integrity");
    r.integrity.calls_verified = g.value("calls_verified", size_t(0));
    r.integrity.batches_watched = g.value("batches_watched", size_t(0));
    r.integrity.max_idle_cpu_ms = read_number(g, "max_idle_cpu_ms");
    r.integrity.fresh_over_repeat = read_number(g, "fresh_over_repeat");
    r.integrity.baseline_fresh_over_repeat = read_number(g, "baseline_fresh_over_repeat");
    r.integrity.fresh_check = g.value("fresh_check", "");
    r.integrity.input_sets = g.value("input_sets", size_t(0));
    r.integrity.roofline_floor_ms = read_number(g, "roofline_floor_ms");
    r.integrity.worker_cpu_s = read_number(g, "worker_cpu_s");
    r.integrity.baseline_worker_cpu_s = g.contains("baseline_worker_cpu_s") ? read_number(g, "baseline_worker_cpu_s") : -1;
    r.integrity.cpu_over_threads_wall = g.contains("cpu_over_threads_wall") ? read_number(g, "cpu_over_threads_wall") : -1;
    r.integrity.timed_cpu_over_threads_wall = g.contains("timed_cpu_over_threads_wall") ? read_number(g, "timed_cpu_over_threads_wall") : -1;
    r.integrity.worker_cpus = g.value("worker_cpus", 0);
    r.integrity.checks_not_run = g.value("checks_not_run", std::vector<std::string>{});
  }
  r.timestamp = j.value("timestamp", "");
  r.opbench_version = j.value("opbench_version", "");
  if (auto it = j.find("roofline"); it != j.end() && it->is_object()) {
    const json& f = *it;
    RooflineInfo info;
    info.profile_id = f.value("profile_id", "");
    info.threads = f.value("threads", 0);
    info.peak_gflops = read_number(f, "peak_gflops");
    info.peak_gbytes_per_s = read_number(f, "peak_gbytes_per_s");
    info.intensity = read_number(f, "intensity");
    info.useful_intensity = read_number(f, "useful_intensity");
    info.floor_ms = read_number(f, "floor_ms");
    info.roof_ms = f.contains("roof_ms") ? read_number(f, "roof_ms") : info.floor_ms;  // schema 2.0: one figure
    info.fraction = read_number(f, "fraction");
    info.bound = f.value("bound", "");
    info.flags = f.value("flags", std::vector<std::string>{});
    r.roofline = info;
  }
  if (auto it = j.find("device"); it != j.end() && it->is_object()) {
    const json& d = *it;
    DeviceInfo info;
    info.name = d.value("name", "");
    info.driver = d.value("driver", "");
    info.l2_flushed = d.value("l2_flushed", true);
    info.sm_clock_max_mhz = read_number(d, "sm_clock_max_mhz");
    info.sm_clock_min_mhz = read_number(d, "sm_clock_min_mhz");
    info.sm_clock_median_mhz = read_number(d, "sm_clock_median_mhz");
    info.throttle = d.value("throttle", "");
    r.device = info;
  }
  return r;
}

}  // namespace opbench
