#include "calibrate/roofline.h"

#include <algorithm>
#include <cmath>

namespace opbench {

RooflinePosition roofline_position(const Result& r, const MachineProfile& profile) {
  RooflinePosition f;
  f.profile_id = profile.id;
  f.threads = r.threads > 0 ? r.threads : profile.threads;
  f.peak_gflops = profile.peak_gflops(f.threads);
  f.peak_gbytes_per_s = profile.peak_gbytes_per_s(f.threads);
  const WorkInfo& w = r.work;
  f.intensity = w.bytes > 0 ? w.flops / w.bytes : NAN;
  f.useful_intensity = w.bytes > 0 ? w.useful_flops / w.bytes : NAN;
  // Seconds -> ms: GFLOP/s and GB/s are 1e9 per second.
  auto at_roofs = [&](double flops, double bytes, bool* compute_bound) {
    const double compute_ms = f.peak_gflops > 0 ? flops / (f.peak_gflops * 1e9) * 1e3 : 0;
    const double memory_ms = f.peak_gbytes_per_s > 0 ? bytes / (f.peak_gbytes_per_s * 1e9) * 1e3 : 0;
    if (compute_bound) *compute_bound = compute_ms >= memory_ms;
    return std::max(compute_ms, memory_ms);
  };
  bool compute_bound = true;
  f.roof_ms = at_roofs(w.useful_flops, w.bytes, &compute_bound);
  f.bound = compute_bound ? "compute" : "memory";
  // The floor is the least work any input needs (older results carry none: the useful work).
  const double floor_flops = w.floor_flops >= 0 ? w.floor_flops : w.useful_flops;
  const double floor_bytes = w.floor_bytes >= 0 ? w.floor_bytes : w.bytes;
  f.floor_ms = at_roofs(floor_flops, floor_bytes, nullptr);
  f.fraction = NAN;
  if (r.timing && r.timing->per_call_ms.median > 0 && std::isfinite(r.timing->per_call_ms.median) && f.floor_ms > 0) {
    const double measured = r.timing->per_call_ms.median;
    f.fraction = f.roof_ms / measured;
    if (measured < f.floor_ms * kBelowFloorMargin) f.flags.push_back(kBelowRooflineFloor);
  }
  return f;
}

bool attach_roofline(Result& r, const MachineProfile& profile) {
  r.roofline = roofline_position(r, profile);
  const auto& flags = r.roofline->flags;
  return std::find(flags.begin(), flags.end(), kBelowRooflineFloor) != flags.end();
}

}  // namespace opbench
