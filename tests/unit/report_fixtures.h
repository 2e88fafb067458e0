// Results and profiles made up for the report, roofline and comparison tests.
#pragma once

#include <string>

#include "calibrate/machine_profile.h"
#include "harness/result.h"

namespace opbench::testing {

// A timed result: `median_ms` per call, speedup `s` with interval [lo, hi], work as given.
inline Result made_result(const std::string& workload, const std::string& kind, double median_ms, double s, double lo, double hi,
                          double useful_flops = 1e9, double bytes = 1e8) {
  Result r;
  r.workload = workload;
  r.size = "test";
  r.target = "cpu";
  r.impl = {kind, "workloads/" + workload + "/" + kind + ".cpp", std::string(64, 'a')};
  r.status = Status::correct;
  r.threads = 2;
  r.work.flops = useful_flops * 1.5;
  r.work.useful_flops = useful_flops;
  r.work.bytes = bytes;
  r.work.intensity = r.work.flops / bytes;
  r.work.gflops_per_s = useful_flops / (median_ms * 1e-3) * 1e-9;
  r.work.gbytes_per_s = bytes / (median_ms * 1e-3) * 1e-9;
  TimingInfo t;
  t.per_call_ms.median = median_ms;
  t.baseline_per_call_ms.median = median_ms * s;
  t.calls = 100;
  t.batches = 10;
  t.stop_reason = "precision";
  r.timing = t;
  r.speedup = SpeedupInfo{s, lo, hi, s, 10};
  r.machine = nlohmann::json::object();
  return r;
}

// 100 GFLOP/s and 10 GB/s per thread... simple numbers: 2 threads give 200 GFLOP/s, 20 GB/s.
inline MachineProfile made_profile() {
  MachineProfile p;
  p.id = "cpu-test-profile";
  p.cpu_model = "Test CPU";
  p.usable_cores = 2;
  p.threads = 2;
  p.created = "2026-12-01T00:00:00Z";
  p.per_threads = {{1, 100, {10, 8, 9}}, {2, 200, {20, 16, 18}}};
  return p;
}

}  // namespace opbench::testing
