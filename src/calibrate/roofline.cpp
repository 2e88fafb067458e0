#include "calibrate/roofline.h"

#include <algorithm>
#include <cmath>

#include "harness/roof_time.h"

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
  // GFLOP/s and GB/s are 1e9 per second; the times are in ms.
  const RoofTime roof = time_at_roofs(w.useful_flops, w.bytes, f.peak_gflops * 1e9, f.peak_gbytes_per_s * 1e9);
  f.roof_ms = roof.seconds() * 1e3;
  f.bound = roof.compute_bound() ? "compute" : "memory";
  // The floor is the least work any input needs (older results carry none: the useful work), the
  // same figure the session's impossible-time verdict uses.
  const double floor_flops = w.floor_flops >= 0 ? w.floor_flops : w.useful_flops;
  const double floor_bytes = w.floor_bytes >= 0 ? w.floor_bytes : w.bytes;
  f.floor_ms = time_at_roofs(floor_flops, floor_bytes, f.peak_gflops * 1e9, f.peak_gbytes_per_s * 1e9).seconds() * 1e3;
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
