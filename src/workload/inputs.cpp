#include "workload/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"

namespace opbench {
namespace {

double standard_normal(uint64_t seed, uint64_t i) {
  // Box-Muller on two counter-based uniforms.
  double u1 = uniform_open01(seed, 2 * i), u2 = uniform_open01(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Value of element i for each distribution; all element-wise so chunks can run in parallel.
using ElementFn = double (*)(const ResolvedInit&, const TensorInstance&, uint64_t seed, uint64_t i);

double normal(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t i) {
  return p.param("mean", 0.0) + p.param("std", 1.0) * standard_normal(seed, i);
}

double uniform(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t i) {
  double lo = p.param("low", 0.0), hi = p.param("high", 1.0);
  return lo + (hi - lo) * uniform_open01(seed, i);
}

// N(0,1) times a per-row factor ρ, log-uniform in [scale_low, scale_high]; a row is one index of
// the first `row_dims` dimensions.
double row_scaled_normal(const ResolvedInit& p, const TensorInstance& t, uint64_t seed, uint64_t i) {
  int row_dims = int(p.param("row_dims", double(t.shape.size() - 1)));
  uint64_t row_len = 1;
  for (size_t d = size_t(row_dims); d < t.shape.size(); ++d) row_len *= uint64_t(t.shape[d]);
  uint64_t row = i / row_len;
  double lo = std::log(p.param("scale_low", 1e-2)), hi = std::log(p.param("scale_high", 1e2));
  double rho = std::exp(lo + (hi - lo) * uniform_open01(derive_seed(seed, 0x524F57), row));
  return rho * standard_normal(seed, i);
}

struct Distribution {
  const char* name;
  ElementFn fn;
};

const Distribution kDistributions[] = {
    {"normal", normal},
    {"uniform", uniform},
    {"row_scaled_normal", row_scaled_normal},
};

}  // namespace

const char* const* known_distributions() {
  static const char* names[] = {"normal", "uniform", "row_scaled_normal", nullptr};
  return names;
}

void fill_input(void* data, const TensorInstance& tensor, uint64_t seed, int threads) {
  ElementFn fn = nullptr;
  for (const auto& d : kDistributions)
    if (tensor.init.dist == d.name) fn = d.fn;
  if (!fn) throw SpecError(fmt::format("input {}: unknown distribution '{}'", tensor.name, tensor.init.dist));
  const uint64_t n = tensor.numel();
  const DType dtype = tensor.dtype;
  auto work = [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) {
      double v = fn(tensor.init, tensor, seed, i);
      if (dtype == DType::f32) {
        static_cast<float*>(data)[i] = float(v);
      } else if (dtype == DType::i32) {
        static_cast<int32_t*>(data)[i] = int32_t(std::lround(v));
      } else {  // bf16, round to nearest even
        float f = float(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        bits += 0x7FFF + ((bits >> 16) & 1);
        static_cast<uint16_t*>(data)[i] = uint16_t(bits >> 16);
      }
    }
  };
  // Plain threads, not OpenMP: an OpenMP pool in the parent would keep spinning on a core that the
  // worker process needs while it is being timed.
  int t = std::max(1, std::min<int>(threads, int(n / 65536) + 1));
  if (t == 1) {
    work(0, n);
    return;
  }
  std::vector<std::thread> pool;
  for (int k = 0; k < t; ++k) pool.emplace_back(work, n * uint64_t(k) / uint64_t(t), n * uint64_t(k + 1) / uint64_t(t));
  for (auto& th : pool) th.join();
}

}  // namespace opbench
