#include "workload/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"
#include "workload/generators.h"

namespace opbench {
namespace {

// Element-wise distributions fill a range [begin, end) of the tensor's elements in doubles; values
// depend only on (seed, element index), so ranges can be filled by any thread in any order.
using RangeFn = void (*)(const ResolvedInit&, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out);

// Box-Muller on counter-based uniforms: elements 2k and 2k+1 share one pair (cos and sin halves).
inline double standard_normal(uint64_t seed, uint64_t i) {
  const uint64_t pair = i >> 1;
  const double radius = std::sqrt(-2.0 * std::log(uniform_open01(seed, 2 * pair)));
  const double angle = 6.283185307179586 * uniform_open01(seed, 2 * pair + 1);
  return radius * ((i & 1) ? std::sin(angle) : std::cos(angle));
}

void fill_normals(uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  uint64_t i = begin;
  if (i < end && (i & 1)) *out++ = standard_normal(seed, i++);
  for (; i + 1 < end; i += 2) {
    const uint64_t pair = i >> 1;
    const double radius = std::sqrt(-2.0 * std::log(uniform_open01(seed, 2 * pair)));
    const double angle = 6.283185307179586 * uniform_open01(seed, 2 * pair + 1);
    *out++ = radius * std::cos(angle);
    *out++ = radius * std::sin(angle);
  }
  if (i < end) *out++ = standard_normal(seed, i);
}

void normal(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  fill_normals(seed, begin, end, out);
  const double mean = p.param("mean", 0.0), std = p.param("std", 1.0);
  for (uint64_t i = 0; i < end - begin; ++i) out[i] = mean + std * out[i];
}

void uniform(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const double lo = p.param("low", 0.0), hi = p.param("high", 1.0);
  for (uint64_t i = begin; i < end; ++i) *out++ = lo + (hi - lo) * uniform_open01(seed, i);
}

// Integers uniform in [low, high], inclusive.
void uniform_int(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const double lo = p.param("low", 0.0), hi = p.param("high", 1.0);
  for (uint64_t i = begin; i < end; ++i) *out++ = std::min(hi, std::floor(lo + (hi - lo + 1) * uniform_open01(seed, i)));
}

// 1 with probability p, else 0 (masks).
void bernoulli(const ResolvedInit& p, const TensorInstance&, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const double prob = p.param("p", 0.5);
  for (uint64_t i = begin; i < end; ++i) *out++ = uniform_open01(seed, i) < prob ? 1.0 : 0.0;
}

// start, start + step, ...
void iota(const ResolvedInit& p, const TensorInstance&, uint64_t, uint64_t begin, uint64_t end, double* out) {
  const double start = p.param("start", 0.0), step = p.param("step", 1.0);
  for (uint64_t i = begin; i < end; ++i) *out++ = start + step * double(i);
}

// N(0,1) times a per-row factor ρ, log-uniform in [scale_low, scale_high]; a row is one index of
// the first `row_dims` dimensions.
void row_scaled_normal(const ResolvedInit& p, const TensorInstance& t, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  const int row_dims = int(p.param("row_dims", double(t.shape.size() - 1)));
  uint64_t row_len = 1;
  for (size_t d = size_t(row_dims); d < t.shape.size(); ++d) row_len *= uint64_t(t.shape[d]);
  const double lo = std::log(p.param("scale_low", 1e-2)), hi = std::log(p.param("scale_high", 1e2));
  fill_normals(seed, begin, end, out);
  uint64_t row = ~0ull;
  double rho = 0;
  for (uint64_t i = begin; i < end; ++i) {
    if (i / row_len != row) {
      row = i / row_len;
      rho = std::exp(lo + (hi - lo) * uniform_open01(derive_seed(seed, 0x524F57), row));
    }
    out[i - begin] *= rho;
  }
}

// For a tensor (..., R, C): element (..., r, c) is a normal that depends only on (..., r − c), like a
// learned relative-position bias table t[h, i − j] broadcast to a dense (H, S, S) tensor.
void toeplitz_normal(const ResolvedInit& p, const TensorInstance& t, uint64_t seed, uint64_t begin, uint64_t end, double* out) {
  if (t.shape.size() < 2) throw SpecError(fmt::format("input {}: toeplitz_normal needs at least 2 dimensions", t.name));
  const uint64_t R = uint64_t(t.shape[t.shape.size() - 2]), C = uint64_t(t.shape.back());
  const double mean = p.param("mean", 0.0), std = p.param("std", 1.0);
  for (uint64_t i = begin; i < end; ++i) {
    const uint64_t prefix = i / (R * C), r = (i / C) % R, c = i % C;
    *out++ = mean + std * standard_normal(seed, prefix * (R + C) + (r + C - c));
  }
}

struct ElementDistribution {
  DistributionInfo info;
  RangeFn fn;
};

const ElementDistribution kElementDistributions[] = {
    {{"normal", "mean, std", "Gaussian"}, normal},
    {{"uniform", "low, high", "uniform on [low, high)"}, uniform},
    {{"uniform_int", "low, high", "integers uniform on [low, high]"}, uniform_int},
    {{"bernoulli", "p", "1 with probability p, else 0"}, bernoulli},
    {{"iota", "start, step", "start + step·i"}, iota},
    {{"row_scaled_normal", "row_dims, scale_low, scale_high",
      "N(0,1) times a per-row factor, log-uniform in [scale_low, scale_high]"}, row_scaled_normal},
    {{"toeplitz_normal", "mean, std", "element (..., i, j) depends only on (..., i - j)"}, toeplitz_normal},
};

// Whole-tensor generators of integer metadata (see generators.h); they see the set seed so that
// tensors of one scenario agree.
std::vector<int32_t> whole_tensor(const TensorInstance& t, uint64_t set_seed, uint64_t stream_seed) {
  const ResolvedInit& p = t.init;
  const int64_t n = int64_t(t.numel());
  auto need = [&](const char* name) {
    auto it = p.params.find(name);
    if (it == p.params.end()) throw SpecError(fmt::format("input {}: {} needs parameter '{}'", t.name, p.dist, name));
    return it->second;
  };
  if (p.dist == "permutation") return random_permutation(n, stream_seed);
  if (p.dist == "partition")
    return ragged_partition(n, int64_t(need("total")), int64_t(p.param("empty", 0)), p.param("skew", 1.0), stream_seed);
  if (p.dist == "lengths_with_edges")
    return lengths_with_edges(n, int64_t(need("low")), int64_t(need("high")), int64_t(need("edge")), stream_seed);
  if (p.dist == "ragged_batch") {
    RaggedBatch b = ragged_batch(int64_t(need("tokens")), int64_t(need("slots")), int64_t(need("max_kv")), int64_t(need("page_size")),
                                 int64_t(need("chunk")), int64_t(p.param("pad_tokens", 0)), derive_seed(set_seed, 0x7261676765));
    const int field = int(need("field"));  // 0: kv_lens, 1: cu_q_lens, 2: num_seqs
    std::vector<int32_t> v = field == 0 ? b.kv_lens : field == 1 ? b.cu_q_lens : std::vector<int32_t>{b.num_seqs};
    if (int64_t(v.size()) != n)
      throw SpecError(fmt::format("input {}: ragged_batch field {} has {} values, the tensor {}", t.name, field, v.size(), n));
    return v;
  }
  throw SpecError(fmt::format("input {}: unknown distribution '{}'", t.name, p.dist));
}

const std::vector<DistributionInfo> kWholeTensorInfo = {
    {"permutation", "", "a random permutation of 0..numel-1 (page tables)"},
    {"partition", "total, empty, skew", "group sizes summing to total, skewed, with `empty` zero groups"},
    {"lengths_with_edges", "low, high, edge", "lengths uniform in [low, high] including low, edge, edge+1, high"},
    {"ragged_batch", "field, tokens, slots, max_kv, page_size, chunk, pad_tokens",
     "one ragged paged-attention batch; field 0 kv_lens, 1 cu_q_lens, 2 num_seqs"},
};

void store(void* data, uint64_t offset, const double* values, uint64_t count, DType dtype) {
  for (uint64_t i = 0; i < count; ++i) {
    const double v = values[i];
    if (dtype == DType::f32) {
      static_cast<float*>(data)[offset + i] = float(v);
    } else if (dtype == DType::i32) {
      static_cast<int32_t*>(data)[offset + i] = int32_t(std::lround(v));
    } else {  // bf16, round to nearest even
      float f = float(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      bits += 0x7FFF + ((bits >> 16) & 1);
      static_cast<uint16_t*>(data)[offset + i] = uint16_t(bits >> 16);
    }
  }
}

}  // namespace

const std::vector<DistributionInfo>& known_distributions() {
  static const std::vector<DistributionInfo> all = [] {
    std::vector<DistributionInfo> v;
    for (const auto& d : kElementDistributions) v.push_back(d.info);
    v.insert(v.end(), kWholeTensorInfo.begin(), kWholeTensorInfo.end());
    return v;
  }();
  return all;
}

namespace {

RangeFn element_fn(const TensorInstance& tensor) {
  for (const auto& d : kElementDistributions)
    if (tensor.init.dist == d.info.name) return d.fn;
  return nullptr;
}

}  // namespace

bool element_wise(const TensorInstance& tensor) { return element_fn(tensor) != nullptr; }

void fill_input(void* data, const TensorInstance& tensor, uint64_t set_seed, size_t tensor_index, int threads) {
  if (element_wise(tensor)) return fill_input_range(data, tensor, set_seed, tensor_index, 0, tensor.numel(), threads);
  const uint64_t seed = derive_seed(set_seed, tensor_index + 1);
  std::vector<int32_t> values = whole_tensor(tensor, set_seed, seed);
  std::vector<double> as_double(values.begin(), values.end());
  store(data, 0, as_double.data(), tensor.numel(), tensor.dtype);
}

void fill_input_range(void* data, const TensorInstance& tensor, uint64_t set_seed, size_t tensor_index, uint64_t first, uint64_t last,
                      int threads) {
  const uint64_t seed = derive_seed(set_seed, tensor_index + 1);
  const RangeFn fn = element_fn(tensor);
  if (!fn) throw std::logic_error("fill_input_range: " + tensor.name + " is not drawn element by element");
  const uint64_t n = last - first;
  // Element b of the tensor goes to data[b - first].
  auto work = [&](uint64_t begin, uint64_t end) {
    std::vector<double> chunk(4096);
    for (uint64_t b = begin; b < end; b += chunk.size()) {
      const uint64_t e = std::min<uint64_t>(end, b + chunk.size());
      fn(tensor.init, tensor, seed, first + b, first + e, chunk.data());
      store(data, b, chunk.data(), e - b, tensor.dtype);
    }
  };
  // Plain threads, not OpenMP: an OpenMP pool in the parent would keep spinning on a core that the
  // worker process needs while it is being timed.
  const int t = std::max(1, std::min<int>(threads, int(n / 65536) + 1));
  if (t == 1) {
    work(0, n);
    return;
  }
  std::vector<std::thread> pool;
  for (int k = 0; k < t; ++k) pool.emplace_back(work, n * uint64_t(k) / uint64_t(t), n * uint64_t(k + 1) / uint64_t(t));
  for (auto& th : pool) th.join();
}

}  // namespace opbench
