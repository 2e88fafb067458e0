// The least time a piece of work can take on a machine: its FLOPs at peak compute or its bytes at
// peak bandwidth, whichever is longer. One definition for the session's impossible-time verdict and
// the roofline position of a result (src/calibrate/roofline.cpp), so the two cannot drift apart.
#pragma once

#include <algorithm>

namespace opbench {

struct RoofTime {
  double compute_s = 0;  // flops / peak FLOP/s (0: no compute roof known)
  double memory_s = 0;   // bytes / peak B/s (0: no memory roof known)
  double seconds() const { return std::max(compute_s, memory_s); }
  bool compute_bound() const { return compute_s >= memory_s; }
};

inline RoofTime time_at_roofs(double flops, double bytes, double peak_flops_per_s, double peak_bytes_per_s) {
  return {peak_flops_per_s > 0 ? flops / peak_flops_per_s : 0, peak_bytes_per_s > 0 ? bytes / peak_bytes_per_s : 0};
}

}  // namespace opbench
